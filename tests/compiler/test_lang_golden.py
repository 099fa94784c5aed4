"""The readers' whole output (nodes and facts) for the fixture sources and a few edge cases,
against a snapshot written by the readers before their speed-ups (lang_golden.json): a
faster reader must read every byte the same. Node texts are kept as their sha256.

Regenerate only on purpose (a reader change that bumps its `version`):
    python tests/compiler/test_lang_golden.py > tests/compiler/lang_golden.json
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import sys
from pathlib import Path

import pytest

from codenib.compiler.lang import read_foreign
from codenib.compiler.lang.base import slot_constructor
from codenib.compiler.lang.facts import CallFact
from codenib.core.types import Node

HERE = Path(__file__).parent
SOURCES = HERE / "lang_sources"
GOLDEN = HERE / "lang_golden.json"

#: Shapes the fixtures lack: chained and nested calls starting at one byte, calls spanning
#: lines, CRLF line ends, comments between a receiver and its callee, calls outside any
#: definition, `require`/`import()`, a syntax error, generic receivers.
EDGES: dict[str, bytes] = {
    "edge/chain.js": b"const x = require('./x'), {a, b: c} = require(\"y\");\r\n"
                     b"a.b().c(d(e()))\r\n// doc\r\nfunction f() { return g(h)(i).j\r\n  .k(import('./m'), new A.B(), new C); }\r\n"
                     b"obj.m = function () { this.n(); super.o(); };\r\n",
    "edge/chain.ts": b"class A<T> extends B<T> implements C { m(): void { this.x<T>().y(); (a as any).b(); } }\n"
                     b"export default function () { f<number>(1)!.g(); }\n",
    "edge/chain.go": b"package p\n\nimport (\n\tf \"fmt\"\n\t\"os\"\n)\n\n// T doc\ntype T struct{ os.File }\n\n"
                     b"func (t *T) M() { f.Println(t.N().O()); g[int](1); x.y[int](2); func() {}(); (h)() }\n",
    "edge/Chain.java": b"package a.b;\nimport static a.C.*;\n/** doc */\nclass A extends B implements C, D {\n"
                       b"  A() { super(1); this.x().y(); new a.b.E<F>(); Outer.this.z(); }\n}\n",
    "edge/chain.rs": b"use a::{b, c as d, e::*};\nmod m;\n#[derive(X)]\n/// doc\nstruct S;\n"
                     b"impl<T> Tr for S<T> { fn f(&self) { self.g().h(); Vec::<u8>::new(); i::<u8>(); j(); } }\n",
    "edge/chain.c": b"#include \"a.h\"\n#include <b.h>\n/* doc */\nstatic int f(void) { return g(h(1))->i ? s.m(2) : (*fp)(3); }\n"
                    b"typedef struct { int x; } T;\nint broken( {\n",
    "edge/chain.cpp": b"namespace a::b { class C : public D<int> { void f(); }; }\n"
                      b"void a::b::C::f() { g<int>(1); ns::h(); x::y::z(); new q::R<S>(); this->k(); }\n",
}


def _sources() -> dict[str, bytes]:
    out = {f"lang_sources/{p.name}": p.read_bytes() for p in sorted(SOURCES.iterdir())}
    out.update(EDGES)
    return out


def _read(rel_path: str, raw: bytes) -> dict:
    parsed = read_foreign(rel_path, raw)
    nodes = []
    for node in parsed.nodes:
        row = dataclasses.asdict(node)
        row["text"] = hashlib.sha256(row["text"].encode("utf-8", "surrogatepass")).hexdigest()
        row["decorators"] = list(row["decorators"])
        nodes.append(row)
    return json.loads(json.dumps({"nodes": nodes, "facts": parsed.facts.to_dict(),
                                  "parse_error": parsed.parse_error}))


def _snapshot() -> dict:
    return {rel: _read(rel, raw) for rel, raw in _sources().items()}


@pytest.mark.parametrize("rel_path", sorted(_sources()))
def test_reader_output_equals_the_snapshot(rel_path):
    golden = json.loads(GOLDEN.read_text())
    assert rel_path in golden, f"{rel_path} is missing from {GOLDEN.name}"
    now = _read(rel_path, _sources()[rel_path])
    want = golden[rel_path]
    assert now["parse_error"] == want["parse_error"]
    assert now["facts"] == want["facts"]
    assert len(now["nodes"]) == len(want["nodes"])
    for got, expected in zip(now["nodes"], want["nodes"]):
        assert got == expected, got["node_id"]


def test_slot_constructor_builds_the_same_frozen_objects():
    make = slot_constructor(Node)
    fast = make("a.go::f", "function", "a.go", "f", "f", 1, 2, text="x")
    assert fast == Node("a.go::f", "function", "a.go", "f", "f", 1, 2, text="x")
    assert fast.decorators == () and fast.language == "python"      # defaults and factories
    # Made as a twin of the same slots, it leaves as a Node: pickled, hashed and compared as one.
    assert type(fast) is Node and pickle.loads(pickle.dumps(fast)) == fast
    assert hash(fast) == hash(Node("a.go::f", "function", "a.go", "f", "f", 1, 2, text="x"))
    assert slot_constructor(CallFact)("f", "", "a.go", 3, "call") == CallFact("f", "", "a.go", 3, "call")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.kind = "class"
    with pytest.raises(TypeError):
        make("too", "few")


if __name__ == "__main__":
    json.dump(_snapshot(), sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
