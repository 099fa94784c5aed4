"""Graph traversal policy: k-hop BFS and local (push-style) personalized PageRank from seeds.

Both stay local to the seeds: cost depends on the neighbourhood reached, not on the size of
the graph. Hubs (vertices of very high degree, e.g. a logging helper called everywhere)
are scored but not expanded through, since they would pull in most of the graph in two hops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from codenib.index.graph import CodeGraph

#: Relative weight of each edge type in a walk: calls are the strongest dependency.
EDGE_WEIGHTS = {"calls": 1.0, "references": 0.5, "inherits": 0.5, "imports": 0.2, "contains": 0.3}


@dataclass(frozen=True, slots=True)
class WalkSpec:
    """Which edges a traversal follows, in which direction, and how far it may spread."""

    direction: str = "both"                 # callers (in-edges) | callees (out-edges) | both
    edge_types: tuple[str, ...] = ("calls",)
    hub_degree: int = 200


def neighbours(graph: CodeGraph, v: int, spec: WalkSpec) -> list[tuple[int, float]]:
    """Weighted one-hop neighbours of `v` under `spec` (counts collapse into one weight)."""
    out: dict[int, float] = {}
    for t in spec.edge_types:
        w = EDGE_WEIGHTS.get(t, 0.5)
        if spec.direction in ("callers", "both"):
            for u, k in graph.predecessors_idx(v, [t]):
                out[u] = out.get(u, 0.0) + w * k
        if spec.direction in ("callees", "both"):
            for u, k in graph.successors_idx(v, [t]):
                out[u] = out.get(u, 0.0) + w * k
    out.pop(v, None)
    return sorted(out.items())


def bfs(graph: CodeGraph, seeds: Sequence[int], spec: WalkSpec, hops: int = 1, per_seed: int = 50,
        total: int = 100) -> list[tuple[int, int, float]]:
    """Vertices within `hops` of the seeds, as (vertex, hop, weight) in visiting order.

    Within a hop, neighbours of earlier seeds come first, each seed's by descending edge
    weight then vertex id. Seeds themselves are not returned.
    """
    seen = set(seeds)
    frontier = list(seeds)
    out: list[tuple[int, int, float]] = []
    for hop in range(1, hops + 1):
        nxt: list[int] = []
        for v in frontier:
            if hop > 1 and graph.degree(v) > spec.hub_degree:
                continue
            taken = 0
            for u, w in sorted(neighbours(graph, v, spec), key=lambda t: (-t[1], t[0])):
                if taken >= per_seed or len(out) >= total:
                    break
                if u in seen:
                    continue
                seen.add(u)
                out.append((u, hop, w))
                nxt.append(u)
                taken += 1
        frontier = nxt
        if not frontier or len(out) >= total:
            break
    return out


def local_ppr(graph: CodeGraph, seeds: dict[int, float], spec: WalkSpec, alpha: float = 0.15,
              epsilon: float = 1e-4, max_pushes: int = 200_000) -> dict[int, float]:
    """Approximate personalized PageRank by forward push (Andersen, Chung and Lang, 2006).

    Residual mass is pushed from a vertex while it exceeds `epsilon` times its weighted
    out-degree, so work is bounded by about 1 / (alpha * epsilon) pushes regardless of
    graph size. A vertex with no edges under `spec` (or a hub) returns its walk mass to
    the seeds, as a personalized walk restarts there.

    Args:
        seeds: vertex -> restart weight (normalized here).
        alpha: restart probability (igraph's damping = 1 - alpha).
    """
    total = sum(seeds.values())
    if total <= 0:
        return {}
    restart = {v: w / total for v, w in seeds.items()}
    p: dict[int, float] = {}
    r: dict[int, float] = dict(restart)
    cache: dict[int, tuple[list[tuple[int, float]], float]] = {}
    queue = [v for v in sorted(r)]
    in_queue = set(queue)
    pushes = 0
    while queue and pushes < max_pushes:
        v = queue.pop()
        in_queue.discard(v)
        mass = r.get(v, 0.0)
        if v not in cache:
            nbrs = [] if graph.degree(v) > spec.hub_degree and v not in restart else neighbours(graph, v, spec)
            cache[v] = (nbrs, sum(w for _, w in nbrs))
        nbrs, wsum = cache[v]
        if mass <= epsilon * max(wsum, 1.0):
            continue
        pushes += 1
        p[v] = p.get(v, 0.0) + alpha * mass
        r[v] = 0.0
        spread = (1.0 - alpha) * mass
        targets = [(u, spread * w / wsum) for u, w in nbrs] if wsum > 0 else \
            [(u, spread * w) for u, w in restart.items()]
        for u, m in targets:
            r[u] = r.get(u, 0.0) + m
            if u not in in_queue:
                nb = cache.get(u)
                threshold = epsilon * max(nb[1] if nb else 1.0, 1.0)
                if r[u] > threshold:
                    queue.append(u)
                    in_queue.add(u)
    return p
