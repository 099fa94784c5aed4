"""The readers under hostile input: ids stay unique whatever names a file holds; one huge line
or deep and numerous definitions cost linear work (counts asserted, never seconds)."""

from __future__ import annotations

import random

import pytest

from codenib.compiler.lang import read_foreign, read_foreign_spans
from codenib.compiler.parse import definition_spans, parse_source
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
