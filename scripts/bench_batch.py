#!/usr/bin/env python3
"""Benchmark: queries/s of the Ray batch job against an in-process loop over the same pipelines,
and of the Ray Data step (`map_batches(CodeNibRetrieve, ...)`) beside them.

Both run in one process on the same machine, on the same index and query sets, per plan
(fixed modes and auto), at several query-set sizes. The in-process loop runs the job's own
shard function (`process_shard`) with local engines, shard by shard; the Ray job is
`run_job` on an embedded local Ray (started once, outside the timings). Both timings include
loading the index (the Ray actors load it in their constructors). Target: Ray >= 0.8x the
in-process loop on 2 cores, and > 1x where there is parallelism to use. The sides run in
interleaved rounds (`--rounds`, order rotating: `benchkit.timed_rounds`), timed in wall
seconds (Ray's work runs in other processes); each ratio is the median of per-round pairs.

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
        --queries ../shared/eval/dev/click/queries.parquet [--sizes 1000 10000] [--modes auto sparse] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchkit import Row, describe, finish, load_note, log, out, rate_table, timed_rounds, tree_cpu_seconds

MODES = ("sparse", "dense", "hybrid", "graph", "auto")


def make_queries(source: Path, n: int, out: Path) -> Path:
    """`n` queries cycled from `source`, with unique qids (a realistic mix of kinds)."""
    base = pq.read_table(source).to_pylist()
    rows = [{"qid": f"b{i:06d}", "query": base[i % len(base)]["query"]} for i in range(n)]
    pq.write_table(pa.table({"qid": [r["qid"] for r in rows], "query": [r["query"] for r in rows]}), out)
    return out


def in_process(index_dir: str, queries: Path, mode: str, shard_size: int) -> int:
    from codenib.batch.queries import read_query_set
    from codenib.model.session import RetrievalSession
    from codenib.batch.worker import ShardOptions, process_shard
    from codenib.model.planner import plan_options, plan_rows
    from codenib.engines import models

    models.MODEL_CACHE.clear()  # both sides pay for loading the model, as the actors do
    session = RetrievalSession.load(index_dir, device="cpu")
    qs = read_query_set(queries, index=index_dir)
    opts = ShardOptions(mode=mode, run_tag="bench")
    n = 0
    qs = dataclasses.replace(qs, rows=plan_rows(qs.rows, plan_options(opts.budget, mode),
                                                {r.index_path: session.capabilities for r in qs.rows}))
    for shard in qs.shards(shard_size):
        results, plans = process_shard(shard, session, opts)
        n += plans.num_rows
    return n


def in_fresh_process(index_dir: str, queries: Path, mode: str, shard_size: int) -> int:
    """`in_process` in a new Python process: it pays the imports (torch, numba, the model)
    that the Ray job's fresh actors pay, and that a warm loop has done."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(in_process, (index_dir, queries, mode, shard_size))


def on_ray(index_dir: str, queries: Path, mode: str, shard_size: int, workdir: Path) -> int:
    from codenib.batch.driver import RunOptions, run_job

    out = workdir / f"ray-{mode}-{queries.stem}"
    shutil.rmtree(out, ignore_errors=True)   # a fresh job each round, never a resume
    summary = run_job(RunOptions(queries=str(queries), index=index_dir, out=str(out), mode=mode,
                                 shard_size=shard_size, device="cpu", progress=False), log=lambda m: None)
    return summary.queries


def on_ray_data(index_dir: str, queries: Path, mode: str, batch_size: int, concurrency: int) -> int:
    import ray

    from codenib.integrations.ray_data import CodeNibRetrieve

    # Actors that took every CPU would leave none for the read tasks that feed them (a hang):
    # the pool shares all CPUs but one, as the Ray job's actors share the cluster.
    cpus = ray.cluster_resources().get("CPU", 1.0)
    ds = ray.data.read_parquet(str(queries)).map_batches(
        CodeNibRetrieve, fn_constructor_kwargs={"index": index_dir, "mode": mode, "device": "cpu"},
        concurrency=concurrency, num_cpus=max(0.1, (cpus - 1) / concurrency), batch_size=batch_size,
        batch_format="pyarrow")
    rows = ds.materialize()
    return len({r["qid"] for r in rows.select_columns(["qid"]).take_all()})


IN_PROCESS, RAY_JOB, RAY_DATA = "in-process loop", "ray job", "ray data"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default=str(Path.home() / ".cache/codenib-dev/idx/click"))
    ap.add_argument("--queries", default=str(Path(__file__).resolve().parents[2] / "shared/eval/dev/click/queries.parquet"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--shard-size", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1,
                    help="interleaved rounds per size and mode (each runs every side once; ratios are medians)")
    ap.add_argument("--cold", action="store_true",
                    help="run each in-process loop in a fresh Python process (it pays its imports "
                         "and model load, as the Ray job's fresh actors do); default: in this process")
    ap.add_argument("--ray-data-concurrency", type=int, default=None,
                    help="CodeNibRetrieve actors of the Ray Data column (default: one per CPU, at most 16)")
    ap.add_argument("--no-ray-data", action="store_true", help="skip the Ray Data column")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    concurrency = args.ray_data_concurrency or max(1, min(16, os.cpu_count() or 1))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from codenib.batch.raysession import start_ray, stop_ray

    cpus = os.cpu_count() or 1
    target = 0.8 if cpus <= 2 else 1.0
    out(f"CodeNib batch benchmark: {cpus} CPUs, index {args.index}, shard size {args.shard_size}, in-process "
        f"loop {'a fresh process each (--cold)' if args.cold else 'warm, in this process'}, Ray Data actors "
        f"{'-' if args.no_ray_data else concurrency}, {args.rounds} interleaved round(s)")
    note = load_note("before the run")
    if note:
        out(note)
    # The embedded local Ray, as `codenib run` starts it (started once, outside the timings);
    # a Ray this process already runs (a test's) is used as it is and left running.
    started = start_ray(None, False, lambda m: None)
    workdir = Path(tempfile.mkdtemp(prefix="codenib-bench-"))
    rows = []
    try:
        for size in args.sizes:
            qpath = make_queries(Path(args.queries), size, workdir / f"q{size}.parquet")
            for mode in args.modes:
                sides = {IN_PROCESS: partial(in_fresh_process if args.cold else in_process,
                                             args.index, qpath, mode, args.shard_size),
                         RAY_JOB: partial(on_ray, args.index, qpath, mode, args.shard_size, workdir)}
                if not args.no_ray_data:
                    sides[RAY_DATA] = partial(on_ray_data, args.index, qpath, mode, args.shard_size, concurrency)
                log(f"{size} queries, mode {mode}: {args.rounds} round(s)")
                # CPU seconds of this process and its descendants: the Ray it started runs there.
                timings = timed_rounds(sides, args.rounds, desc=f"{size} {mode}",
                                       cpu=tree_cpu_seconds if started else None)
                out(f"\n== {size} queries, mode {mode} ==")
                out(rate_table(timings, size, IN_PROCESS))
                ray_t = timings[RAY_JOB]
                rows.append(Row(f"{size} {mode}: ray job / in-process loop", describe(ray_t, size),
                                describe(timings[IN_PROCESS], size), ray_t.speedup_over(timings[IN_PROCESS]), target))
                if RAY_DATA in timings:
                    rows.append(Row(f"{size} {mode}: ray data / ray job", describe(timings[RAY_DATA], size),
                                    describe(ray_t, size), timings[RAY_DATA].speedup_over(ray_t)))
    finally:
        if started:
            stop_ray()  # and the embedded Ray's watchdog, which stops its lingering agents
        shutil.rmtree(workdir, ignore_errors=True)
    return finish(rows, "batch throughput", args.strict, end_note=True)


if __name__ == "__main__":
    sys.exit(main())
