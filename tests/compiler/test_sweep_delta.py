"""A tree-sitter version's spans derived from its neighbour's tree and the diff
(`codenib.compiler.lang.sweep_delta`, `SweepReader.derive`) equal a full read's."""

from __future__ import annotations

import difflib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codenib.compiler.lang import reader_of
from codenib.compiler.lang.sweep_delta import TreeOutline, edited_tree, tree_edits


def _hunks(old: bytes, new: bytes) -> list[tuple[int, int, int, int]]:
    """git's hunks without context (a side of no lines starts at the line before it)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append((i1 + 1 if i2 > i1 else i1, i2 - i1, j1 + 1 if j2 > j1 else j1, j2 - j1))
    return out


def test_edits_of_hand_read_hunks():
    old = b"a\nbb\nc\n"
    # Line 2 replaced by two lines: bytes 2..5 of old become 2..9; rows 1..2 become 1..3.
    assert tree_edits(old, b"a\nxx\nyy\nc\n", [(2, 1, 2, 2)]) == [(2, 5, 8, (1, 0), (2, 0), (3, 0))]
    # A pure insertion after line 1, and a deletion of line 3, applied bottom-up.
    assert tree_edits(old, b"a\nnew\nbb\n", [(1, 0, 2, 1), (3, 1, 3, 0)]) == [
        (2, 2, 6, (1, 0), (1, 0), (2, 0)),
        (5, 7, 5, (2, 0), (3, 0), (2, 0))]
    # A last line without a line break ends inside its row.
    assert tree_edits(b"a\nb", b"a\nb\nc", [(2, 1, 2, 2)]) == [(2, 3, 5, (1, 0), (1, 1), (2, 1))]


def test_hunks_that_are_not_the_diff_give_nothing():
    old = b"a\nbb\nc\n"
    assert tree_edits(old, b"a\nxx\nc\n", [(1, 1, 1, 1)]) is None           # line 2 differs too
    assert tree_edits(old, b"a\nxx\nc\n", [(2, 1, 2, 1), (1, 1, 1, 1)]) is None   # out of order
    assert tree_edits(old, b"a\n", [(2, 5, 1, 0)]) is None                  # past the end
    reader = reader_of("a.ts")
    _, base = reader.outline("a.ts", b"function f() {}\n")
    grown = b"function f() {}\nfunction g() {}\n"
    assert edited_tree(base, "typescript:tsx", grown, [(1, 0, 2, 1)]) is None     # another grammar's tree
    assert reader_of("a.tsx").derive(base, "a.tsx", grown, [(1, 0, 2, 1)]) is None
    # A `.h` file's versions are read as C or as C++ by their bytes: a C++ tree is no C base
    # (the C parser took it and returned spans other than a full read's; a longer header
    # crashed the process).
    cpp_header = b"enum E3 { A3_X };\nnamespace n9 {\n}\nenum E4 { A4_X };\n"
    c_header = b"enum E3 { A3_X };\nenum E4 { A4_X };\n"
    assert reader_of("x.h", c_header).language == "c" and reader_of("x.h", cpp_header).language == "cpp"
    _, cpp_base = reader_of("x.h", cpp_header).outline("x.h", cpp_header)
    assert cpp_base is not None and reader_of("x.h", c_header).derive(cpp_base, "x.h", c_header, [(2, 2, 1, 0)]) is None
    # Overlapping hunks are no diff either.
    assert tree_edits(b"a\nb\n", b"A\nB\n", [(1, 1, 1, 2), (2, 1, 2, 1)]) is None
    assert edited_tree(None, "", grown, [(1, 0, 2, 1)]) is None
    assert isinstance(base, TreeOutline) and reader.derive(base, "a.ts", grown, []) is None


_SOURCES = {
    "a.c": [b"int x = 1;\n", b"int f(void) {\n  return 1;\n}\n", b"struct S { int a; };\n",
            b"static int g(int y) {\n  if (y) {\n    return y;\n  }\n  return 0;\n}\n", b"#define M 3\n",
            b"int broken(\n", b"}\n"],
    "a.cpp": [b"namespace n {\n", b"}\n", b"class A {\n public:\n  int m() { return 1; }\n};\n",
              b"template <typename T> T id(T t) { return t; }\n", b"int A::k() { return 2; }\n",
              b"struct B : A { void v(); };\n", b"#if X\n", b"#endif\n"],
    "a.js": [b"function f() {\n  return g();\n}\n", b"class C {\n  m() { return this.n(); }\n}\n",
             b"const h = () => {\n  f();\n};\n", b"module.exports = { f };\n", b"obj.p = function () {};\n",
             b"if (x) {\n", b"}\n"],
    "a.rs": [b"fn f() -> i32 {\n    1\n}\n", b"impl S {\n    fn m(&self) {}\n}\n", b"struct S;\n",
             b"mod inner {\n", b"}\n", b"#[derive(Debug)]\n", b"trait T { fn t(&self); }\n"],
    "A.java": [b"class A {\n", b"}\n", b"  void m() {\n    n();\n  }\n", b"  int f = 1;\n",
               b"interface I { void i(); }\n", b"  class Inner {}\n"],
    "a.go": [b"package p\n", b"func F() int {\n\treturn 1\n}\n", b"type T struct{ a int }\n",
             b"func (t T) M() {}\n", b"var v = 3\n", b"func broken( {\n"],
    "a.ts": [b"export function f(a: number): number {\n  return a;\n}\n", b"interface I { x: number }\n",
             b"class K {\n  m(): void {}\n}\n", b"type U = string;\n", b"namespace N {\n", b"}\n"],
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(sorted(_SOURCES)), data=st.data())
def test_a_chain_of_derived_versions_spans_as_full_reads(path, data):
    """Versions made of random pieces (definitions, unbalanced braces, preprocessor lines), each
    derived from the one before as `--history` does (a refused one read in full): every derived
    version's spans equal a full read's, and a version is refused only where it or its
    neighbour has a syntax error (error recovery may differ between the two parses)."""
    reader = reader_of(path)
    pieces = st.lists(st.sampled_from(_SOURCES[path]), max_size=12).map(b"".join)
    versions = data.draw(st.lists(pieces, min_size=2, max_size=6))
    spans, base = reader.outline(path, versions[0])
    assert spans == reader.spans(path, versions[0])
    for old, new in zip(versions, versions[1:]):
        hunks = _hunks(old, new)
        got = reader.derive(base, path, new, hunks)
        if got is None:
            assert not hunks or base is None or _has_error(reader, path, new), (old, new, hunks)
            spans, base = reader.outline(path, new)
            continue
        assert got[0] == reader.spans(path, new), (old, new)
        base = got[1]


def test_a_version_with_a_syntax_error_is_read_in_full():
    """No tree with a syntax error is a base, and no derived parse that meets one is kept."""
    reader = reader_of("a.c")
    good, bad = b"int f(void) {\n  return 1;\n}\n", b"int f(void) {\n  return 1;\n"
    assert reader.outline("a.c", bad)[1] is None
    _, base = reader.outline("a.c", good)
    assert base is not None and reader.derive(base, "a.c", bad, [(3, 1, 2, 0)]) is None


def _has_error(reader, path: str, raw: bytes) -> bool:
    return reader.outline(path, raw)[1] is None
