"""One file version's entry in the per-file store: its nodes and their BM25 term counts.

The bytes of an entry (gzipped compact JSON, `mtime` 0) depend on its content alone, so any
writer gives the same bytes for one key. The compiler writes entries (`codenib.compiler.cache`);
an index in the store layout (`codenib.core.store_layout`) is read back from them.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from dataclasses import dataclass

from codenib.core.types import NODES_SCHEMA, Node

#: gzip level of an entry: 6 keeps ~97% of level 9's saving on sphinx's entries (5.1x vs 4.1x
#: at level 1) for about 1 CPU s per 55 MB of JSON.
GZIP_LEVEL = 6


@dataclass(frozen=True, slots=True)
class CachedFile:
    """One file's nodes and the term counts of their texts (row i = nodes[i])."""

    nodes: list[Node]
    terms: list[Counter]


def encode_entry(entry: CachedFile) -> bytes:
    """The stored bytes of `entry` (the same entry always gives the same bytes)."""
    names = NODES_SCHEMA.names
    data = {"nodes": [[(list(v) if n == "decorators" else v) for n, v in ((n, getattr(node, n)) for n in names)]
                      for node in entry.nodes],
            "terms": [sorted(c.items()) for c in entry.terms]}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return gzip.compress(text.encode("utf-8"), compresslevel=GZIP_LEVEL, mtime=0)


def decode_entry(raw: bytes, rel_path: str) -> CachedFile | None:
    """The entry in `raw` for the file `rel_path`, or None when the bytes are damaged or hold
    another file's entry (never trusted: the caller parses the file again or says so)."""
    decoded = decode_rows(raw, rel_path)
    if decoded is None:
        return None
    rows, pairs = decoded
    try:
        names = NODES_SCHEMA.names
        nodes = [Node(**{n: (tuple(v) if n == "decorators" else v) for n, v in zip(names, row)}) for row in rows]
        terms = [Counter(dict(p)) for p in pairs]
    except (ValueError, TypeError):
        return None
    return CachedFile(nodes, terms)


def decode_rows(raw: bytes, rel_path: str) -> tuple[list[list], list[list]] | None:
    """`decode_entry` without making records: the nodes as rows in `NODES_SCHEMA` order, and
    each node's term counts as (term, count) pairs sorted by term; None as there."""
    try:
        data = json.loads(gzip.decompress(raw).decode("utf-8"))
        rows, pairs = data["nodes"], data["terms"]
        width = len(NODES_SCHEMA.names)
        if (not isinstance(rows, list) or not isinstance(pairs, list) or len(rows) != len(pairs) or not rows
                or any(not isinstance(r, list) or len(r) != width for r in rows)
                or rows[0][NODES_SCHEMA.names.index("file")] != rel_path):
            return None
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError):
        return None
    return rows, pairs
