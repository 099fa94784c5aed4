#!/usr/bin/env python3
"""Long bug-report queries: does fusion stay at or above the best single branch?

Builds SWE-bench-like reports deterministically from the dev sets' semantic queries: a
title (the docstring sentence), a few hundred words of prose, a traceback through a caller
of the target (real file paths and function names from the index), an error name and a
code snippet. Gold is the target node (and its file, at file level). Prints RR@10 and R@10
for the sparse, dense and hybrid branches and for auto, at node and file level.

Usage:
    python scripts/long_queries.py [--index-root ~/.cache/codenib-dev/idx] [--packages click jinja2]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import pyarrow.parquet as pq

from codenib.eval.metrics import evaluate, mean_of, to_file_qrels, to_file_run
from codenib.index.loaded import load_index
from codenib.model.session import RetrievalSession
from codenib.model.planner import plan_options
FILLER = (
    "We upgraded last week and since then our nightly pipeline fails on some inputs but not on others. "
    "I tried pinning the previous release and the problem goes away, so it looks like a regression. "
    "The environment is a fresh virtualenv on Linux with Python 3.11, nothing unusual installed. "
    "Expected behaviour: the call returns normally as it did before. Actual behaviour: it raises. "
    "I searched the issue tracker and found nothing similar. Happy to provide more details or test a fix. "
    "Steps to reproduce: install the package, run the snippet below, observe the traceback. "
)
ERRORS = ("TypeError", "ValueError", "AttributeError", "KeyError", "RuntimeError")


def make_report(rng: random.Random, sentence: str, target_row: int, index) -> str:
    nodes, graph = index.nodes, index.graph
    callers = [u for u, _ in graph.predecessors_idx(target_row, ["calls"]) if nodes.kind[u] != "file"]
    frames = []
    if callers:
        c = rng.choice(callers)
        frames.append((nodes.file[c], nodes.start_line[c] + 2, nodes.name[c]))
    frames.append((nodes.file[target_row], nodes.start_line[target_row] + 1, "<module>"))
    tb = "Traceback (most recent call last):\n" + "".join(
        f'  File "/home/user/venv/lib/python3.11/site-packages/{f}", line {ln}, in {fn}\n    ...\n'
        for f, ln, fn in frames)
    err = rng.choice(ERRORS)
    filler = " ".join(FILLER.split(". ")[i] for i in rng.sample(range(6), 6))
    return (f"{sentence}\n\n{filler}\n\n```python\nresult = run_thing(config)\n```\n\n{tb}{err}: "
            f"unexpected value\n\n{FILLER}{filler}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index-root", type=Path, default=Path.home() / ".cache/codenib-dev/idx")
    ap.add_argument("--eval", type=Path, default=Path(__file__).resolve().parents[2] / "shared/eval/dev")
    ap.add_argument("--packages", nargs="+", default=["click", "jinja2"])
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args(argv)
    print("| package | mode | node RR@10 | node R@10 | file RR@10 | file R@10 |")
    print("|---|---|---|---|---|---|")
    for pkg in args.packages:
        index = load_index(args.index_root / pkg)
        rng = random.Random(args.seed)
        queries = [q for q in pq.read_table(args.eval / pkg / "queries.parquet").to_pylist() if q["kind"] == "semantic"]
        gold = {r["qid"]: r["node_id"] for r in pq.read_table(args.eval / pkg / "qrels.parquet").to_pylist()}
        reports, qrels = {}, {}
        for q in queries:
            row = index.row_of[gold[q["qid"]]]
            reports[q["qid"]] = make_report(rng, q["query"], row, index)
            qrels[q["qid"]] = {gold[q["qid"]]: 1}
        words = sum(len(t.split()) for t in reports.values()) / len(reports)
        print(f"{pkg}: {len(reports)} reports, {words:.0f} words on average", file=sys.stderr)
        qids = list(reports)
        for mode in ("sparse", "dense", "hybrid", "auto"):
            results = RetrievalSession.of(index).run([reports[q] for q in qids], plan_options("balanced", mode), k=100)
            run = {q: [c.node_id for c in r.candidates] for q, r in zip(qids, results)}
            node = mean_of(evaluate(run, qrels, ["RR@10", "R@10"]))
            file = mean_of(evaluate(to_file_run(run), to_file_qrels(qrels), ["RR@10", "R@10"]))
            print(f"| {pkg} | {mode} | {node['RR@10']:.3f} | {node['R@10']:.3f} | {file['RR@10']:.3f} | "
                  f"{file['R@10']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
