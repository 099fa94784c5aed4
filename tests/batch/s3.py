"""Helpers of the object-storage tests: a moto S3 server on 127.0.0.1, buckets, uploads."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest


def start_s3():
    """moto's threaded S3 server on 127.0.0.1 and a free port: (server, endpoint URL)."""
    server_mod = pytest.importorskip("moto.server", reason="the object-storage tests need `pip install moto[server]`")
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def new_bucket(endpoint: str) -> str:
    name = f"codenib-{uuid.uuid4().hex[:10]}"
    client(endpoint).create_bucket(Bucket=name)
    return name


def upload_dir(endpoint: str, folder: Path, bucket: str, prefix: str) -> str:
    """Upload every file under `folder` to s3://bucket/prefix/...; returns the URI."""
    c = client(endpoint)
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            c.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return f"s3://{bucket}/{prefix}"


def listing(endpoint: str, bucket: str, prefix: str = "") -> dict[str, bytes]:
    """Every object under a prefix: key relative to it -> bytes."""
    c = client(endpoint)
    out = {}
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix):].lstrip("/")
            out[rel] = c.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def read_results_rows(endpoint: str, bucket: str, prefix: str) -> list[tuple]:
    """(qid, rank, node_id, score, plan) of every committed part of a results prefix, sorted."""
    import io
    import json

    import pyarrow.parquet as pq

    objs = listing(endpoint, bucket, prefix)
    manifest = json.loads(objs["_manifest.json"])
    rows = []
    for shard in manifest["shards"].values():
        for r in pq.read_table(io.BytesIO(objs[shard["file"]])).to_pylist():
            rows.append((r["qid"], r["rank"], r["node_id"], round(r["score"], 9), r["plan"]))
    return sorted(rows)
