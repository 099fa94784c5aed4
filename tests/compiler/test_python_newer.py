"""Python 3.12 syntax (PEP 695 type parameters and `type` statements, PEP 701 f-strings) parsed
on 3.11 (`python_newer.downlevel`): definitions on their own lines, texts and signatures as
written, calls found, no 3.11 file rewritten; what is newer still is a parse error."""

from __future__ import annotations

import ast
import keyword
import sysconfig
from pathlib import Path

import pyarrow.parquet as pq
import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.commands.cli import main
from codenib.compiler.lang.python_delta import derive
from codenib.compiler.lang.python_newer import downlevel
from codenib.compiler.lang.python_parse import definition_spans, parse_source, source_outline

SOURCE = '''from typing import Literal

if True:
    type Alias = list[int]
    type Pair[T] = tuple[T, T]

def first[T: (int, str)](xs: list[T]) -> T:
    return helper(xs[0])

class Box[T](Base):
    def get[U](self) -> U:
        return self.x

async def go[
    K,
    V,
](m: dict[K, V]) -> None:
    type = 5
    print(type(m))

def helper(x):
    return x
'''


def test_generic_definitions_and_type_statements_parse_on_their_own_lines():
    parsed = parse_source("m.py", SOURCE.encode())
    assert parsed.parse_error is None
    # Hand-read from SOURCE: every definition with its first and last line.
    assert [(n.node_id, n.start_line, n.end_line) for n in parsed.nodes] == [
        ("m.py", 1, 22), ("m.py::first", 7, 8), ("m.py::Box", 10, 12), ("m.py::Box.get", 11, 12),
        ("m.py::go", 14, 19), ("m.py::helper", 21, 22)]
    texts = {n.node_id: n.text for n in parsed.nodes}
    assert "def first[T: (int, str)](xs: list[T]) -> T:" in texts["m.py::first"]   # as written
    assert "class Box[T](Base):" in texts["m.py::Box"]
    assert "type Pair[T] = tuple[T, T]" in texts["m.py"]
    # Signatures show the type parameters as written, on one line.
    assert [n.signature for n in parsed.nodes[1:]] == [
        "def first[T: (int, str)](xs: list[T]) -> T", "class Box[T](Base)", "def get[U](self) -> U",
        "async def go[K, V](m: dict[K, V]) -> None", "def helper(x)"]


def test_the_rewrite_keeps_every_line_and_reads_type_statements_as_assignments():
    new = downlevel(SOURCE)
    assert new is not None and new.count("\n") == SOURCE.count("\n")
    assert [len(line) for line in new.splitlines()] == [len(line) for line in SOURCE.splitlines()]
    tree = ast.parse(new)
    assigned = [t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)]
    assert assigned == ["Alias", "Pair", "type"]      # `type = 5` is a plain name, left alone


@pytest.mark.parametrize("text", [
    "type = 5\nprint(type(x))\nx.type = 1\n",          # `type` as a name
    "def f(x):\n    return x[0]\n",                     # no PEP 695 syntax
    "class A(B[int]):\n    pass\n",                    # a subscripted base, not type parameters
])
def test_texts_without_pep_695_syntax_are_not_rewritten(text):
    assert downlevel(text) is None


def test_type_as_a_name_beside_pep_695_syntax_is_left_alone():
    text = "def f[T](x):\n    type: int = 5\n    y = type\n    return type(x)\n"
    new = downlevel(text)
    assert new is not None and new.splitlines()[1:] == text.splitlines()[1:]
    assert new.splitlines()[0] == "def f   (x):"


@pytest.mark.parametrize("raw, want", [
    # Hand-read: each file's definitions with their lines.
    (b"import os\n\x0c\ndef f[T](x): return x\n", [("m.py::f", 3, 3)]),            # a form feed
    (b"x = 1\rdef f[T](): pass\r", [("m.py::f", 2, 2)]),                            # "\r" line ends
    ('s = "a\u2028b"\ndef f[T](): pass\n'.encode(), [("m.py::f", 2, 2)]),           # U+2028 in a string
    (b"if TYPE_CHECKING: type X = int\ndef g[T](): pass\n", [("m.py::g", 2, 2)]),    # `type` after `:`
    (b"class A[T]:\n    type X = T\n    def m(self): pass\n", [("m.py::A", 1, 3), ("m.py::A.m", 3, 3)]),
    (b"x = 1; type X = int\ndef h(): pass\n", [("m.py::h", 2, 2)]),                  # `type` after `;`
    (b"type Cb[\n    T,\n] = list[T]\ndef k(): pass\n", [("m.py::k", 4, 4)]),       # a header over lines
    (b"def f[\n\n    T,\n\n](x): pass\ndef z(): pass\n", [("m.py::f", 1, 5), ("m.py::z", 6, 6)]),
])
def test_line_ends_separators_and_statement_forms(raw, want):
    parsed = parse_source("m.py", raw)
    assert parsed.parse_error is None
    assert [(n.node_id, n.start_line, n.end_line) for n in parsed.nodes[1:]] == want


@pytest.mark.parametrize("raw, want", [
    # PEP 701 f-strings, hand-read: each file's definitions with their lines.
    (b'def f(d):\n    return f"{d["k"]}"\ndef g(): pass\n', [("m.py::f", 1, 2), ("m.py::g", 3, 3)]),
    (b'def f(xs):\n    return f"{"\\n".join(xs)}"\ndef g(): pass\n', [("m.py::f", 1, 2), ("m.py::g", 3, 3)]),
    (b'def f(a):\n    return f"{\n        a\n    }"\ndef g(): pass\n', [("m.py::f", 1, 4), ("m.py::g", 5, 5)]),
    (b'def f(a):\n    return f"""{a # the a\n    }"""\ndef g(): pass\n', [("m.py::f", 1, 3), ("m.py::g", 4, 4)]),
    (b'def f(a, w):\n    return f"{f"{a["x"]}"!r:>{w}}"\ndef g(): pass\n', [("m.py::f", 1, 2), ("m.py::g", 3, 3)]),
    (b'def f(a):\r\n    return f"{\r\n        a["k"]\r\n    }"\r\ndef g(): pass\r\n',
     [("m.py::f", 1, 4), ("m.py::g", 5, 5)]),
])
def test_pep_701_fstrings_parse_on_their_lines(raw, want):
    parsed = parse_source("m.py", raw)
    assert parsed.parse_error is None
    assert [(n.node_id, n.start_line, n.end_line) for n in parsed.nodes[1:]] == want


def test_newer_syntax_than_3_12_stays_a_parse_error():
    """3.14's unparenthesised `except A, B:` is not rewritten: the file keeps its error."""
    parsed = parse_source("m.py", b"def f[T](x):\n    try:\n        x()\n    except A, B:\n        pass\n")
    assert parsed.parse_error is not None and parsed.parse_error.startswith("SyntaxError")
    assert [n.node_id for n in parsed.nodes] == ["m.py"]


def test_no_file_python_3_11_reads_is_rewritten():
    """Oracle: the standard library's files with f-strings (every twentieth, in path order), all
    read by this interpreter, are left as they are (no 3.11 f-string taken for a 3.12 one)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    checked = 0
    for path in sorted(root.rglob("*.py"))[::20]:
        try:
            text = path.read_text(encoding="utf-8")
            ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if 'f"' in text or "f'" in text:
            checked += 1
            assert downlevel(text) is None, path
    assert checked >= 20


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_no_separator_anywhere_makes_the_reader_raise(data):
    """Line ends and separators Python and `str.splitlines` disagree on, put anywhere in a
    file with PEP 695 syntax: the file parses or is a parse error, never an exception."""
    text = SOURCE
    for _ in range(data.draw(st.integers(1, 4), label="inserts")):
        at = data.draw(st.integers(0, len(text)), label="at")
        sep = data.draw(st.sampled_from(["\r", "\x0c", "\x0b", "\u2028", "\x85", "\r\n", "\n\n", "#"]), label="sep")
        text = text[:at] + sep + text[at:]
    parsed = parse_source("m.py", text.encode())
    assert parsed.nodes[0].node_id == "m.py"


def test_history_spans_and_derived_outlines_see_generic_definitions():
    assert definition_spans("m.py", SOURCE.encode())[:3] == [("m.py::first", 7, 8), ("m.py::Box", 10, 12),
                                                             ("m.py::Box.get", 11, 12)]
    new = SOURCE.replace("    return helper(xs[0])\n", "    y = xs[0]\n    return helper(y)\n").encode()
    patch = pygit2.Patch.create_from(SOURCE.encode(), new, context_lines=0)
    hunks = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
    got = derive(source_outline("m.py", SOURCE.encode()), new, hunks)
    assert got is not None and got == source_outline("m.py", new)


def test_calls_inside_generic_functions_become_edges(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text(SOURCE)
    assert main(["index", str(repo), "--out", str(tmp_path / "idx"), "--no-dense", "--quiet"]) == 0
    edges = pq.read_table(tmp_path / "idx" / "edges.parquet").to_pylist()
    calls = {(e["src"], e["dst"]) for e in edges if e["type"] == "calls"}
    assert ("m.py::first", "m.py::helper") in calls
    nodes = pq.read_table(tmp_path / "idx" / "nodes.parquet", columns=["node_id", "parse_error"]).to_pylist()
    assert {n["node_id"] for n in nodes} >= {"m.py::first", "m.py::Box.get", "m.py::go"}
    assert all(n["parse_error"] is None for n in nodes)


_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s))


@settings(max_examples=60, deadline=None)
@given(defs=st.lists(st.tuples(_NAMES, st.lists(_NAMES, min_size=0, max_size=3), st.booleans(),
                               st.sampled_from(["def", "class", "type"])), min_size=1, max_size=5))
def test_every_generic_definition_is_found_on_the_line_it_is_written(defs):
    """Definitions with or without type parameters (on one line or one per line) are found
    with the spans a 3.11 parse of the same file without the parameters gives."""
    written, plain = [], []
    for name, params, split, kind in defs:
        if kind == "type":
            head = f"type {name}" + (f"[{', '.join(params)}]" if params else "") + " = int"
            written.append(head)
            plain.append(f"{name} = int")
            continue
        if params and split:
            inner = "\n".join(f"    {p}," for p in params)
            written.append(f"{kind} {name}[\n{inner}\n]():\n    pass")
            plain.append(f"{kind} {name}(" + "\n" * (len(params) + 1) + "):\n    pass")
        else:
            brackets = f"[{', '.join(params)}]" if params else ""
            written.append(f"{kind} {name}{brackets}():\n    pass")
            plain.append(f"{kind} {name}():\n    pass")
    text = "\n\n".join(written) + "\n"
    parsed = parse_source("m.py", text.encode())
    assert parsed.parse_error is None
    want = parse_source("m.py", ("\n\n".join(plain) + "\n").encode())
    assert [(n.node_id, n.start_line, n.end_line) for n in parsed.nodes[1:]] == \
        [(n.node_id, n.start_line, n.end_line) for n in want.nodes[1:]]
