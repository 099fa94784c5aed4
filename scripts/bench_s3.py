#!/usr/bin/env python3
"""Benchmark: the same job with index, queries and results on a local disk and on S3 (moto's
server on 127.0.0.1: a real S3 API, local network, so this measures CodeNib's request pattern,
not a cloud's bandwidth). Runs in this process without Ray (`--local-below`), so the difference
is the object-storage path: copying the index into the node cache, and committing shards
(staging PUT, two copies, two deletes, a manifest PUT). The two jobs run in interleaved
rounds (`--rounds`, order rotating); the ratio is the median of per-round pairs.

Needs `pip install "moto[server]" boto3`.

Usage:
    python scripts/bench_s3.py --index IDX [--queries 2000] [--shard-size 100] [--mode sparse] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchkit import Row, describe, finish, out, rate_table, timed, timed_rounds

QUESTIONS = ["where is run_engine defined", "who calls Engine.prepare?", "what does Engine.start call?",
             "Turn the given text into a lowercase slug.", "Store an item", "helper", "callers of slugify"]


LOCAL, S3 = "local -> local", "s3 -> s3"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--shard-size", type=int, default=100)
    ap.add_argument("--mode", default="sparse")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each runs both jobs once)")
    args = ap.parse_args(argv)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from codenib.batch.driver import RunOptions, run_job
    from codenib.core.storage import StorageConfig
    from codenib.index.remote import IndexCacheDir

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    storage = StorageConfig(endpoint=endpoint)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="bench")
    work = Path(tempfile.mkdtemp(prefix="codenib-bench-s3-"))
    try:
        for path in sorted(Path(args.index).rglob("*")):
            if path.is_file():
                s3.upload_file(str(path), "bench", f"idx/{path.relative_to(args.index).as_posix()}")
        rows = [{"qid": f"q{i:07d}", "query": QUESTIONS[i % len(QUESTIONS)]} for i in range(args.queries)]
        pq.write_table(pa.Table.from_pylist(rows), work / "q.parquet")
        s3.upload_file(str(work / "q.parquet"), "bench", "q.parquet")
        size = sum(p.stat().st_size for p in Path(args.index).rglob("*") if p.is_file())
        out(f"CodeNib object-storage benchmark: {args.queries} queries, shard size {args.shard_size}, mode "
            f"{args.mode}, index {size:,} bytes, moto S3 on {endpoint}, {args.rounds} interleaved round(s)")
        _, fetch = timed(lambda: IndexCacheDir(str(work / "fetch"), storage=storage).local("s3://bench/idx"))
        _, hit = timed(lambda: IndexCacheDir(str(work / "fetch"), storage=storage).local("s3://bench/idx"))
        common = dict(mode=args.mode, shard_size=args.shard_size, local_below=10**9, progress=False)
        summaries: dict[str, object] = {}
        round_no = iter(range(10**6))

        def local_job() -> None:
            shutil.rmtree(work / "out", ignore_errors=True)   # a fresh job each round, never a resume
            summaries[LOCAL] = run_job(RunOptions(queries=str(work / "q.parquet"), index=args.index,
                                                  out=str(work / "out"), **common), log=lambda m: None)

        def s3_job() -> None:
            # A new results prefix and an empty node cache each round: the first copy is included.
            shutil.rmtree(work / "cache", ignore_errors=True)
            summaries[S3] = run_job(RunOptions(queries="s3://bench/q.parquet", index="s3://bench/idx",
                                               out=f"s3://bench/out{next(round_no)}", index_cache=str(work / "cache"),
                                               **common), log=lambda m: None, storage=storage)

        timings = timed_rounds({LOCAL: local_job, S3: s3_job}, args.rounds, desc="local vs s3")
        shards = summaries[LOCAL].shards
        out(rate_table(timings, args.queries, LOCAL))
        extra_ms = (timings[S3].median - timings[LOCAL].median) * 1000 / max(1, shards)
        out(f"{LOCAL}: {summaries[LOCAL].queries} queries, {shards} shards; {S3}: {summaries[S3].queries} queries, "
            f"{summaries[S3].shards} shards (+{extra_ms:.0f} ms per shard, first copy included)")
        rows = [Row("index: copy into the node cache", f"{fetch * 1000:.0f} ms"),
                Row("index: verified cache hit", f"{hit * 1000:.0f} ms"),
                Row(f"{S3} / {LOCAL} throughput", describe(timings[S3], args.queries),
                    describe(timings[LOCAL], args.queries), timings[S3].speedup_over(timings[LOCAL]))]
        return finish(rows, "object storage", strict=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
