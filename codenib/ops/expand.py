"""Compact one-hop graph neighbourhood expansion from existing seeds, and span content loading.

Long traversals (k-hop BFS, personalized PageRank) are retrieval policy and live in
`codenib.model`; this module only looks one hop away from the candidates it is given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from codenib.core.errors import BadInputError
from codenib.ops.retrieve import Candidates, QueriedNode, RetrieveContext
from codenib.core.types import EDGE_TYPES

DIRECTIONS = ("callers", "callees", "both")
#: Dependency edges: what a caller/callee budget is spent on (containment is extra).
DEPENDENCY_EDGES = ("calls", "references", "inherits", "imports")


@dataclass(frozen=True, slots=True)
class ExpandParams:
    """How far a one-hop expansion may reach."""

    direction: str = "both"                      # callers = predecessors, callees = successors
    edge_types: tuple[str, ...] = DEPENDENCY_EDGES
    per_seed: int = 5                            # dependency neighbours per seed
    total: int = 50                              # dependency neighbours in all
    include_contains: bool = False               # also parents/children, outside the budget
    contains_per_seed: int = 3
    decay: float = 0.5                           # neighbour score = seed score * decay
    keep_seeds: bool = True

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise BadInputError(f"unknown expansion direction {self.direction!r}",
                                fix=f"use one of: {', '.join(DIRECTIONS)}")
        bad = [t for t in self.edge_types if t not in EDGE_TYPES or t == "contains"]
        if bad:
            raise BadInputError(f"edge types {bad} cannot be expanded as dependencies",
                                fix=f"use some of: {', '.join(DEPENDENCY_EDGES)} (containment: include_contains)")
        if self.per_seed < 0 or self.total < 0 or self.contains_per_seed < 0:
            raise BadInputError("expansion caps must be >= 0", fix="pass non-negative per_seed/total")


def expand_graph_neighbors(cands: Sequence[QueriedNode], params: ExpandParams, ctx: RetrieveContext) -> Candidates:
    """Seeds (if kept) followed by their one-hop neighbours, in discovery order.

    Per seed, repeated edges are collapsed first (counts summed over edge types), callers
    and callees are each sorted by edge count then node id and interleaved, and at most
    `per_seed` new nodes are taken; `total` caps all dependency neighbours. Containment
    neighbours (parent, children) are added after each seed's dependencies and do not
    count against either cap.
    """
    graph = ctx.index.graph
    seen = {c.node_id for c in cands}
    out: list[QueriedNode] = list(cands) if params.keep_seeds else []
    added = 0
    for seed in cands:
        v = graph.index_of.get(seed.node_id)
        if v is None:
            continue
        lists = []
        if params.direction in ("callers", "both"):
            lists.append(_ranked(graph.predecessors_idx(v, params.edge_types)))
        if params.direction in ("callees", "both"):
            lists.append(_ranked(graph.successors_idx(v, params.edge_types)))
        score = seed.score * params.decay
        new = _take_new(lists, min(params.per_seed, params.total - added), seen, graph.node_ids)
        out.extend(ctx.node(u, score, "graph") for u in new)
        added += len(new)
        if params.include_contains:
            family = [_ranked(graph.predecessors_idx(v, ["contains"])),
                      _ranked(graph.successors_idx(v, ["contains"]))]
            new = _take_new(family, params.contains_per_seed, seen, graph.node_ids)
            out.extend(ctx.node(u, score, "graph:contains") for u in new)
    return tuple(out)


def load_span_content(cands: Sequence[QueriedNode], ctx: RetrieveContext, reader=None) -> Candidates:
    """Fill `content` from the checkout (through `reader`, inside the repository root only),
    else from the indexed text. Candidates that already have content keep it."""
    texts = None
    out = []
    for c in cands:
        if c.content is not None:
            out.append(c)
            continue
        content = reader.read_span(c.file, c.start_line, c.end_line) if reader is not None else None
        if content is None:
            if texts is None:
                texts = ctx.index.texts()
            row = ctx.row(c.node_id)
            content = texts[row] if row is not None else None
        out.append(dataclasses.replace(c, content=content))
    return tuple(out)


def _ranked(pairs: list[tuple[int, int]]) -> list[int]:
    """Vertices by collapsed edge count (desc), then vertex (= node id order)."""
    merged: dict[int, int] = {}
    for u, k in pairs:
        merged[u] = merged.get(u, 0) + k
    return [u for u, _ in sorted(merged.items(), key=lambda t: (-t[1], t[0]))]


def _take_new(lists: list[list[int]], limit: int, seen: set[str], node_ids) -> list[int]:
    """Up to `limit` vertices from the interleaved lists whose ids are not in `seen` (added)."""
    taken: list[int] = []
    for u in _interleave(lists):
        if len(taken) >= limit:
            break
        nid = node_ids[u]
        if nid not in seen:
            seen.add(nid)
            taken.append(u)
    return taken


def _interleave(lists: list[list[int]]):
    for i in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if i < len(x):
                yield x[i]
