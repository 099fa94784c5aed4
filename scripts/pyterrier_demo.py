#!/usr/bin/env python3
"""pt.Experiment over CodeNib on the demo set, beside `codenib run` + `codenib eval` on the same
index: the two tables should agree (needs `pip install 'codenib[pyterrier]'`).

Usage:
    python scripts/pyterrier_demo.py [--index codenib-demo/index] [--modes auto sparse]

Without --index it builds an index of the bundled sample (CodeNib's own source) without vectors
into a temporary folder first (`--dense` adds them: minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

MEASURES = ("RR@10", "R@10", "nDCG@10", "AP")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", help="an index of the bundled sample (default: build one)")
    ap.add_argument("--modes", nargs="+", default=["auto", "sparse"])
    ap.add_argument("--dense", action="store_true", help="with vectors, when building the index")
    args = ap.parse_args(argv)

    import ir_measures
    import pandas as pd
    import pyterrier as pt

    from codenib.batch.driver import RunOptions, run_job
    from codenib.commands.demo import data_file, sample_repository
    from codenib.eval.qrels import read_qrels
    from codenib.eval.report import EvalOptions, evaluate_results
    from codenib.eval.runs import read_results
    from codenib.integrations.pyterrier import CodeNib
    from codenib.core.specs import read_jsonl

    work = Path(tempfile.mkdtemp(prefix="codenib-pt-"))
    index = args.index
    if index is None:
        from codenib.compiler.build import build_index
        from codenib.compiler.build_options import BuildOptions

        index = str(work / "index")
        print(f"indexing {sample_repository()} -> {index}", file=sys.stderr)
        build_index(sample_repository(), index, BuildOptions(dense=args.dense, progress=False))
    queries = data_file("demo_queries.jsonl")
    topics = pd.DataFrame([{"qid": r["qid"], "query": r["query"]} for r in read_jsonl(queries)])
    qrels = pd.DataFrame([dict(zip(("qid", "_", "docno", "label"), line.split()))
                          for line in data_file("demo_qrels.txt").read_text().splitlines() if line.strip()])
    qrels["label"] = qrels["label"].astype(int)

    table = pt.Experiment([CodeNib(index, mode=m) for m in args.modes], topics, qrels[["qid", "docno", "label"]],
                          eval_metrics=[ir_measures.parse_measure(m) for m in MEASURES], names=args.modes)
    print("pt.Experiment:")
    print(table.to_string(index=False))
    print("\ncodenib run + codenib eval (node level):")
    worst = 0.0
    for mode in args.modes:
        out = work / f"run-{mode}"
        run_job(RunOptions(queries=str(queries), index=index, out=str(out), mode=mode, progress=False),
                log=lambda m: None)
        ev = evaluate_results(read_results(out), read_qrels(data_file("demo_qrels.txt"), warn=lambda m: None),
                              options=EvalOptions(measures=MEASURES), warn=lambda m: None)
        ours = ev.summary["systems"][out.name]["node"]
        print(f"{mode:<8} " + "  ".join(f"{m} {ours[m]:.4f}" for m in MEASURES))
        row = table[table.name == mode].iloc[0]
        worst = max(worst, max(abs(row[m] - ours[m]) for m in MEASURES))
    print(f"\nlargest difference: {worst:.2e}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
