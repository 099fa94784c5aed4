#!/usr/bin/env python3
"""Throughput of the Ray Data adapter against `codenib run`, on the same Ray session.

    python scripts/bench_ray_data.py [--index IDX | --corpus DIR] [--queries 10000] [--rounds 3]
        [--concurrency N] [--batch-size 256] [--blocks 0]

One local Ray is started; the same query set (varied queries: names, behaviour questions,
graph questions, bug reports; unique qids) runs through `codenib run` (`run_job` on that Ray:
the driver plans, the graph and engine actors execute) and through
`ray.data.read_parquet(...).map_batches(CodeNibRetrieve, ...)`, in interleaved rounds whose
order rotates (`benchkit.timed_rounds`), so that load from other processes hits both sides
alike. Each side is timed in wall seconds (its work runs in Ray's worker processes, which the
driver's CPU clock does not see) from its start to its last row, actor start-up included;
both must give the same rows. Prints both throughputs and the median of the per-round ratios
(target: the adapter at >= 0.8x `codenib run`), and the CPU seconds each side spent (this
process and its descendants, where the Ray it started runs: `benchkit.tree_cpu_seconds`).

The adapter's query set is split into `--blocks` blocks first: a one-row-group file reads as
one block, which one actor takes whole (`--one-block` adds that as a third side).

Without --index, a sparse-only index (`--no-dense`) of --corpus (default: CodeNib's own
source) is built in a temporary folder: fast on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchkit import (Row, describe, finish, load_note, log, out, rate_table, timed_rounds,  # noqa: E402
                      tree_cpu_seconds)

#: Query templates; `{}` takes a name from the index so that the texts vary.
TEMPLATES = [
    "where is {} defined",
    "who calls {}?",
    "what does {} call?",
    "{}",
    "how does {} handle an empty input and what does it return",
    "Combine several ranked candidate lists with weighted reciprocal rank fusion.",
    "TypeError in {} when the argument is None\n\nTraceback (most recent call last):\n"
    "  File \"codenib/ops/retrieve.py\", line 120, in {}\nTypeError: bad operand\n\n"
    "I expected a clear error message naming the argument instead of a crash deep in the call. " * 1,
]
TARGET = 0.8
RUN, ADAPTER, ONE_BLOCK = "codenib run", "ray data adapter", "ray data adapter, one block"


def build_index(corpus: Path, tmp: Path) -> str:
    from codenib.compiler.build import build_index as build
    from codenib.compiler.build_options import BuildOptions

    out_dir = tmp / "index"
    build(corpus, out_dir, BuildOptions(dense=False, progress=False))
    return str(out_dir)


def write_queries(index: str, n: int, path: Path) -> Path:
    names = pq.read_table(Path(index) / "nodes.parquet", columns=["name", "kind"]).to_pylist()
    names = sorted({r["name"] for r in names if r["kind"] in ("function", "method", "class")})
    texts = [TEMPLATES[i % len(TEMPLATES)].format(names[i % len(names)], names[(i * 7) % len(names)])
             for i in range(n)]
    pq.write_table(pa.table({"qid": [f"q{i:06d}" for i in range(n)], "query": texts}), path)
    return path


def run_codenib(index: str, queries: Path, out_dir: Path, k: int) -> pa.Table:
    import shutil

    from codenib.batch.driver import RunOptions, run_job
    from codenib.core.results import read_results

    shutil.rmtree(out_dir, ignore_errors=True)   # a fresh job each round, never a resume
    run_job(RunOptions(queries=str(queries), index=index, out=str(out_dir), k=k, progress=False, run_tag="bench"),
            log=lambda m: None)
    return read_results(out_dir)


def read_query_blocks(queries: Path, blocks: int):
    """The query file as a Dataset of `blocks` blocks (1: as Ray reads it)."""
    import ray.data

    ds = ray.data.read_parquet(str(queries))
    # A query file of one row group reads as one block whatever `override_num_blocks` asks
    # (Ray 2.60), and one block is one task of one actor: the other actors would idle.
    return ds.repartition(blocks) if blocks > 1 else ds


def run_ray_data(index: str, queries: Path, k: int, concurrency: int, batch_size: int, blocks: int) -> pa.Table:
    from codenib.integrations.ray_data import CodeNibRetrieve

    ds = read_query_blocks(queries, blocks).map_batches(
        CodeNibRetrieve, fn_constructor_kwargs={"index": index, "k": k, "run_tag": "bench"},
        concurrency=concurrency, batch_size=batch_size, batch_format="pyarrow", num_cpus=0.5)
    return pa.concat_tables([pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
                             for b in ds.iter_batches(batch_format="pyarrow", batch_size=None)])


def rows_key(table: pa.Table) -> list[tuple]:
    cols = ("qid", "rank", "node_id", "score", "plan")
    return sorted(zip(*(table.column(c).to_pylist() for c in cols)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", help="an index folder (default: a --no-dense index of --corpus)")
    ap.add_argument("--corpus", type=Path, default=ROOT / "codenib", help="what to index without --index")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each runs both sides once)")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, help="adapter actors")
    ap.add_argument("--batch-size", type=int, default=256, help="rows per map_batches batch")
    ap.add_argument("--blocks", type=int, default=0,
                    help="blocks the query set is split into before the adapter (default: 4 per actor; "
                         "1: as Ray reads a one-row-group file, which one actor takes whole)")
    ap.add_argument("--one-block", action="store_true",
                    help="also run the adapter on the query file as Ray reads it (one block), as a third side")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the ratio misses the target")
    args = ap.parse_args(argv)
    blocks = args.blocks or 4 * args.concurrency

    import ray.data

    from codenib.batch.raysession import start_ray, stop_ray

    out(f"CodeNib Ray Data adapter against `codenib run`: {args.queries} queries, k {args.k}, "
        f"{os.cpu_count()} CPUs; adapter: concurrency {args.concurrency}, batch {args.batch_size}, blocks {blocks}")
    note = load_note("before the run")
    if note:
        out(note)
    results: dict[str, pa.Table] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        index = args.index or build_index(args.corpus, tmp)
        queries = write_queries(index, args.queries, tmp / "queries.parquet")
        # The embedded local Ray `codenib run` starts (127.0.0.1 only); a Ray this process
        # already runs (a test's) is used as it is and left running.
        started = start_ray(None, False, lambda m: None)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False
            sides = {RUN: lambda: results.__setitem__(RUN, run_codenib(index, queries, tmp / "run", args.k)),
                     ADAPTER: lambda: results.__setitem__(ADAPTER, run_ray_data(
                         index, queries, args.k, args.concurrency, args.batch_size, blocks))}
            if args.one_block:
                sides[ONE_BLOCK] = lambda: results.__setitem__(ONE_BLOCK, run_ray_data(
                    index, queries, args.k, args.concurrency, args.batch_size, 1))
            log(f"{args.rounds} interleaved rounds of {args.queries} queries")
            # CPU seconds of this process and its descendants: the Ray it started runs there.
            timings = timed_rounds(sides, args.rounds, desc="ray data vs codenib run",
                                   cpu=tree_cpu_seconds if started else None)
        finally:
            if started:
                stop_ray()
    same = all(rows_key(results[RUN]) == rows_key(t) for name, t in results.items() if name != RUN)
    out(f"\nindex {'given' if args.index else f'{args.corpus} --no-dense'}; "
        f"{results[RUN].num_rows} rows each side; same rows: {same}")
    out(rate_table(timings, args.queries, RUN))
    rows = [Row(f"{ADAPTER} / {RUN} throughput", describe(timings[ADAPTER], args.queries),
                describe(timings[RUN], args.queries), timings[ADAPTER].speedup_over(timings[RUN]), TARGET)]
    if ONE_BLOCK in timings:
        rows.append(Row(f"{ONE_BLOCK} / {RUN} throughput", describe(timings[ONE_BLOCK], args.queries),
                        describe(timings[RUN], args.queries), timings[ONE_BLOCK].speedup_over(timings[RUN])))
    if timings[RUN].cpu:
        # On a machine that other work keeps busy, each side gets CPU in proportion to its
        # busy processes more than to its needs: CPU seconds per query say what each costs.
        rows.append(Row(f"CPU seconds, {RUN} / {ADAPTER}", f"{timings[ADAPTER].cpu_median:.1f} s",
                        f"{timings[RUN].cpu_median:.1f} s", timings[ADAPTER].cpu_saving_over(timings[RUN])))
    rows.append(Row("same rows every side", str(same), status="pass" if same else "FAIL"))
    status = finish(rows, "Ray Data adapter", args.strict, end_note=True)
    return status if same else 1


if __name__ == "__main__":
    sys.exit(main())
