"""Exact symbol look-up."""

from codenib.index.symbols import SymbolIndex


def make():
    rows = [
        ("src/click/__init__.py", "file", "src/click/__init__.py", "", "__init__.py"),
        ("src/click/core.py", "file", "src/click/core.py", "", "core.py"),
        ("src/click/core.py::Context", "class", "src/click/core.py", "Context", "Context"),
        ("src/click/core.py::Context.invoke", "method", "src/click/core.py", "Context.invoke", "invoke"),
        ("src/click/core.py::Context.invoke#2", "method", "src/click/core.py", "Context.invoke#2", "invoke"),
        ("src/click/core.py::Outer.Inner.run", "method", "src/click/core.py", "Outer.Inner.run", "run"),
        ("tests/test_core.py::invoke", "function", "tests/test_core.py", "invoke", "invoke"),
    ]
    return SymbolIndex(*[list(c) for c in zip(*rows)])


def ids(idx, s):
    return [(m.row, m.level) for m in idx.lookup(s)]


def test_levels():
    idx = make()
    assert ids(idx, "click.core.Context.invoke") == [(3, "module_qualname"), (4, "module_qualname")]
    assert ids(idx, "Context.invoke") == [(3, "qualname"), (4, "qualname")]
    assert ids(idx, "`invoke`") == [(3, "name"), (4, "name"), (6, "name")]
    assert ids(idx, "Inner.run") == [(5, "qualname_suffix")]
    assert ids(idx, "src/click/core.py") == [(1, "path")]
    assert ids(idx, "click.core") == [(1, "module_qualname")]
    assert ids(idx, "click") == [(0, "module_qualname")]
    assert ids(idx, "CONTEXT") == [(2, "name_nocase")]
    assert ids(idx, "context.INVOKE") == [(3, "qualname_nocase"), (4, "qualname_nocase")]
    assert idx.definitions("invoke") == ("name", 3) and idx.definitions("nothing_here") == (None, 0)
    assert ids(idx, "other.pkg.Context.invoke") == [(3, "qualname_suffix"), (4, "qualname_suffix")]
    assert idx.lookup("") == [] and idx.lookup("nothing_here") == []


def test_a_deeply_dotted_mention_finds_its_suffix_among_the_suffixes_a_qualname_can_be():
    idx = make()
    assert idx.qual_depth == 3       # Outer.Inner.run
    # 30,000 leading parts: only the last three are looked at (joining every suffix would
    # read ~10^9 characters), and the qualified name at the end is still found.
    assert ids(idx, "a." * 30_000 + "Context.invoke") == [(3, "qualname_suffix"), (4, "qualname_suffix")]
    assert ids(idx, "a." * 30_000 + "Outer.Inner.run") == [(5, "qualname_suffix")]
    assert ids(idx, "a." * 30_000 + "b") == []


def test_files_matching_a_mentioned_path():
    idx = make()
    assert idx.files_matching("/venv/lib/python3.11/site-packages/src/click/core.py") == ["src/click/core.py"]
    assert idx.files_matching("click/core.py") == ["src/click/core.py"]
    assert idx.files_matching("__init__.py") == ["src/click/__init__.py"]
    assert idx.files_matching("other/module.py") == [] and idx.files_matching("README.md") == []
