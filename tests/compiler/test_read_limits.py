"""The readers under hostile input: ids stay unique whatever names a file holds; one huge line
or deep and numerous definitions cost linear work (counts asserted, never seconds)."""

from __future__ import annotations

import random

import pytest

from codenib.compiler.lang import read_foreign, read_foreign_spans
from codenib.compiler.lang.python_parse import definition_spans, parse_source
from codenib.core.types import UniqueQualnames

# --- unique ids (DESIGN, Identity: "ids are unique in every language") ----------------------

#: file -> (source, the definition ids in reading order, written down by hand).
DUPLICATES: dict[str, tuple[bytes, list[str]]] = {
    # The key "f#2" is a real name: the second real `f` may not take it.
    "x.js": (b'function f(){}\nvar o = {"f#2": function(){}};\nfunction f(){}\nfunction f(){}\n',
             ["f", "f#2", "f#3", "f#4"]),
    # Here the real "f#2" comes after the counted one and is counted in turn.
    "y.js": (b'function f(){}\nfunction f(){}\nvar o = {"f#2": function(){}};\n',
             ["f", "f#2", "f#2#2"]),
    "x.ts": (b'const o = {"f#2": () => 1};\nfunction f(): void {}\nfunction f(): void {}\n',
             ["f#2", "f", "f#3"]),
    "x.go": (b"package p\nfunc f() {}\nfunc f() {}\n", ["f", "f#2"]),
    "X.java": (b"class X { void f(int a){} void f(double a){} }\n", ["X", "X.f", "X.f#2"]),
    "x.rs": (b"fn f() {}\nfn f() {}\nimpl A { fn f(){} }\nimpl A { fn f(){} }\n", ["f", "f#2", "A.f", "A.f#2"]),
    "x.c": (b"void f(void){}\nvoid f(void){}\n", ["f", "f#2"]),
    "x.cpp": (b"namespace n { void f(){} }\nnamespace n { void f(){} }\nvoid n::f(){}\n", ["n.f", "n.f#2", "n.f#3"]),
}


@pytest.mark.parametrize("rel", sorted(DUPLICATES))
def test_a_counted_duplicate_never_takes_a_real_name_in_any_language(rel):
    source, expected = DUPLICATES[rel]
    ids = [n.node_id for n in read_foreign(rel, source).nodes[1:]]
    assert ids == [f"{rel}::{q}" for q in expected]
    assert len(set(ids)) == len(ids)
    # --history names past versions through the spans-only sweep: the same ids.
    assert [i for i, _, _ in read_foreign_spans(rel, source)] == ids


def test_the_python_reader_counts_duplicates_by_the_same_rule():
    source = b"def f(): pass\nclass A:\n    def f(self): pass\n    def f(self): pass\ndef f(): pass\n"
    ids = [n.node_id for n in parse_source("m.py", source).nodes[1:]]
    assert ids == ["m.py::f", "m.py::A", "m.py::A.f", "m.py::A.f#2", "m.py::f#2"]
    assert [i for i, _, _ in definition_spans("m.py", source)] == ids


def test_unique_qualnames_are_unique_for_any_sequence_of_names():
    """Property: names drawn from a small set that holds counted-looking names."""
    rng = random.Random(7)      # fixed seed: the same sequences every run
    alphabet = ["f", "f#2", "f#3", "f#2#2", "g", "A.f", "A.f#2"]
    for _ in range(500):
        names = [rng.choice(alphabet) for _ in range(rng.randint(1, 12))]
        given = UniqueQualnames()
        out = [given.add(n) for n in names]
        assert len(set(out)) == len(out), names
        # Each is its own name or its name with a count.
        assert all(q == n or q.startswith(n + "#") for q, n in zip(out, names))


def test_names_without_a_hash_keep_the_plain_counting():
    given = UniqueQualnames()
    assert [given.add(n) for n in ["f", "g", "f", "f", "g"]] == ["f", "g", "f#2", "f#3", "g#2"]


# --- one huge line (minified code) -----------------------------------------------------------

def test_a_definition_on_a_long_line_gets_its_own_columns_as_text():
    pad = b"var x=1;" * 200     # 1,600 bytes: past LONG_LINE_CHARS, so the line is cut
    source = pad + b"function f(a){return a}function g(){return 2}" + pad + b"\nfunction h(){\n  return 3}\n"
    nodes = {n.qualname: n for n in read_foreign("m.js", source).nodes[1:]}
    assert nodes["f"].text == "m.js f\nfunction f(a){return a}"
    assert nodes["g"].text == "m.js g\nfunction g(){return 2}"
    # A short line keeps the whole-line rule: byte-identical texts for hand-written code.
    assert nodes["h"].text == "m.js h\nfunction h(){\n  return 3}"
    assert (nodes["f"].start_line, nodes["f"].end_line) == (1, 1)


def test_a_definition_spanning_long_lines_is_cut_at_both_ends():
    pad = b"var x=1;" * 200
    source = pad + b"function f(){\n  return 1;\n}" + pad + b"\n"
    (f,) = read_foreign("m.js", source).nodes[1:]
    assert f.text == "m.js f\nfunction f(){\n  return 1;\n}"


def test_a_python_def_on_a_long_line_leaves_out_its_trailing_comment():
    body = "1" + " or 1" * 250                    # 1,251 characters: a long line
    comment = "  # " + "note " * 50
    source = f"class A:\n    def f(self): return {body}{comment}\n".encode()
    f = parse_source("m.py", source).nodes[2]
    assert f.qualname == "A.f"
    assert f.text == f"m.py A.f\ndef f(self): return {body}"
    # Short lines keep indentation and comments, as before.
    g = parse_source("m.py", b"class A:\n    def g(self): return 1  # note\n").nodes[2]
    assert g.text == "m.py A.g\n    def g(self): return 1  # note"


def test_statements_sharing_one_long_line_build_a_capped_text_without_repeating_the_line():
    """2,000 statements on one 14 kB line: the file text used to join the line once per
    statement (28 MB) to keep its first 6,000 characters."""
    import tracemalloc

    source = ("x = 1; " * 2000 + "\n").encode()
    tracemalloc.start()
    try:
        file_node = parse_source("m.py", source).nodes[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert file_node.text == ("m.py\n" + "x = 1; " * 2000)[:6000]
    assert peak < 8_000_000     # the tree and the text: a few MB; the repeated join alone is 28 MB


def _make(root, rel, data):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_minified_and_generated_files_are_skipped_with_the_reason(tmp_path):
    from codenib.compiler.walk import walk_repository

    hand = b"function f(a) {\n  return a + 1;\n}\n" * 200             # 35 bytes a line
    _make(tmp_path, "src/app.js", hand)
    _make(tmp_path, "dist2/vendor.min.js", b"function f(){}\n")        # by its name, however small
    _make(tmp_path, "lib/one_line.js", b"function f(){return 1};" * 1000)   # 23,000 bytes, one line
    _make(tmp_path, "lib/dense.js", (b"var a=1;" * 125 + b"\n") * 20)     # 1,001 bytes a line
    _make(tmp_path, "lib/data.py", b"x = 1\n" * 2000 + b"T = '" + b"a" * 30_000 + b"'\n")   # one long literal
    _make(tmp_path, "lib/wide.js", (b"var a=1;" * 124 + b"\n") * 20)      # 993 bytes a line
    files, skipped = walk_repository(tmp_path)
    assert [f.rel_path for f in files] == ["lib/data.py", "lib/wide.js", "src/app.js"]
    reasons = {s.rel_path: s.reason for s in skipped}
    assert reasons == {
        "dist2/vendor.min.js": "minified or generated code (a .min.js file name)",
        "lib/dense.js": "minified or generated code (20 lines of 1001 bytes on average, at least 1000 taken as generated)",
        "lib/one_line.js": "minified or generated code (1 lines of 23000 bytes on average, at least 1000 taken as generated)",
    }


def test_a_long_line_among_short_ones_is_generated_from_50000_bytes():
    from codenib.compiler.generated import generated_text_reason

    short = b"x = 1\n" * 20_000                                    # 120,000 bytes of 6-byte lines
    assert generated_text_reason(short + b"#" * 49_999 + b"\n") is None
    assert generated_text_reason(short + b"#" * 50_000 + b"\n") == \
        "minified or generated code (a line of 50000 bytes, at least 50000 taken as generated)"
    assert generated_text_reason(b"#" * 4_000) is None          # under 4 KiB: read whatever it holds


# --- deep and numerous definitions ---------------------------------------------------------

def _nested_js(depth: int) -> bytes:
    """`function f0(){ function f1(){ ... g(); } }`, one function a line, a call in the deepest."""
    opens = "".join(f"function f{i}(){{\n" for i in range(depth))
    return (opens + "g();\n" + "}\n" * depth).encode()


def test_definitions_nested_past_the_cap_fold_into_their_ancestor(monkeypatch):
    from codenib.compiler.lang import sweep

    monkeypatch.setattr(sweep, "MAX_NESTING", 3, raising=False)
    parsed = read_foreign("deep.js", _nested_js(5))
    assert [n.qualname for n in parsed.nodes[1:]] == ["f0", "f0.f1", "f0.f1.f2"]
    # f3 and f4 are part of f2: their lines, and the call in f4, are f2's.
    f2 = parsed.nodes[3]
    assert (f2.start_line, f2.end_line) == (3, 9)
    assert [(c.callee, c.caller) for c in parsed.facts.calls] == [("g", "deep.js::f0.f1.f2")]
    assert parsed.file_node.parse_error == "2 definitions nested deeper than 3 folded into their ancestor"
    assert [i for i, _, _ in read_foreign_spans("deep.js", _nested_js(5))] == \
        ["deep.js::f0", "deep.js::f0.f1", "deep.js::f0.f1.f2"]


def test_a_chain_of_2000_nested_functions_makes_100_definition_nodes():
    parsed = read_foreign("deep.js", _nested_js(2000))
    assert len(parsed.nodes) == 1 + 100         # the file and MAX_NESTING levels
    # Texts are capped at 16,000 characters a definition: 100 of them, and the file's 6,000.
    assert sum(len(n.text) for n in parsed.nodes) <= 100 * 16_000 + 6_000


class _CountingList(list):
    """A list that counts how often it is walked through."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_the_graph_walks_a_files_definitions_a_constant_number_of_times():
    """Pass 2 looked every unit's definitions up in a map of the file's definitions built anew
    per unit: quadratic in one-line defs (10k -> 20k defs: 19 -> 61 s)."""
    from codenib.compiler.lang.python_resolve import build_edges

    source = "".join(f"def f{i}():\n    return f{i - 1}()\n" for i in range(1, 41)).encode()
    pf = parse_source("m.py", source)
    pf.definitions = _CountingList(pf.definitions)
    _CountingList.walks = 0
    edges = build_edges([pf])
    assert sum(1 for e in edges if e.type == "calls") == 39        # f2 -> f1 ... f40 -> f39
    assert _CountingList.walks <= 5     # contains edges, units, the id map: not once per unit (41)
