"""Containment edges of the non-Python files, from their rows of the nodes table.

A pure function of the nodes, so incremental builds (whose kept files' nodes come from the
earlier index) give the same edges as full ones. A definition's parent is the node of the
same file whose plain qualified name is its longest proper prefix (the one whose span holds
it when `#N` duplicates share the name), else the file: `A.f` out of line (C++ `A::f`, a Go
method, a Rust `impl A` block, JavaScript `A.prototype.f`) hangs under the type `A` of its
file, and namespaces and modules, which are no nodes, are skipped over.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc

from codenib.core.types import EDGES_SCHEMA, plain_qualname


def foreign_contains(nodes: pa.Table) -> pa.Table:
    """`contains` edges (EDGES_SCHEMA, unsorted) of every non-Python file in `nodes`."""
    rows = nodes.filter(pc.not_equal(nodes.column("language"), "python"))
    cols = rows.select(["node_id", "kind", "file", "qualname", "start_line", "end_line"]).to_pydict()
    by_file: dict[str, list[tuple]] = defaultdict(list)
    for nid, kind, f, q, s, e in zip(cols["node_id"], cols["kind"], cols["file"], cols["qualname"],
                                     cols["start_line"], cols["end_line"]):
        if kind != "file":
            by_file[f].append((nid, plain_qualname(q), s, e))
    src: list[str] = []
    dst: list[str] = []
    for f, defs in by_file.items():
        for parent, child in file_contains(f, defs):
            src.append(parent)
            dst.append(child)
    return pa.table({"src": src, "dst": dst, "type": ["contains"] * len(src), "count": [1] * len(src)},
                    schema=EDGES_SCHEMA)


def file_contains(file_id: str, defs: list[tuple[str, str, int, int]]) -> list[tuple[str, str]]:
    """(parent id, child id) for each definition (node id, plain qualname, start, end) of a file."""
    by_plain: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for nid, plain, s, e in defs:
        by_plain[plain].append((nid, s, e))
    out = []
    for nid, plain, s, e in defs:
        parent = file_id
        segs = plain.split(".")
        for k in range(len(segs) - 1, 0, -1):
            candidates = by_plain.get(".".join(segs[:k]))
            if candidates:
                holding = [c for c in candidates if c[1] <= s and e <= c[2] and c[0] != nid]
                parent = max(holding, key=lambda c: c[1])[0] if holding else candidates[0][0]
                break
        out.append((parent, nid))
    return out
