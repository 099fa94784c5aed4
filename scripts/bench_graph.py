#!/usr/bin/env python3
"""Benchmark: local push personalized PageRank and k-hop BFS against igraph's exact PPR.

On the code graph of a real package (default: the largest of a few installed ones, at
least 50,000 nodes if available), for random seed sets it prints per query: igraph's global
`personalized_pagerank` time, our local push PPR (`codenib.model.traversal.local_ppr`) time,
BFS time, and the top-50 overlap of push PPR with exact PPR on the same weighted graph.
The three calls of each query run back to back in an order that rotates per query; the
speed-up is the median of per-query pairs. Target: a few milliseconds per query, top-50
overlap >= 90%.

Usage:
    python scripts/bench_graph.py [--repo PATH] [--queries 200] [--epsilon 1e-4]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

import igraph as ig

from codenib.compiler.lang.python_parse import parse_file
from codenib.compiler.lang.python_resolve import build_edges
from codenib.compiler.walk import walk_repository
from codenib.index.graph import CodeGraph
from codenib.model.traversal import PPR_EPSILON, WalkSpec, bfs, local_ppr, neighbours, walk_graph
from codenib.core.types import edges_to_table

from benchkit import Row, Stopwatch, Timing, finish, out, render_table, timed

#: What structural plans walk (the planner's GraphExpansionPlan uses calls; PPR pipelines
#: add references and inheritance). --edge-types changes it.
EDGE_TYPES = ("calls", "references", "inherits")
ALPHA = 0.15
TOP = 50
#: Push PPR's top-50 agrees with exact PPR's on at least this share, on average.
OVERLAP_TARGET = 0.9


def default_repo() -> Path:
    site = Path(ig.__file__).resolve().parents[1]
    for name in ("sympy", "networkx", "pandas", "pip"):
        if (site / name).is_dir():
            return site / name
    return Path(__file__).resolve().parents[1] / "codenib"


def load_graph(repo: Path) -> CodeGraph:
    with Stopwatch() as sw:
        files, _ = walk_repository(repo)
        parsed = [parse_file(f) for f in files]
        nodes = sorted(n.node_id for pf in parsed for n in pf.nodes)
        root_package = repo.name if (repo / "__init__.py").is_file() else None
        edges = build_edges(parsed, root_package)
        graph = CodeGraph(nodes, edges_to_table(edges))
    print(f"graph of {repo}: {graph.num_nodes} nodes, {graph.num_edges} edges "
          f"({sw.wall:.1f}s to build)", file=sys.stderr)
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
    ap.add_argument("--strict", action="store_true", help="exit 1 when the overlap misses the target")
    args = ap.parse_args(argv)
    graph = load_graph(args.repo or default_repo())
    rng = random.Random(args.seed)
    types = tuple(t.strip() for t in args.edge_types.split(",") if t.strip())
    # Seeds are ordinary vertices (with edges, not hubs), like the symbols a query names.
    candidates = [v for v in range(graph.num_nodes) if 0 < graph.degree(v) <= 200]
    rows, summary = [], []
    for label, hub in (("no hub cap", 10**9), ("hub cap 200", 200)):
        spec = WalkSpec(args.direction, types, hub)
        g = exact_graph(graph, spec)
        walk_graph(graph, spec)                                # built once per index and spec
        local_ppr(graph, {candidates[0]: 1.0}, spec)           # loads (or compiles) the kernel
        t_exact, t_push, t_bfs, overlaps, reached = [], [], [], [], []
        for q in range(args.queries):
            seeds = rng.sample(candidates, args.seeds)
            calls = {
                "exact": lambda: g.personalized_pagerank(damping=1 - ALPHA, reset_vertices=seeds, weights="weight",
                                                         directed=True),
                "push": lambda: local_ppr(graph, {s: 1.0 for s in seeds}, spec, alpha=ALPHA, epsilon=args.epsilon),
                "bfs": lambda: bfs(graph, seeds, spec, hops=2, per_seed=50, total=200),
            }
            found, spent = {}, {"exact": t_exact, "push": t_push, "bfs": t_bfs}
            names = list(calls)
            for name in names[q % 3:] + names[:q % 3]:   # the order rotates per query, as in timed_rounds
                found[name], seconds = timed(calls[name])
                spent[name].append(seconds)
            exact, push = found["exact"], found["push"]
            top_exact = sorted(range(len(exact)), key=lambda v: (-exact[v], v))[:TOP]
            top_push = sorted(push, key=lambda v: (-push[v], v))[:TOP]
            # Vertices with no mass in either ranking do not count (tiny neighbourhoods).
            k = min(TOP, sum(1 for v in top_exact if exact[v] > 0))
            if k:
                overlaps.append(len(set(top_push[:k]) & set(top_exact[:k])) / k)
            reached.append(len(push))
        te, tp, tb = Timing(tuple(t_exact)), Timing(tuple(t_push)), Timing(tuple(t_bfs))
        overlap = statistics.mean(overlaps) if overlaps else float("nan")
        speedup = tp.speedup_over(te)
        rows.append((label, f"{te.median * 1e3:.1f}", f"{tp.median * 1e3:.2f} / {max(t_push) * 1e3:.1f}",
                     f"{tb.median * 1e3:.2f}", f"{overlap:.3f}", f"{statistics.median(reached):.0f}", f"{speedup:.2f}x"))
        summary += [Row(f"{label}: push PPR vs igraph exact PPR, per query", f"{tp.median * 1e3:.2f} ms",
                        f"{te.median * 1e3:.1f} ms", speedup),
                    Row(f"{label}: top-{TOP} overlap with exact", f"{overlap:.3f}", status=(
                        "pass" if overlap >= OVERLAP_TARGET else "FAIL"))]
    out(f"\n{graph.num_nodes} nodes, {graph.num_edges} edges; {args.queries} queries of {args.seeds} seeds; "
        f"direction {args.direction}; edges {','.join(types)}; alpha {ALPHA}; epsilon {args.epsilon}")
    out(render_table(("variant", "igraph exact PPR ms (median)", "push PPR ms (median / max)", "2-hop BFS ms",
                      f"top-{TOP} overlap with exact", "vertices touched", "speed-up (median of pairs)"),
                     rows, right=(1, 2, 3, 4, 5, 6)))
    return finish(summary, "graph walks", args.strict)


if __name__ == "__main__":
    sys.exit(main())
