"""Throughput of the Ray Data adapter against `codenib run`, on the same Ray session.

    python scripts/bench_ray_data.py [--index IDX] [--queries 10000] [--concurrency N]

One local Ray is started; the same query set (varied queries: names, behaviour questions,
graph questions, bug reports; unique qids) runs first through `codenib run` (`run_job` on
that Ray: the driver plans, the graph and engine actors execute) and then through
`ray.data.read_parquet(...).map_batches(CodeNibRetrieve, ...)`. Each side is timed from its
start to its last row, start-up included, and both must give the same rows. Prints both
throughputs and the ratio (target: the adapter at >= 0.8x `codenib run`).

Without --index, a sparse-only index (`--no-dense`) of CodeNib's own source is built in a
temporary folder: fast on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


def build_index(tmp: Path) -> str:
    from codenib.compiler.build import BuildOptions, build_index as build

    out = tmp / "index"
    build(ROOT / "codenib", out, BuildOptions(dense=False, progress=False))
    return str(out)


def write_queries(index: str, n: int, path: Path) -> Path:
    names = pq.read_table(Path(index) / "nodes.parquet", columns=["name", "kind"]).to_pylist()
    names = sorted({r["name"] for r in names if r["kind"] in ("function", "method", "class")})
    texts = [TEMPLATES[i % len(TEMPLATES)].format(names[i % len(names)], names[(i * 7) % len(names)])
             for i in range(n)]
    pq.write_table(pa.table({"qid": [f"q{i:06d}" for i in range(n)], "query": texts}), path)
    return path


def run_codenib(index: str, queries: Path, out: Path, k: int) -> tuple[float, pa.Table]:
    from codenib.batch.driver import RunOptions, run_job
    from codenib.core.results import read_results

    t0 = time.perf_counter()
    run_job(RunOptions(queries=str(queries), index=index, out=str(out), k=k, progress=False, run_tag="bench"),
            log=lambda m: None)
    secs = time.perf_counter() - t0
    return secs, read_results(out)


def run_ray_data(index: str, queries: Path, k: int, concurrency: int, batch_size: int,
                 blocks: int) -> tuple[float, pa.Table]:
    import ray.data

    from codenib.integrations.ray_data import CodeNibRetrieve

    t0 = time.perf_counter()
    # A one-file query set is one block, which one actor would take whole: split it.
    ds = ray.data.read_parquet(str(queries), override_num_blocks=blocks).map_batches(
        CodeNibRetrieve, fn_constructor_kwargs={"index": index, "k": k, "run_tag": "bench"},
        concurrency=concurrency, batch_size=batch_size, batch_format="pyarrow", num_cpus=0.5)
    table = pa.concat_tables([pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
                              for b in ds.iter_batches(batch_format="pyarrow", batch_size=None)])
    return time.perf_counter() - t0, table


def rows_key(table: pa.Table) -> list[tuple]:
    cols = ("qid", "rank", "node_id", "score", "plan")
    return sorted(zip(*(table.column(c).to_pylist() for c in cols)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", help="an index folder (default: a --no-dense index of CodeNib's source)")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, help="adapter actors")
    ap.add_argument("--batch-size", type=int, default=256, help="rows per map_batches batch")
    ap.add_argument("--blocks", type=int, default=0,
                    help="blocks the query set is read into (default: 4 per actor; 1: as Ray reads one file)")
    args = ap.parse_args()

    import ray
    import ray.data

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        index = args.index or build_index(tmp)
        queries = write_queries(index, args.queries, tmp / "queries.parquet")
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False
            run_s, run_rows = run_codenib(index, queries, tmp / "run", args.k)
            blocks = args.blocks or 4 * args.concurrency
            rd_s, rd_rows = run_ray_data(index, queries, args.k, args.concurrency, args.batch_size, blocks)
        finally:
            ray.shutdown()
    same = rows_key(run_rows) == rows_key(rd_rows)
    run_qps, rd_qps = args.queries / run_s, args.queries / rd_s
    print(f"queries {args.queries}, k {args.k}, index {'given' if args.index else 'codenib --no-dense'}")
    print(f"codenib run : {run_s:7.1f} s  {run_qps:8.1f} queries/s  ({run_rows.num_rows} rows)")
    print(f"ray data    : {rd_s:7.1f} s  {rd_qps:8.1f} queries/s  ({rd_rows.num_rows} rows; concurrency "
          f"{args.concurrency}, batch {args.batch_size}, blocks {args.blocks or 4 * args.concurrency})")
    print(f"ratio (ray data / codenib run): {rd_qps / run_qps:.2f}x   same rows: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
