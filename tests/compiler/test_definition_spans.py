"""The readers' spans-only mode (`read_foreign_spans`, `definition_spans`), which `--history`
parses every past version of a file with: the same node ids, spans and order as the full
readers (`read_foreign`, `parse_source`) on the multi-language fixtures and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from codenib.compiler.lang import read_foreign, read_foreign_spans
from codenib.compiler.lang.python_parse import definition_spans, parse_source
from tests.compiler.test_lang_golden import _sources

HERE = Path(__file__).parent
ROOT = HERE.parents[1]

#: Shapes that move a span or a name: attributes above a doc comment (the span starts at the
#: attribute), a trailing comment that ends the doc, folded test modules, repeated names
#: (`#2`), templates, typedef'd structs, `.h` read as C++, TSX, a macro before a namespace.
SPAN_EDGES: dict[str, bytes] = {
    "edge/attrs.rs": b"#[derive(Debug)]\n/// doc\n#[repr(C)]\nstruct S { x: u8 }\n\nfn f() {}\nfn f() {}\n"
                     b"#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() { super::f(); }\n}\n"
                     b"impl S { fn g(&self) {} }\nimpl Tr for S { fn g(&self) {} }\n",
    "edge/trail.c": b"int x = 1; // note\nint f(void) { return x; }\n/* a */\n\n/* b */\nint g(void);\n"
                    b"typedef struct { int a; } T;\nstruct U { int b; };\nint f(void) { return 2; }\n",
    "edge/tmpl.h": b"#pragma once\nnamespace a { template <typename T> class V { public: T get() const { return t; } T t; };\n"
                   b"inline namespace v1 { int h(); } }\nFMT_BEGIN_NAMESPACE namespace detail { int k() { return 0; } }\n",
    "edge/view.tsx": b"export const A = () => <div/>;\nfunction B() { return <A/>; }\nclass C { m() {} m() {} }\n",
    "edge/dup.go": b"package p\n\nfunc (a *A) M() {}\nfunc (b B) M() {}\ntype I interface { M() }\n",
}

PY_EDGES: dict[str, bytes] = {
    "edge/deco.py": b"import functools\n\n@functools.cache\n@staticmethod\ndef f():\n    pass\n\n"
                    b"class A:\n    @property\n    def x(self):\n        def inner():\n            pass\n"
                    b"    def x(self):\n        pass\n\nif True:\n    def f():\n        pass\n"
                    b"try:\n    class B: pass\nexcept ImportError:\n    class B: pass\n",
    "edge/broken.py": b"def f(:\n    pass\n",
    "edge/latin.py": b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n",
    "edge/badutf.py": b"def f():\n    return '\xff'\n",
}


def _foreign_sources() -> dict[str, bytes]:
    out = dict(_sources())
    for path in sorted((HERE / "graph_fixtures").rglob("*")):
        if path.is_file() and path.suffix not in (".toml", ".mod", ".json"):
            out[str(path.relative_to(HERE))] = path.read_bytes()
    out.update(SPAN_EDGES)
    return out


def _python_sources() -> dict[str, bytes]:
    out = {str(p.relative_to(ROOT)): p.read_bytes() for p in sorted((ROOT / "codenib" / "compiler").glob("*.py"))}
    out.update(PY_EDGES)
    return out


@pytest.mark.parametrize("rel_path", sorted(_foreign_sources()))
def test_foreign_spans_equal_the_full_readers_nodes(rel_path):
    raw = _foreign_sources()[rel_path]
    want = [(n.node_id, n.start_line, n.end_line) for n in read_foreign(rel_path, raw).nodes[1:]]
    assert read_foreign_spans(rel_path, raw) == want


@pytest.mark.parametrize("rel_path", sorted(_python_sources()))
def test_python_spans_equal_the_full_readers_nodes(rel_path):
    raw = _python_sources()[rel_path]
    want = [(n.node_id, n.start_line, n.end_line) for n in parse_source(rel_path, raw).nodes[1:]]
    assert definition_spans(rel_path, raw) == want


def test_python_edges_cover_decorators_repeats_and_unparsable_files():
    spans = dict((i, (s, e)) for i, s, e in definition_spans("edge/deco.py", PY_EDGES["edge/deco.py"]))
    assert spans["edge/deco.py::f"] == (3, 6)                       # from the first decorator
    assert "edge/deco.py::A.x#2" in spans and "edge/deco.py::f#2" in spans and "edge/deco.py::B#2" in spans
    assert definition_spans("edge/broken.py", PY_EDGES["edge/broken.py"]) == []
    assert definition_spans("edge/latin.py", PY_EDGES["edge/latin.py"]) == [("edge/latin.py::f", 2, 3)]


def test_the_fixtures_hold_definitions_in_every_language():
    counts: dict[str, int] = {}
    for rel_path, raw in _foreign_sources().items():
        language = read_foreign(rel_path, raw).nodes[0].language
        counts[language] = counts.get(language, 0) + len(read_foreign_spans(rel_path, raw))
    assert sorted(counts) == ["c", "cpp", "go", "java", "javascript", "rust", "typescript"]
    assert min(counts.values()) >= 5, counts


def test_foreign_spans_start_at_attributes_and_keep_repeats():
    spans = {i: (s, e) for i, s, e in read_foreign_spans("edge/attrs.rs", SPAN_EDGES["edge/attrs.rs"])}
    assert spans["edge/attrs.rs::S"] == (1, 4)                      # `#[derive]` above the doc
    assert "edge/attrs.rs::f#2" in spans and "edge/attrs.rs::tests.t" in spans
    with pytest.raises(KeyError):
        read_foreign_spans("notes.txt", b"text")


def test_python_spans_leave_no_garbage_cycle():
    """Reading a Python blob's spans leaves nothing for the cycle collector: `--history`
    parses thousands of blobs with it paused, and a cycle (the walk was a closure that
    called itself) kept each whole tree alive until the collector ran."""
    import gc

    source = b"class A:\n    def f(self):\n        def g():\n            pass\n\nif x:\n    def h():\n        pass\n"
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            assert [s[0] for s in definition_spans("m.py", source)] == ["m.py::A", "m.py::A.f", "m.py::A.f.g", "m.py::h"]
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
