#!/usr/bin/env python3
"""Reproduce the retrieval-quality table on the dev sets: RR@10 and R@10 per mode and query kind.

Usage:
    python scripts/quality.py --corpus ~/.cache/codenib-dev/prepared --eval ../shared/eval/dev \
        --index-root ~/.cache/codenib-dev/idx [--budget balanced] [--packages click jinja2]

Indexes are built on first use under --index-root (about a minute per package on 2 cores).
The corpora come from `python ../shared/eval/dev/prepare_corpus.py ~/.cache/codenib-dev`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from codenib.compiler.build import build_index

from codenib.compiler.build_options import BuildOptions
from codenib.index.loaded import load_index
from codenib.model.session import RetrievalSession
from codenib.model.planner import plan_options
MODES = ("sparse", "dense", "hybrid", "graph", "auto")
KINDS = ("semantic", "lexical", "structural")


def rr_at(ranked: list[str], gold: set[str], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k], start=1):
        if d in gold:
            return 1.0 / i
    return 0.0


def recall_at(ranked: list[str], gold: set[str], k: int = 10) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=Path.home() / ".cache/codenib-dev/prepared")
    ap.add_argument("--eval", type=Path, default=Path(__file__).resolve().parents[2] / "shared/eval/dev")
    ap.add_argument("--index-root", type=Path, default=Path.home() / ".cache/codenib-dev/idx")
    ap.add_argument("--packages", nargs="+", default=["click", "jinja2"])
    ap.add_argument("--budget", default="balanced")
    ap.add_argument("--modes", nargs="+", default=list(MODES))
    ap.add_argument("--rerank", default=None, help="force a reranker: none | embedding")
    args = ap.parse_args(argv)
    rows = []
    for pkg in args.packages:
        idx_dir = args.index_root / pkg
        if not (idx_dir / "manifest.json").is_file():
            print(f"building index for {pkg} -> {idx_dir}", file=sys.stderr)
            build_index(args.corpus / pkg, idx_dir, BuildOptions(progress=False))
        index = load_index(idx_dir)
        queries = pq.read_table(args.eval / pkg / "queries.parquet").to_pylist()
        qrels = pq.read_table(args.eval / pkg / "qrels.parquet").to_pylist()
        gold: dict[str, set[str]] = {}
        for r in qrels:
            if r["relevance"] > 0:
                gold.setdefault(r["qid"], set()).add(r["node_id"])
        for mode in args.modes:
            session = RetrievalSession.of(index)
            t0 = time.perf_counter()
            results = session.run([q["query"] for q in queries], plan_options(args.budget, mode, args.rerank), k=100)
            secs = time.perf_counter() - t0
            per_kind: dict[str, list[tuple[float, float]]] = {k: [] for k in KINDS}
            plans: dict[str, int] = {}
            for q, res in zip(queries, results):
                ranked = [c.node_id for c in res.candidates]
                g = gold.get(q["qid"], set())
                per_kind[q["kind"]].append((rr_at(ranked, g), recall_at(ranked, g)))
                plans[res.plan] = plans.get(res.plan, 0) + 1
            allv = [v for vs in per_kind.values() for v in vs]
            row = {"package": pkg, "mode": mode, "qps": len(queries) / secs, "plans": plans}
            for kind, vs in list(per_kind.items()) + [("overall", allv)]:
                row[f"{kind}_rr"] = sum(v[0] for v in vs) / max(len(vs), 1)
                row[f"{kind}_r"] = sum(v[1] for v in vs) / max(len(vs), 1)
            rows.append(row)
            print(_fmt(row), file=sys.stderr)
    print("\n| package | mode | semantic RR@10 / R@10 | lexical RR@10 / R@10 | structural RR@10 / R@10 | overall RR@10 / R@10 | q/s |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [f"{row[f'{k}_rr']:.3f} / {row[f'{k}_r']:.3f}" for k in KINDS + ("overall",)]
        print(f"| {row['package']} | {row['mode']} | " + " | ".join(cells) + f" | {row['qps']:.0f} |")
    return 0


def _fmt(row) -> str:
    return (f"{row['package']:8s} {row['mode']:7s} sem {row['semantic_rr']:.3f} lex {row['lexical_rr']:.3f} "
            f"str {row['structural_rr']:.3f} all {row['overall_rr']:.3f}  ({row['qps']:.0f} q/s) {row['plans']}")


if __name__ == "__main__":
    sys.exit(main())
