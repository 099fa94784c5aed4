#!/usr/bin/env python3
"""Benchmark: the batch driver's own time on a query set (issue 39 item 5): validating,
checking indexes, planning and cutting every shard, without executing any query.

`run_job` runs with its job executor replaced by one that drains the job's shard stream
(every row read and planned as the real job would), so the time is the driver's alone.
Also counts the rows `plan_rows` was given (a row planned twice counts twice).

Without --index, the tests' fixture repository is written to a temporary folder and indexed
with dense vectors (the packaged model, CPU), so that the planner may choose dense plans and
rerankers (a sparse-only index needs no planning ahead of the job).

Usage:
    python scripts/bench_driver_plan.py [--index IDX] [--queries 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["where is run_engine defined", "who calls Engine.prepare?", "what does Engine.start call?",
             "Turn the given text into a lowercase slug.", "Store an item", "helper", "callers of slugify",
             "Traceback (most recent call last): File pkg/core.py, line 3, in run_engine"]


def build_index(work: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from codenib.compiler.build import build_index as build
    from codenib.compiler.build_options import BuildOptions
    from tests.fixture_repo import write_repo

    repo = write_repo(work / "repo")
    out = work / "index"
    build(repo, out, BuildOptions(progress=False, device="cpu"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", default="auto")
    args = ap.parse_args()

    import codenib.batch.driver as driver
    from codenib.batch.options import RunOptions

    work = Path(tempfile.mkdtemp(prefix="codenib-bench-driver-"))
    index = Path(args.index) if args.index else build_index(work)
    qpath = work / "queries.jsonl"
    with qpath.open("w", encoding="utf-8") as fh:
        for i in range(args.queries):
            fh.write(json.dumps({"qid": f"q{i}", "query": f"{QUESTIONS[i % len(QUESTIONS)]} {i}"}) + "\n")

    planned = [0]
    real_plan_rows = driver.plan_rows

    def counting_plan_rows(rows, *a, **kw):
        rows = list(rows)
        planned[0] += len(rows)
        return real_plan_rows(rows, *a, **kw)

    shards = [0]

    def drain(job, options, log):
        for _ in job.stream(frozenset()):
            shards[0] += 1
        return None

    driver.plan_rows = counting_plan_rows
    driver.execute = drain
    times = []
    for i in range(args.repeat):
        planned[0] = shards[0] = 0
        opts = RunOptions(queries=str(qpath), index=str(index), out=str(work / f"out{i}"), mode=args.mode,
                          progress=False, local_below=10**9)
        t = time.perf_counter()
        driver.run_job(opts, log=lambda m: None)
        times.append(time.perf_counter() - t)
    print(f"{args.queries} queries, mode {args.mode}: driver {min(times):.2f} s (best of {args.repeat}; "
          f"all {', '.join(f'{t:.2f}' for t in times)}), rows planned {planned[0]}, shards {shards[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
