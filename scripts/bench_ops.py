#!/usr/bin/env python3
"""Benchmark: what each op costs per 1,000 candidates (median of repeats), on a real index.

Candidates are real nodes of the index (default: the click dev index). Prints one row per
op with milliseconds per 1,000 candidates; online-encoding rerank is reported separately
since it is bounded by the encoder (see scripts/bench_dense.py for encode throughput).

Usage:
    python scripts/bench_ops.py [--index ~/.cache/codenib-dev/idx/click] [--repeats 20]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from codenib.index.loaded import load_index
from codenib.model.pipelines import rerank_context
from codenib.model.signals import query_signals
from codenib.ops.expand import ExpandParams, expand_graph_neighbors, load_span_content
from codenib.ops.filter import demote_tests, drop_tests, exclude_paths, include_paths, symbols_only, valid_spans
from codenib.ops.rerank import EmbeddingRerankParams, RerankContext, embedding_rerank
from codenib.ops.retrieve import RetrieveContext, dedup, rrf_fuse, rrf_fuse_files, to_queried_nodes
from codenib.ops.transform import extract_keywords

from benchkit import median_of

N = 1000


def timed(fn, repeats: int) -> float:
    """Median milliseconds of `repeats` calls after one warm-up."""
    return median_of(fn, repeats) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default=str(Path.home() / ".cache/codenib-dev/idx/click"))
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    index = load_index(args.index, device="cpu")
    ctx = RetrieveContext(index)
    rng = random.Random(0)
    n = min(N, len(index.nodes))
    rows_a, rows_b = rng.sample(range(len(index.nodes)), n), rng.sample(range(len(index.nodes)), n)
    a = to_queried_nodes(rows_a, [1.0 / (i + 1) for i in range(n)], "sparse", ctx)
    b = to_queried_nodes(rows_b, [1.0 / (i + 1) for i in range(n)], "dense", ctx)
    scale = N / n
    rctx = rerank_context(index)
    online = RerankContext(rctx.encode_queries, rctx.encode_documents, rctx.texts, rctx.row_of, None)
    index.texts()
    ops = [
        ("ops.retrieve.to_queried_nodes", lambda: to_queried_nodes(rows_a, [1.0] * n, "sparse", ctx)),
        ("ops.retrieve.dedup (2 x 1,000 in)", lambda: dedup(a + b)),
        ("ops.retrieve.rrf_fuse (2 runs)", lambda: rrf_fuse([a, b], [1.0, 2.0])),
        ("ops.retrieve.rrf_fuse_files (2 runs)", lambda: rrf_fuse_files([a, b])),
        ("ops.filter.drop_tests", lambda: drop_tests(a)),
        ("ops.filter.demote_tests", lambda: demote_tests(a)),
        ("ops.filter.symbols_only + valid_spans", lambda: valid_spans(symbols_only(a))),
        ("ops.filter.include/exclude_paths (2 globs)", lambda: exclude_paths(include_paths(a, ["src/*", "*.py"]), ["tests/*"])),
        ("ops.expand.expand_graph_neighbors (1,000 seeds)", lambda: expand_graph_neighbors(a, ExpandParams(total=10**6), ctx)),
        ("ops.expand.load_span_content (indexed text)", lambda: load_span_content(a, ctx)),
        ("ops.rerank.embedding_rerank (persisted vectors)",
         lambda: embedding_rerank(a, "open a file lazily", EmbeddingRerankParams(top_n=n), rctx)),
        ("ops.transform.query_signals (1,000 queries)",
         lambda: [query_signals("who calls `Context.invoke` in click.core?") for _ in range(n)]),
        ("ops.transform.extract_keywords (1,000 queries)",
         lambda: [extract_keywords('File "src/click/core.py", line 3, in main ValueError') for _ in range(n)]),
    ]
    print(f"index {args.index}: {len(index.nodes)} nodes; {n} candidates per call; median of {args.repeats}")
    print("| op | ms per 1,000 candidates |")
    print("|---|---|")
    for name, fn in ops:
        print(f"| {name} | {timed(fn, args.repeats) * scale:.2f} |", flush=True)
    head = a[:100]
    ms = timed(lambda: embedding_rerank(head, "open a file lazily", EmbeddingRerankParams(top_n=100), online), 2)
    print(f"| ops.rerank.embedding_rerank (online encoding, measured on 100) | {ms * 10:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
