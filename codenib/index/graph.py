"""`CodeGraph`: the code graph over igraph, with id/vertex maps and typed neighbour queries."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pyarrow as pa

from codenib.core.types import EDGE_TYPES

if TYPE_CHECKING:
    import igraph as ig

_TYPE_CODE = {t: i for i, t in enumerate(EDGE_TYPES)}


class CodeGraph:
    """A directed multigraph of nodes (vertex i = nodes row i) and typed, counted edges.

    Neighbour lists are precomputed per edge type in both directions, so a typed
    neighbour query is a list lookup, not a scan over the vertex's incident edges.
    """

    def __init__(self, node_ids: Sequence[str], edges: pa.Table):
        self.node_ids: list[str] = list(node_ids)
        self.index_of: dict[str, int] = {nid: i for i, nid in enumerate(self.node_ids)}
        src = [self.index_of.get(s) for s in edges.column("src").to_pylist()]
        dst = [self.index_of.get(d) for d in edges.column("dst").to_pylist()]
        types = edges.column("type").to_pylist()
        counts = edges.column("count").to_pylist()
        keep = [i for i, (s, d) in enumerate(zip(src, dst)) if s is not None and d is not None]
        self.src = np.array([src[i] for i in keep], dtype=np.int64)
        self.dst = np.array([dst[i] for i in keep], dtype=np.int64)
        self.type_code = np.array([_TYPE_CODE[types[i]] for i in keep], dtype=np.int8)
        self.count = np.array([counts[i] for i in keep], dtype=np.int32)
        n = len(self.node_ids)
        self._out: dict[str, list[list[tuple[int, int]]]] = {t: [[] for _ in range(n)] for t in EDGE_TYPES}
        self._in: dict[str, list[list[tuple[int, int]]]] = {t: [[] for _ in range(n)] for t in EDGE_TYPES}
        for s, d, c, k in zip(self.src.tolist(), self.dst.tolist(), self.type_code.tolist(), self.count.tolist()):
            t = EDGE_TYPES[c]
            self._out[t][s].append((d, k))
            self._in[t][d].append((s, k))
        self._degree = np.bincount(self.src, minlength=n) + np.bincount(self.dst, minlength=n)

    @cached_property
    def graph(self) -> "ig.Graph":
        """The igraph view (edge attributes `type`, `count`), built on first use: importing
        igraph costs a worker ~0.7 s, and typed neighbour queries and PPR do not need it."""
        import igraph as ig

        g = ig.Graph(n=self.num_nodes, edges=list(zip(self.src.tolist(), self.dst.tolist())), directed=True)
        g.es["type"] = [EDGE_TYPES[c] for c in self.type_code.tolist()]
        g.es["count"] = self.count.tolist()
        return g

    # -- sizes --------------------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    def degree(self, vertex: int) -> int:
        """Total degree (all types, both directions) of a vertex."""
        return int(self._degree[vertex])

    def edge_counts(self) -> dict[str, int]:
        """Number of edge rows per type."""
        codes = np.bincount(self.type_code, minlength=len(EDGE_TYPES)) if self.num_edges else [0] * len(EDGE_TYPES)
        return {t: int(codes[i]) for i, t in enumerate(EDGE_TYPES)}

    # -- typed neighbours ---------------------------------------------------------------------

    def successors_idx(self, vertex: int, types: Iterable[str] | None = None) -> list[tuple[int, int]]:
        """(vertex, count) pairs reached by out-edges of the given types."""
        return self._neighbours(self._out, vertex, types)

    def predecessors_idx(self, vertex: int, types: Iterable[str] | None = None) -> list[tuple[int, int]]:
        """(vertex, count) pairs with an edge of the given types into `vertex`."""
        return self._neighbours(self._in, vertex, types)

    def successors(self, node_id: str, types: Iterable[str] | None = None) -> list[str]:
        """Node ids that `node_id` points to by edges of `types` (all types when None)."""
        v = self.index_of.get(node_id)
        return [] if v is None else [self.node_ids[u] for u, _ in self.successors_idx(v, types)]

    def predecessors(self, node_id: str, types: Iterable[str] | None = None) -> list[str]:
        """Node ids that point to `node_id` by edges of `types` (all types when None)."""
        v = self.index_of.get(node_id)
        return [] if v is None else [self.node_ids[u] for u, _ in self.predecessors_idx(v, types)]

    def _neighbours(self, table, vertex: int, types: Iterable[str] | None) -> list[tuple[int, int]]:
        wanted = EDGE_TYPES if types is None else tuple(types)
        out: list[tuple[int, int]] = []
        for t in wanted:
            if t not in table:
                raise ValueError(f"unknown edge type {t!r}; valid types: {', '.join(EDGE_TYPES)}")
            out.extend(table[t][vertex])
        if len(wanted) > 1:
            merged: dict[int, int] = {}
            for u, k in out:
                merged[u] = merged.get(u, 0) + k
            out = sorted(merged.items())
        return out
