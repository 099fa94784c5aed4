#!/usr/bin/env python3
"""Benchmark: one Ray job over many small indexes against one job over a single index with
the same number of queries, in the same run, on the same embedded Ray.

The many-index job's indexes are copies of one index folder under distinct names (each a
separate index to the job: loaded, cached and evicted on its own). Queries cycle through
`--queries` (default: the batch tests' seven questions). Both jobs run `--mode sparse` by
default (the plan whose cost is the index load, not the encoder). The actors' LRU is bounded by
`--actor-memory` bytes. Prints queries/s of both, their ratio (target >= 0.8), and the LRU's hit
rate, loads, evictions, held bytes and peak RSS per actor.

Usage (the issue's size: 100 indexes x 100 queries against 1 index x 10,000 queries):
    python scripts/bench_many.py --index IDX [--indexes 100] [--per-index 100] [--actor-memory BYTES]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchkit import Row, describe, finish, load_note, log, out, rate_table, timed_rounds, tree_cpu_seconds

#: The many-index job's throughput against the single-index job's.
TARGET = 0.8
QUESTIONS = ["where is run_engine defined", "who calls Engine.prepare?", "what does Engine.start call?",
             "Turn the given text into a lowercase slug.", "Store an item", "helper", "callers of slugify"]


SINGLE = "1 index"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True, help="an index folder (copied --indexes times)")
    ap.add_argument("--indexes", type=int, default=100)
    ap.add_argument("--per-index", type=int, default=100)
    ap.add_argument("--queries", help="Parquet with a `query` column to cycle (default: seven test questions)")
    ap.add_argument("--mode", default="sparse")
    ap.add_argument("--shard-size", type=int, default=100)
    ap.add_argument("--actor-memory", type=int, default=None,
                    help="bytes per actor (default: the loaded parts of 8 indexes)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--order", choices=("interleaved", "grouped"), default="interleaved",
                    help="rows of the many-index set: indexes in turn (row i -> index i mod N), or each "
                         "index's rows together (the driver streams the set, so order decides which "
                         "shards it can route to an actor that holds their index)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (each runs both jobs once)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the ratio misses the target")
    args = ap.parse_args(argv)

    import ray

    from codenib.batch.driver import RunOptions, run_job
    from codenib.batch.raysession import start_ray, stop_ray
    from codenib.batch.worker import loaded_bytes

    texts = (pq.read_table(args.queries, columns=["query"]).column("query").to_pylist() if args.queries
             else QUESTIONS)
    total = args.indexes * args.per_index
    many_name = f"{args.indexes} indexes"
    work = Path(tempfile.mkdtemp(prefix="codenib-bench-many-"))
    try:
        root = work / "indexes"
        for i in range(args.indexes):
            shutil.copytree(args.index, root / f"idx{i:04d}")
        per_index_bytes = loaded_bytes(args.index, ("nodes.parquet", "edges.parquet", "sparse/"))
        budget = args.actor_memory or 8 * per_index_bytes
        many = [{"qid": f"m{i:07d}", "query": texts[i % len(texts)], "index": f"idx{i % args.indexes:04d}"}
                for i in range(total)]
        if args.order == "grouped":
            many.sort(key=lambda row: row["index"])
        single = [{"qid": f"s{i:07d}", "query": texts[i % len(texts)]} for i in range(total)]
        pq.write_table(pa.Table.from_pylist(many), work / "many.parquet")
        pq.write_table(pa.Table.from_pylist(single), work / "single.parquet")
        out(f"cores {os.cpu_count()}, ray {ray.__version__}, mode {args.mode}, shard size {args.shard_size}, "
            f"{args.order} rows, actor memory {budget:,} bytes ({per_index_bytes:,} per index loaded), "
            f"{args.rounds} interleaved round(s)")
        note = load_note("before the run")
        if note:
            out(note)
        common = dict(mode=args.mode, shard_size=args.shard_size, local_below=0, progress=False,
                      actor_memory=budget, workers=args.workers, max_indexes=10**6)
        summaries: dict[str, object] = {}

        def job(name: str, out_dir: Path, **where) -> None:
            shutil.rmtree(out_dir, ignore_errors=True)   # a fresh job each round, never a resume
            summaries[name] = run_job(RunOptions(out=str(out_dir), **where, **common), log=lambda m: None)

        sides = {SINGLE: partial(job, SINGLE, work / "out-single", queries=str(work / "single.parquet"),
                                 index=str(root / "idx0000")),
                 many_name: partial(job, many_name, work / "out-many", queries=str(work / "many.parquet"),
                                    index_root=str(root))}
        # A Ray this process already runs (a test's) is used as it is and left running.
        started = start_ray(None, False, lambda m: None)
        try:
            log(f"{args.rounds} round(s) of {total} queries per job")
            # CPU seconds of this process and its descendants: the Ray it started runs there.
            timings = timed_rounds(sides, args.rounds, desc="many vs single", cpu=tree_cpu_seconds if started else None)
        finally:
            if started:
                stop_ray()
        out(rate_table(timings, total, SINGLE))
        for name in sides:
            c = summaries[name].cache
            gets = c.get("hits", 0) + c.get("loads", 0)
            out(f"{name:>12}: hit rate {c.get('hits', 0) / gets if gets else 0:.1%}, {c.get('loads', 0)} loads, "
                f"{c.get('evictions', 0)} evictions (last round)")
            for i, a in enumerate(c.get("per_actor", [])):
                out(f"{'':>14}actor {i}: {a.get('hits', 0)} hits, {a.get('loads', 0)} loads, "
                    f"{a.get('evictions', 0)} evictions, peak held {a.get('peak_bytes', 0):,} B "
                    f"(budget {budget:,}), peak RSS {a.get('peak_rss', 0) / 2**20:.0f} MiB")
        ratio = timings[many_name].speedup_over(timings[SINGLE])
        out(json.dumps({"single_qps": total / timings[SINGLE].median, "many_qps": total / timings[many_name].median,
                        "cache_single": summaries[SINGLE].cache, "cache_many": summaries[many_name].cache},
                       default=str))
        rows = [Row(f"{many_name} / {SINGLE} throughput", describe(timings[many_name], total),
                    describe(timings[SINGLE], total), ratio, TARGET)]
        return finish(rows, "many indexes", args.strict, end_note=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
