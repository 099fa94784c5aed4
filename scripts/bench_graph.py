#!/usr/bin/env python3
"""Benchmark: local push personalized PageRank and k-hop BFS against igraph's exact PPR.

On the code graph of a real package (default: the largest of a few installed ones, at
least 50,000 nodes if available), for random seed sets it prints per query: igraph's global
`personalized_pagerank` time, our local push PPR (`codenib.model.traversal.local_ppr`) time,
BFS time, and the top-50 overlap of push PPR with exact PPR on the same weighted graph.
Target: a few milliseconds per query, top-50 overlap >= 90%.

Usage:
    python scripts/bench_graph.py [--repo PATH] [--queries 200] [--epsilon 1e-4]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import igraph as ig

from codenib.compiler.parse import parse_file
from codenib.compiler.resolve import build_edges
from codenib.compiler.walk import walk_repository
from codenib.index.graph import CodeGraph
from codenib.model.traversal import PPR_EPSILON, WalkSpec, bfs, local_ppr, neighbours, walk_graph
from codenib.core.types import edges_to_table

#: What structural plans walk (the planner's GraphExpansionPlan uses calls; PPR pipelines
#: add references and inheritance). --edge-types changes it.
EDGE_TYPES = ("calls", "references", "inherits")
ALPHA = 0.15
TOP = 50


def default_repo() -> Path:
    site = Path(ig.__file__).resolve().parents[1]
    for name in ("sympy", "networkx", "pandas", "pip"):
        if (site / name).is_dir():
            return site / name
    return Path(__file__).resolve().parents[1] / "codenib"


def load_graph(repo: Path) -> CodeGraph:
    t0 = time.perf_counter()
    files, _ = walk_repository(repo)
    parsed = [parse_file(f) for f in files]
    nodes = sorted(n.node_id for pf in parsed for n in pf.nodes)
    root_package = repo.name if (repo / "__init__.py").is_file() else None
    edges = build_edges(parsed, root_package)
    graph = CodeGraph(nodes, edges_to_table(edges))
    print(f"graph of {repo}: {graph.num_nodes} nodes, {graph.num_edges} edges "
          f"({time.perf_counter() - t0:.1f}s to build)", file=sys.stderr)
    return graph


def exact_graph(graph: CodeGraph, spec: WalkSpec) -> ig.Graph:
    """The weighted directed graph the walk sees (neighbours() per vertex), for igraph.

    Hubs (degree above spec.hub_degree) get no out-edges: igraph sends a dangling vertex's
    mass back to the reset vertices, which is exactly what the push does at a hub.
    """
    src, dst, w = [], [], []
    for v in range(graph.num_nodes):
        if graph.degree(v) > spec.hub_degree:
            continue
        for u, weight in neighbours(graph, v, spec):
            src.append(v)
            dst.append(u)
            w.append(weight)
    g = ig.Graph(n=graph.num_nodes, edges=list(zip(src, dst)), directed=True)
    g.es["weight"] = w
    return g


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=None)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3, help="seed vertices per query")
    ap.add_argument("--epsilon", type=float, default=PPR_EPSILON)
    ap.add_argument("--direction", default="both", choices=["callers", "callees", "both"])
    ap.add_argument("--edge-types", default=",".join(EDGE_TYPES),
                    help="comma-separated edge types the walk follows")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args(argv)
    graph = load_graph(args.repo or default_repo())
    rng = random.Random(args.seed)
    types = tuple(t.strip() for t in args.edge_types.split(",") if t.strip())
    # Seeds are ordinary vertices (with edges, not hubs), like the symbols a query names.
    candidates = [v for v in range(graph.num_nodes) if 0 < graph.degree(v) <= 200]
    rows = []
    for label, hub in (("no hub cap", 10**9), ("hub cap 200", 200)):
        spec = WalkSpec(args.direction, types, hub)
        g = exact_graph(graph, spec)
        walk_graph(graph, spec)                                # built once per index and spec
        local_ppr(graph, {candidates[0]: 1.0}, spec)           # loads (or compiles) the kernel
        t_exact, t_push, t_bfs, overlaps, reached = [], [], [], [], []
        for _ in range(args.queries):
            seeds = rng.sample(candidates, args.seeds)
            t0 = time.perf_counter()
            exact = g.personalized_pagerank(damping=1 - ALPHA, reset_vertices=seeds, weights="weight",
                                            directed=True)
            t_exact.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            push = local_ppr(graph, {s: 1.0 for s in seeds}, spec, alpha=ALPHA, epsilon=args.epsilon)
            t_push.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            bfs(graph, seeds, spec, hops=2, per_seed=50, total=200)
            t_bfs.append(time.perf_counter() - t0)
            top_exact = sorted(range(len(exact)), key=lambda v: (-exact[v], v))[:TOP]
            top_push = sorted(push, key=lambda v: (-push[v], v))[:TOP]
            # Vertices with no mass in either ranking do not count (tiny neighbourhoods).
            k = min(TOP, sum(1 for v in top_exact if exact[v] > 0))
            if k:
                overlaps.append(len(set(top_push[:k]) & set(top_exact[:k])) / k)
            reached.append(len(push))
        rows.append((label, statistics.median(t_exact) * 1e3, statistics.median(t_push) * 1e3,
                     max(t_push) * 1e3, statistics.median(t_bfs) * 1e3, statistics.mean(overlaps),
                     statistics.median(reached)))
    print(f"\n{graph.num_nodes} nodes, {graph.num_edges} edges; {args.queries} queries of {args.seeds} seeds; "
          f"direction {args.direction}; edges {','.join(types)}; alpha {ALPHA}; epsilon {args.epsilon}")
    print("| variant | igraph exact PPR ms (median) | push PPR ms (median / max) | 2-hop BFS ms | "
          "top-50 overlap with exact | vertices touched | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for label, te, tp, tpmax, tb, ov, n in rows:
        print(f"| {label} | {te:.1f} | {tp:.2f} / {tpmax:.1f} | {tb:.2f} | {ov:.3f} | {n:.0f} | {te / tp:.0f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
