"""Graph traversal policy: k-hop BFS and local (push-style) personalized PageRank from seeds.

Both stay local to the seeds: cost depends on the neighbourhood reached, not on the size of
the graph. Hubs (vertices of very high degree, e.g. a logging helper called everywhere)
are scored but not expanded through, since they would pull in most of the graph in two hops.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from codenib.index.graph import CodeGraph

#: Push threshold per unit of weighted degree. On sympy's graph (39k nodes, calls +
#: references + inherits, hub cap 200) 1e-5 gave a top-50 overlap of 0.96 with igraph's
#: exact PPR at ~6 ms per query (1e-6: 0.99 at ~15 ms); see scripts/bench_graph.py.
PPR_EPSILON = 1e-5
#: Hard cap on pushes per query, whatever epsilon and the graph allow.
PPR_MAX_PUSHES = 200_000

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


def ranked_walk(graph: CodeGraph, seeds: Sequence[int], seed_weights: Sequence[float], spec: WalkSpec,
                method: str = "bfs", hops: int = 1, per_seed: int = 50, total: int = 100,
                keep_seeds: bool = False) -> list[tuple[int, float]]:
    """The vertices a walk from `seeds` reaches, best first, as (vertex, weight).

    ppr: personalized PageRank mass (seeded with `seed_weights`), ties broken by vertex id,
    the first `total`; `keep_seeds` also ranks the seeds themselves. bfs: visiting order
    with weight 1 / (1 + hop); BFS never returns its seeds.
    """
    if method == "ppr":
        ppr = local_ppr(graph, {v: w for v, w in zip(seeds, seed_weights)}, spec)
        skip = set() if keep_seeds else set(seeds)
        ranked = [(v, p) for v, p in sorted(ppr.items(), key=lambda t: (-t[1], t[0])) if v not in skip]
        return ranked[:total]
    return [(v, 1.0 / (1 + hop)) for v, hop, _ in bfs(graph, seeds, spec, hops, per_seed, total)]


def local_ppr(graph: CodeGraph, seeds: dict[int, float], spec: WalkSpec, alpha: float = 0.15,
              epsilon: float = PPR_EPSILON, max_pushes: int = PPR_MAX_PUSHES) -> dict[int, float]:
    """Approximate personalized PageRank by forward push (Andersen, Chung and Lang, 2006).

    Residual mass is pushed from a vertex while it exceeds `epsilon` times its weighted
    out-degree, so the work is bounded by about 1 / (alpha * epsilon) pushes whatever the
    graph's size. A vertex without edges under `spec` returns its walk mass to the seeds (a
    personalized walk restarts there), and so does a hub (degree above `spec.hub_degree`)
    that is not a seed: hubs are scored but not expanded through. The kernel runs in numba
    over a CSR view of the walk graph, built once per graph and spec.

    Args:
        seeds: vertex -> restart weight (normalized here).
        alpha: restart probability (igraph's damping = 1 - alpha).

    Returns:
        vertex -> estimated PPR (pushed mass plus alpha times the residual left).
    """
    total = sum(w for w in seeds.values() if w > 0)
    if total <= 0:
        return {}
    walk = walk_graph(graph, spec)
    seed_ids = np.array(sorted(seeds), dtype=np.int64)
    seed_w = np.array([seeds[v] / total for v in sorted(seeds)], dtype=np.float64)
    p, r, touched = _push_kernel()(walk.indptr, walk.indices, walk.weights, walk.wsum, walk.hub, seed_ids,
                                   seed_w, alpha, epsilon, max_pushes)
    return {int(v): float(p[v] + alpha * r[v]) for v in touched if p[v] + r[v] > 0}


@dataclass(frozen=True)
class WalkGraph:
    """CSR adjacency of the weighted walk graph of one (graph, spec)."""

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    wsum: np.ndarray
    hub: np.ndarray


_WALKS: "weakref.WeakKeyDictionary[CodeGraph, dict[WalkSpec, WalkGraph]]" = weakref.WeakKeyDictionary()
_WALKS_LOCK = threading.Lock()


def walk_graph(graph: CodeGraph, spec: WalkSpec) -> WalkGraph:
    """The walk graph of `spec` over `graph` (cached per graph and spec)."""
    with _WALKS_LOCK:
        per_graph = _WALKS.setdefault(graph, {})
        if spec in per_graph:
            return per_graph[spec]
    from codenib.core.types import EDGE_TYPES

    n = graph.num_nodes
    weight_of = np.array([EDGE_WEIGHTS.get(t, 0.5) if t in spec.edge_types else 0.0 for t in EDGE_TYPES])
    w = weight_of[graph.type_code] * graph.count
    keep = (w > 0) & (graph.src != graph.dst)
    src, dst, w = graph.src[keep], graph.dst[keep], w[keep]
    parts_from, parts_to, parts_w = [], [], []
    if spec.direction in ("callees", "both"):
        parts_from.append(src), parts_to.append(dst), parts_w.append(w)
    if spec.direction in ("callers", "both"):
        parts_from.append(dst), parts_to.append(src), parts_w.append(w)
    frm = np.concatenate(parts_from) if parts_from else np.zeros(0, dtype=np.int64)
    to = np.concatenate(parts_to) if parts_to else np.zeros(0, dtype=np.int64)
    ww = np.concatenate(parts_w).astype(np.float64) if parts_w else np.zeros(0)
    order = np.lexsort((to, frm))
    frm, to, ww = frm[order], to[order], ww[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(frm, minlength=n), out=indptr[1:])
    wsum = np.bincount(frm, weights=ww, minlength=n).astype(np.float64)
    hub = np.array([graph.degree(v) > spec.hub_degree for v in range(n)], dtype=np.bool_) \
        if n else np.zeros(0, dtype=np.bool_)
    walk = WalkGraph(indptr, to.astype(np.int64), ww, wsum, hub)
    with _WALKS_LOCK:
        _WALKS.setdefault(graph, {})[spec] = walk
    return walk


_KERNEL = None


def _push_kernel():
    """The forward-push loop, compiled with numba (on-disk cache: one compile per machine)."""
    global _KERNEL
    if _KERNEL is None:
        from numba import njit

        _KERNEL = njit(cache=True, nogil=True)(_push)
    return _KERNEL


def _push(indptr, indices, weights, wsum, hub, seeds, seed_w, alpha, eps, max_pushes):
    n = indptr.shape[0] - 1
    p = np.zeros(n)
    r = np.zeros(n)
    is_seed = np.zeros(n, dtype=np.bool_)
    in_queue = np.zeros(n, dtype=np.bool_)
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n + 1, dtype=np.int64)    # ring buffer: each vertex is queued at most once
    touched = np.empty(n, dtype=np.int64)
    n_touched = 0
    head = 0
    tail = 0
    size = n + 1
    for i in range(seeds.shape[0]):
        v = seeds[i]
        is_seed[v] = True
        r[v] += seed_w[i]
        if not seen[v]:
            seen[v] = True
            touched[n_touched] = v
            n_touched += 1
        if not in_queue[v]:
            in_queue[v] = True
            queue[tail] = v
            tail = (tail + 1) % size
    pushes = 0
    while head != tail and pushes < max_pushes:
        v = queue[head]
        head = (head + 1) % size
        in_queue[v] = False
        mass = r[v]
        if mass <= eps * max(wsum[v], 1.0):
            continue
        pushes += 1
        p[v] += alpha * mass
        r[v] = 0.0
        spread = (1.0 - alpha) * mass
        if wsum[v] <= 0.0 or (hub[v] and not is_seed[v]):
            # Nowhere to walk (or a hub): the walk restarts at the seeds.
            for i in range(seeds.shape[0]):
                u = seeds[i]
                r[u] += spread * seed_w[i]
                if not in_queue[u] and r[u] > eps * max(wsum[u], 1.0):
                    in_queue[u] = True
                    queue[tail] = u
                    tail = (tail + 1) % size
            continue
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            r[u] += spread * weights[j] / wsum[v]
            if not seen[u]:
                seen[u] = True
                touched[n_touched] = u
                n_touched += 1
            if not in_queue[u] and r[u] > eps * max(wsum[u], 1.0):
                in_queue[u] = True
                queue[tail] = u
                tail = (tail + 1) % size
    return p, r, touched[:n_touched]
