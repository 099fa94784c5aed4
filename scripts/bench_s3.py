#!/usr/bin/env python3
"""Benchmark: the same job with index, queries and results on a local disk and on S3 (moto's
server on 127.0.0.1: a real S3 API, local network, so this measures CodeNib's request pattern,
not a cloud's bandwidth). Runs in this process without Ray (`--local-below`), so the difference
is the object-storage path: copying the index into the node cache, and committing shards
(staging PUT, two copies, two deletes, a manifest PUT).

Needs `pip install "moto[server]" boto3`.

Usage:
    python scripts/bench_s3.py --index IDX [--queries 2000] [--shard-size 100] [--mode sparse]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

QUESTIONS = ["where is run_engine defined", "who calls Engine.prepare?", "what does Engine.start call?",
             "Turn the given text into a lowercase slug.", "Store an item", "helper", "callers of slugify"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--shard-size", type=int, default=100)
    ap.add_argument("--mode", default="sparse")
    args = ap.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from codenib.batch.driver import RunOptions, run_job
    from codenib.index.remote import IndexCacheDir
    from codenib.core.storage import StorageConfig

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
        t0 = time.perf_counter()
        IndexCacheDir(str(work / "fetch"), storage=storage).local("s3://bench/idx")
        fetch = time.perf_counter() - t0
        t0 = time.perf_counter()
        IndexCacheDir(str(work / "fetch"), storage=storage).local("s3://bench/idx")
        hit = time.perf_counter() - t0
        common = dict(mode=args.mode, shard_size=args.shard_size, local_below=10**9, progress=False)
        t0 = time.perf_counter()
        local = run_job(RunOptions(queries=str(work / "q.parquet"), index=args.index, out=str(work / "out"), **common),
                        log=lambda m: None)
        t_local = time.perf_counter() - t0
        t0 = time.perf_counter()
        remote = run_job(RunOptions(queries="s3://bench/q.parquet", index="s3://bench/idx", out="s3://bench/out",
                                    index_cache=str(work / "cache"), **common), log=lambda m: None, storage=storage)
        t_s3 = time.perf_counter() - t0
        shards = local.shards
        print(f"index {size:,} bytes: copy into the node cache {fetch * 1000:.0f} ms, verified hit {hit * 1000:.0f} ms")
        print(f"local -> local: {local.queries} queries, {shards} shards in {t_local:.2f}s")
        print(f"s3 -> s3:       {remote.queries} queries, {remote.shards} shards in {t_s3:.2f}s "
              f"(+{(t_s3 - t_local) * 1000 / max(1, shards):.0f} ms per shard, first copy included)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
