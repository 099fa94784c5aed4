#!/usr/bin/env python3
"""Benchmark: queries/s of the Ray batch job against an in-process loop over the same pipelines,
and of the Ray Data step (`map_batches(CodeNibRetrieve, ...)`) beside them.

Both run in one process on the same machine, on the same index and query sets, per plan
(fixed modes and auto), at several query-set sizes. The in-process loop runs the job's own
shard function (`process_shard`) with local engines, shard by shard; the Ray job is
`run_job` on an embedded local Ray (started once, outside the timings). Both timings include
loading the index (the Ray actors load it in their constructors). Target: Ray >= 0.8x the
in-process loop on 2 cores, and > 1x where there is parallelism to use.

By default the in-process loop runs warm, in this process, after the earlier modes have
imported torch and numba; the Ray job's actors are fresh processes that pay those imports,
which dominates at 1,000 queries. `--cold` runs each in-process loop in a fresh process.

The Ray Data column reads the same query set with `ray.data.read_parquet`, maps it through
`CodeNibRetrieve` (a pool of `--ray-data-concurrency` actors, each loading the index once,
batches of `--shard-size` queries) and materializes the rows; like the Ray job it is timed
from the start, actor start-up and index loads included, and writes nothing (the Ray job
also commits its Parquet folder).

Usage:
    python scripts/bench_batch.py --index ~/.cache/codenib-dev/idx/click \\
        --queries ../shared/eval/dev/click/queries.parquet [--sizes 1000 10000] [--modes auto sparse]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MODES = ("sparse", "dense", "hybrid", "graph", "auto")


def make_queries(source: Path, n: int, out: Path) -> Path:
    """`n` queries cycled from `source`, with unique qids (a realistic mix of kinds)."""
    base = pq.read_table(source).to_pylist()
    rows = [{"qid": f"b{i:06d}", "query": base[i % len(base)]["query"]} for i in range(n)]
    pq.write_table(pa.table({"qid": [r["qid"] for r in rows], "query": [r["query"] for r in rows]}), out)
    return out


def in_process(index_dir: str, queries: Path, mode: str, shard_size: int) -> float:
    from codenib.batch.queries import read_query_set
    from codenib.batch.session import RetrievalSession
    from codenib.batch.worker import ShardOptions, process_shard
    from codenib.model.planner import plan_options, plan_rows

    from codenib.engines import models

    models.MODEL_CACHE.clear()  # both sides pay for loading the model, as the actors do
    t0 = time.perf_counter()
    session = RetrievalSession.load(index_dir, device="cpu")
    qs = read_query_set(queries, index=index_dir)
    opts = ShardOptions(mode=mode, run_tag="bench")
    n = 0
    qs = dataclasses.replace(qs, rows=plan_rows(qs.rows, plan_options(opts.budget, mode),
                                                {r.index_path: session.capabilities for r in qs.rows}))
    for shard in qs.shards(shard_size):
        results, plans = process_shard(shard, session, opts)
        n += plans.num_rows
    return n / (time.perf_counter() - t0)


def in_fresh_process(index_dir: str, queries: Path, mode: str, shard_size: int) -> float:
    """`in_process` in a new Python process, timed from outside: it pays the imports (torch,
    numba, the model) that the Ray job's fresh actors pay, and that a warm loop has done."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        t0 = time.perf_counter()
        pool.apply(in_process, (index_dir, queries, mode, shard_size))
        seconds = time.perf_counter() - t0
    return pq.ParquetFile(queries).metadata.num_rows / seconds


def on_ray(index_dir: str, queries: Path, mode: str, shard_size: int, workdir: Path) -> float:
    from codenib.batch.driver import RunOptions, run_job

    out = workdir / f"ray-{mode}-{queries.stem}"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    summary = run_job(RunOptions(queries=str(queries), index=index_dir, out=str(out), mode=mode,
                                 shard_size=shard_size, device="cpu", progress=False), log=lambda m: None)
    return summary.queries / (time.perf_counter() - t0)


def on_ray_data(index_dir: str, queries: Path, mode: str, batch_size: int, concurrency: int) -> float:
    import ray

    from codenib.integrations.ray_data import CodeNibRetrieve

    # Actors that took every CPU would leave none for the read tasks that feed them (a hang):
    # the pool shares all CPUs but one, as the Ray job's actors share the cluster.
    cpus = ray.cluster_resources().get("CPU", 1.0)
    t0 = time.perf_counter()
    ds = ray.data.read_parquet(str(queries)).map_batches(
        CodeNibRetrieve, fn_constructor_kwargs={"index": index_dir, "mode": mode, "device": "cpu"},
        concurrency=concurrency, num_cpus=max(0.1, (cpus - 1) / concurrency), batch_size=batch_size,
        batch_format="pyarrow")
    rows = ds.materialize()
    seconds = time.perf_counter() - t0
    queries_done = len({r["qid"] for r in rows.select_columns(["qid"]).take_all()})
    return queries_done / seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default=str(Path.home() / ".cache/codenib-dev/idx/click"))
    ap.add_argument("--queries", default=str(Path(__file__).resolve().parents[2] / "shared/eval/dev/click/queries.parquet"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--shard-size", type=int, default=256)
    ap.add_argument("--cold", action="store_true",
                    help="run each in-process loop in a fresh Python process (it pays its imports "
                         "and model load, as the Ray job's fresh actors do); default: in this process")
    ap.add_argument("--ray-data-concurrency", type=int, default=None,
                    help="CodeNibRetrieve actors of the Ray Data column (default: one per CPU, at most 16)")
    ap.add_argument("--no-ray-data", action="store_true", help="skip the Ray Data column")
    args = ap.parse_args(argv)
    concurrency = args.ray_data_concurrency or max(1, min(16, os.cpu_count() or 1))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from codenib.batch.raysession import start_ray, stop_ray

    start_ray(None, False, lambda m: None)  # the embedded local Ray, as `codenib run` starts it
    workdir = Path(tempfile.mkdtemp(prefix="codenib-bench-"))
    rows = []
    try:
        for size in args.sizes:
            qpath = make_queries(Path(args.queries), size, workdir / f"q{size}.parquet")
            for mode in args.modes:
                local = (in_fresh_process if args.cold else in_process)(args.index, qpath, mode, args.shard_size)
                remote = on_ray(args.index, qpath, mode, args.shard_size, workdir)
                data = (math.nan if args.no_ray_data
                        else on_ray_data(args.index, qpath, mode, args.shard_size, concurrency))
                rows.append((size, mode, local, remote, data))
                print(f"{size:>6} {mode:<7} in-process {local:8.1f} q/s   ray {remote:8.1f} q/s   "
                      f"ratio {remote / local:5.2f}x   ray data {data:8.1f} q/s", file=sys.stderr, flush=True)
    finally:
        stop_ray()  # and the embedded Ray's watchdog, which stops its lingering agents
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\ncores: {os.cpu_count()}   index: {args.index}   shard size: {args.shard_size}   "
          f"in-process loop: {'a fresh process each (--cold)' if args.cold else 'warm, in this process'}   "
          f"Ray Data actors: {concurrency}")
    print("| queries | plan (mode) | in-process q/s | Ray job q/s | ratio | target | Ray Data q/s | Ray Data / Ray job |")
    print("|---|---|---|---|---|---|---|---|")
    for size, mode, local, remote, data in rows:
        target = 0.8 if (os.cpu_count() or 1) <= 2 else 1.0
        verdict = "pass" if remote / local >= target else "FAIL"
        print(f"| {size} | {mode} | {local:.1f} | {remote:.1f} | {remote / local:.2f}x | >= {target}x {verdict} "
              f"| {data:.1f} | {data / remote:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
