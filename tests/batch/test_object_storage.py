"""Indexes, query sets and results on object storage: a real S3 API (moto's server on
127.0.0.1), the real pyarrow S3 filesystem and boto3 client, real Ray actors."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.commands.cli import main
from codenib.core.errors import BadInputError
from codenib.index.remote import STATS, IndexCacheDir
from codenib.core.results import read_results
from codenib.core.storage import StorageConfig
from tests.batch.conftest import QUERIES, write_queries
from tests.batch.s3 import client, listing, new_bucket, read_results_rows, upload_dir


def local_rows(out):
    return sorted((r["qid"], r["rank"], r["node_id"], round(r["score"], 9), r["plan"])
                  for r in read_results(out).to_pylist())


@pytest.fixture(scope="module")
def bucket(s3_endpoint):
    return new_bucket(s3_endpoint)


@pytest.fixture(scope="module")
def s3_indexes(s3_endpoint, bucket, fixture_index_dir, sparse_only_index_dir):
    return {"full": upload_dir(s3_endpoint, fixture_index_dir, bucket, "indexes/full"),
            "sparse": upload_dir(s3_endpoint, sparse_only_index_dir, bucket, "indexes/sparse")}


@pytest.fixture(scope="module")
def s3_queries(s3_endpoint, bucket, tmp_path_factory):
    path = write_queries(tmp_path_factory.mktemp("q") / "q.parquet", QUERIES)
    client(s3_endpoint).upload_file(str(path), bucket, "queries/q.parquet")
    return path, f"s3://{bucket}/queries/q.parquet"


def test_a_job_from_s3_to_s3_on_ray_matches_the_local_job(ray_session, s3_endpoint, bucket, s3_indexes, s3_queries,
                                                          sparse_only_index_dir, tmp_path):
    """Queries, index and results on S3, actors on Ray: the rows of the same job on local paths."""
    storage = StorageConfig(endpoint=s3_endpoint)
    local_q, uri_q = s3_queries
    local_out = tmp_path / "local"
    run_job(RunOptions(queries=str(local_q), index=str(sparse_only_index_dir), out=str(local_out), shard_size=3,
                       local_below=0, progress=False), log=lambda m: None)
    cache = tmp_path / "cache"
    out = f"s3://{bucket}/runs/r1"
    options = RunOptions(queries=uri_q, index=s3_indexes["sparse"], out=out, shard_size=3, local_below=0,
                         index_cache=str(cache), progress=False)
    summary = run_job(options, log=lambda m: None, storage=storage)
    assert summary.runner == "ray" and summary.shards_run == 3 and summary.errors == 0
    # Each actor loaded the one index once; the rest were hits of its LRU.
    assert summary.cache["actors"] >= 2 and summary.cache["loads"] <= summary.cache["actors"]
    assert summary.cache["hits"] > 0 and "LRU hit rate" in summary.render()
    objs = listing(s3_endpoint, bucket, "runs/r1")
    assert {"_SUCCESS", "_manifest.json", "plans.parquet"} <= set(objs)
    assert not [k for k in objs if k.startswith("_staging/") or k == "_LOCK"]
    assert read_results_rows(s3_endpoint, bucket, "runs/r1") == local_rows(local_out)
    # One verified copy, named by the manifest's own checksum, shared by driver and actors.
    manifest = json.loads((sparse_only_index_dir / "manifest.json").read_text())
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == [manifest["self_sha256"]]
    # A re-run resumes: nothing to do.
    again = run_job(options, log=lambda m: None, storage=storage)
    assert again.shards_run == 0 and again.shards_resumed == 3


def test_index_root_on_s3_resolves_names_and_turns_missing_ones_into_error_rows(s3_endpoint, bucket, s3_indexes,
                                                                                tmp_path):
    rows = [{"qid": "a", "query": "Turn the given text into a lowercase slug.", "index": "full"},
            {"qid": "b", "query": "who calls slugify?", "index": "sparse"},
            {"qid": "c", "query": "helper", "index": "missing"},
            {"qid": "d", "query": "helper", "index": "../indexes/full"}]
    qpath = write_queries(tmp_path / "multi.parquet", rows)
    out = f"s3://{bucket}/runs/multi"
    summary = run_job(RunOptions(queries=str(qpath), index_root=f"s3://{bucket}/indexes", out=out, mode="sparse",
                                 index_cache=str(tmp_path / "cache"), progress=False), log=lambda m: None,
                      storage=StorageConfig(endpoint=s3_endpoint))
    assert summary.errors == 2
    import io

    import pyarrow.parquet as pq

    plans = {p["qid"]: p for p in pq.read_table(io.BytesIO(
        listing(s3_endpoint, bucket, "runs/multi")["plans.parquet"])).to_pylist()}
    assert plans["a"]["error"] is None and plans["b"]["error"] is None
    assert "not found" in plans["c"]["error"] and "not a name under --index-root" in plans["d"]["error"]


def test_a_corrupted_cached_copy_is_detected_and_fetched_again(s3_endpoint, s3_indexes, sparse_only_index_dir,
                                                               tmp_path):
    from codenib.index.loaded import load_index

    cache = IndexCacheDir(str(tmp_path / "cache"), storage=StorageConfig(endpoint=s3_endpoint))
    first = cache.local(s3_indexes["sparse"])
    nodes = first / "nodes.parquet"
    original = nodes.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 0xFF            # one flipped byte, same size
    nodes.write_bytes(bytes(data))
    before = dict(STATS)
    messages = []
    again = cache.local(s3_indexes["sparse"], log=messages.append)
    assert again == first and nodes.read_bytes() == original
    assert STATS["refetches"] == before.get("refetches", 0) + 1
    assert "corrupt" in messages[0] and s3_indexes["sparse"] in messages[0]
    assert load_index(again).manifest["counts"] == load_index(sparse_only_index_dir).manifest["counts"]
    # A hit that verifies is a hit, not a fetch.
    cache.local(s3_indexes["sparse"])
    assert STATS["hits"] == before.get("hits", 0) + 1 and STATS["fetches"] == before.get("fetches", 0) + 1


def test_the_cache_evicts_least_recently_used_copies_by_bytes(s3_endpoint, s3_indexes, tmp_path):
    storage = StorageConfig(endpoint=s3_endpoint)
    roomy = IndexCacheDir(str(tmp_path / "c"), storage=storage)
    full, sparse = roomy.local(s3_indexes["full"]), roomy.local(s3_indexes["sparse"])
    size = sum(p.stat().st_size for p in full.rglob("*") if p.is_file())
    tight = IndexCacheDir(str(tmp_path / "c"), max_bytes=size + 1, storage=storage)
    assert tight.evict() == [full.name]            # least recently used first
    assert sparse.is_dir() and not full.exists()
    tight.local(s3_indexes["full"])                # fetched again; now sparse is the oldest
    assert not sparse.exists() and full.is_dir()


def test_a_copy_that_fails_its_checksums_is_bad_input_naming_the_uri(s3_endpoint, bucket, sparse_only_index_dir,
                                                                      s3_queries, tmp_path, monkeypatch, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(sparse_only_index_dir, broken)
    data = bytearray((broken / "nodes.parquet").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (broken / "nodes.parquet").write_bytes(bytes(data))
    code, err, uri = _run_uploaded(broken, "broken", s3_endpoint, bucket, s3_queries, tmp_path, monkeypatch, capsys)
    assert code == 2 and uri in err and "fails its checksums" in err and "upload the index folder again" in err
    assert listing(s3_endpoint, bucket, "runs/broken") == {}
    assert [p for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")] == []


@pytest.mark.parametrize("case", ["no-bucket", "unreachable", "missing-queries", "missing-index"])
def test_unusable_uris_exit_2_naming_the_uri(case, s3_endpoint, bucket, s3_indexes, s3_queries, tmp_path,
                                            monkeypatch, capsys):
    endpoint = "http://127.0.0.1:9" if case == "unreachable" else s3_endpoint
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", endpoint)
    queries, index, out = s3_queries[1], s3_indexes["sparse"], f"s3://{bucket}/runs/{case}"
    named = {"no-bucket": "s3://no-such-bucket-x/r", "unreachable": index,
             "missing-queries": f"s3://{bucket}/queries/nope.parquet", "missing-index": f"s3://{bucket}/indexes/nope"}
    if case == "no-bucket":
        out = named[case]
    elif case == "missing-queries":
        queries = named[case]
    elif case == "missing-index":
        index = named[case]
    t0 = time.time()
    code = main(["run", "--queries", queries, "--index", index, "--out", out, "--mode", "sparse",
                 "--index-cache", str(tmp_path / "cache"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert named[case] in err and "fix:" in err
    assert time.time() - t0 < 60
    assert listing(s3_endpoint, bucket, f"runs/{case}") == {}


def test_a_prefix_with_another_jobs_results_or_foreign_objects_is_refused_unchanged(s3_endpoint, bucket, s3_indexes,
                                                                                    s3_queries, tmp_path, monkeypatch,
                                                                                    capsys):
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    out = f"s3://{bucket}/runs/other"
    base = ["run", "--queries", s3_queries[1], "--index", s3_indexes["sparse"], "--out", out,
            "--index-cache", str(tmp_path / "cache"), "--quiet"]
    assert main(base + ["--mode", "sparse"]) == 0
    before = listing(s3_endpoint, bucket, "runs/other")
    capsys.readouterr()
    assert main(base + ["--mode", "graph"]) == 2
    err = capsys.readouterr().err
    assert "another job's results" in err and out in err
    assert listing(s3_endpoint, bucket, "runs/other") == before
    client(s3_endpoint).put_object(Bucket=bucket, Key="runs/other/NOTES.txt", Body=b"mine")
    assert main(base + ["--mode", "sparse"]) == 2
    err = capsys.readouterr().err
    assert f"{out}/NOTES.txt" in err and "--force" in err
    client(s3_endpoint).put_object(Bucket=bucket, Key="runs/unknown/data.csv", Body=b"x")
    assert main(base[:6] + [f"s3://{bucket}/runs/unknown"] + base[7:] + ["--mode", "sparse"]) == 2
    assert "holds no CodeNib results" in capsys.readouterr().err
    assert set(listing(s3_endpoint, bucket, "runs/unknown")) == {"data.csv"}


def test_the_lock_is_a_conditional_write_and_a_live_holder_wins(s3_endpoint, bucket):
    from codenib.batch.objsink import ObjectStoreSink

    storage = StorageConfig(endpoint=s3_endpoint)
    out = f"s3://{bucket}/runs/locked"
    first = ObjectStoreSink(out, "f" * 64, {"run_id": "r"}, 1, storage=storage)
    first.open()
    try:
        second = ObjectStoreSink(out, "f" * 64, {"run_id": "r"}, 1, storage=storage)
        with pytest.raises(BadInputError, match=f"pid {os.getpid()}"):
            second.open()
        # The precondition itself: a second create of _LOCK fails on the server.
        assert second._create("_LOCK", b"{}") is False
    finally:
        first.close()
    assert "_LOCK" not in listing(s3_endpoint, bucket, "runs/locked")
    # A lock left by a process of another host is not taken over.
    client(s3_endpoint).put_object(Bucket=bucket, Key="runs/locked/_LOCK",
                                   Body=json.dumps({"pid": 1, "host": "elsewhere"}).encode())
    with pytest.raises(BadInputError, match="pid 1 on elsewhere"):
        ObjectStoreSink(out, "f" * 64, {"run_id": "r"}, 1, storage=storage).open()


def test_resume_after_the_driver_is_killed(s3_endpoint, bucket, s3_indexes, sparse_only_index_dir, tmp_path):
    """Kill `codenib run` writing to S3 midway (its lock and staged objects stay behind): the
    re-run takes the dead driver's lock over and ends with the rows of an uninterrupted run."""
    many = [{"qid": f"m{i:03d}", "query": q["query"]} for i, q in enumerate(QUERIES * 20)]
    qpath = write_queries(tmp_path / "many.parquet", many)
    env = {**os.environ, "CODENIB_S3_ENDPOINT": s3_endpoint}
    prefix = "runs/killed"
    cmd = [sys.executable, "-m", "codenib.commands.cli", "run", "--queries", str(qpath), "--index",
           s3_indexes["sparse"], "--out", f"s3://{bucket}/{prefix}", "--shard-size", "1", "--mode", "sparse",
           "--index-cache", str(tmp_path / "cache"), "--quiet"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    c = client(s3_endpoint)
    try:
        deadline, committed = time.time() + 180, 0
        while time.time() < deadline and committed < 5:
            try:
                body = c.get_object(Bucket=bucket, Key=f"{prefix}/_manifest.json")["Body"].read()
                committed = len(json.loads(body)["shards"])
            except Exception:  # noqa: BLE001 - not written yet
                pass
            time.sleep(0.02)
        assert committed >= 5, "the job never committed five shards"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    left = listing(s3_endpoint, bucket, prefix)
    assert "_SUCCESS" not in left and "_LOCK" in left
    assert len(json.loads(left["_manifest.json"])["shards"]) < len(many)
    # What a driver killed between copying a part and committing it leaves: both are removed.
    c.put_object(Bucket=bucket, Key=f"{prefix}/part-00999.parquet", Body=b"half")
    c.put_object(Bucket=bucket, Key=f"{prefix}/_staging/.part-00998.parquet.1-deadbeef.tmp", Body=b"half")
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "taking over the lock" in rerun.stderr
    full = tmp_path / "full"
    run_job(RunOptions(queries=str(qpath), index=str(sparse_only_index_dir), out=str(full), shard_size=1,
                       mode="sparse", progress=False), log=lambda m: None)
    resumed = read_results_rows(s3_endpoint, bucket, prefix)
    assert resumed == local_rows(full)
    assert len({(q, r) for q, r, *_ in resumed}) == len(resumed)
    objs = listing(s3_endpoint, bucket, prefix)
    assert "part-00999.parquet" not in objs and not [k for k in objs if k.startswith("_staging/")]
    assert "_SUCCESS" in objs and "_LOCK" not in objs


def test_eval_reads_a_results_prefix_on_s3_as_it_reads_the_local_folder(s3_endpoint, bucket, s3_indexes, s3_queries,
                                                                        sparse_only_index_dir, tmp_path, monkeypatch,
                                                                        capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    qrels = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["q1", "q4", "q7"], "node_id": ["pkg/core.py::run_engine", "pkg/util.py::slugify",
                                                                   "pkg/util.py::helper"], "relevance": [1, 1, 1]}), qrels)
    out, local = f"s3://{bucket}/runs/eval", tmp_path / "eval"
    assert main(["run", "--queries", s3_queries[1], "--index", s3_indexes["sparse"], "--out", out, "--mode", "sparse",
                 "--index-cache", str(tmp_path / "cache"), "--quiet"]) == 0
    assert main(["run", "--queries", str(s3_queries[0]), "--index", str(sparse_only_index_dir), "--out", str(local),
                 "--mode", "sparse", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["eval", "--results", out, "--qrels", str(qrels)]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert main(["eval", "--results", str(local), "--qrels", str(qrels)]) == 0
    here = json.loads(capsys.readouterr().out)
    assert remote["levels"] == here["levels"] and remote["queries"] == here["queries"] and remote["levels"]
    assert main(["eval", "--results", f"s3://{bucket}/runs/none", "--qrels", str(qrels)]) == 2
    assert f"s3://{bucket}/runs/none" in capsys.readouterr().err


def test_other_pyarrow_filesystems_work_too_file_uri(s3_queries, sparse_only_index_dir, tmp_path):
    """`file://` goes through the same object-store sink (pyarrow's local filesystem)."""
    out = tmp_path / "via-uri"
    summary = run_job(RunOptions(queries=f"file://{s3_queries[0]}", index=f"file://{sparse_only_index_dir}",
                                 out=f"file://{out}", mode="sparse", index_cache=str(tmp_path / "cache"),
                                 progress=False), log=lambda m: None)
    plain = tmp_path / "plain"
    run_job(RunOptions(queries=str(s3_queries[0]), index=str(sparse_only_index_dir), out=str(plain), mode="sparse",
                       progress=False), log=lambda m: None)
    assert summary.errors == 0 and (out / "_SUCCESS").is_file() and not (out / "_LOCK").exists()
    assert local_rows(out) == local_rows(plain)


def test_rerank_refuses_object_storage_paths(tmp_path):
    from codenib.batch.options import RerankOptions

    with pytest.raises(BadInputError, match="local paths only"):
        RerankOptions(results=str(tmp_path), out="s3://bucket/runs/x").validate()


def test_unplaceable_actors_leave_nothing_on_the_store(ray_session, s3_endpoint, bucket, s3_indexes, s3_queries,
                                                       tmp_path):
    with pytest.raises(BadInputError, match="'nowhere'"):
        run_job(RunOptions(queries=s3_queries[1], index=s3_indexes["sparse"], out=f"s3://{bucket}/runs/unplaced",
                           local_below=0, actor_resources="nowhere=1", index_cache=str(tmp_path / "cache"),
                           progress=False), log=lambda m: None, storage=StorageConfig(endpoint=s3_endpoint))
    assert listing(s3_endpoint, bucket, "runs/unplaced") == {}


def test_an_index_in_the_store_layout_on_s3_is_refused_naming_the_uri(s3_endpoint, bucket, sparse_only_index_dir,
                                                                      s3_queries, tmp_path, monkeypatch, capsys):
    from codenib.compiler.compact import compact_index
    from codenib.core.store_backend import LocalBackend

    small = tmp_path / "small"
    shutil.copytree(sparse_only_index_dir, small)
    assert compact_index(small, LocalBackend(tmp_path / "store"), print)
    code, err, uri = _run_uploaded(small, "small", s3_endpoint, bucket, s3_queries, tmp_path, monkeypatch, capsys)
    assert code == 2 and uri in err and "in the store layout" in err and "--layout full" in err
    assert listing(s3_endpoint, bucket, "runs/small") == {}


def _run_uploaded(folder, name, s3_endpoint, bucket, s3_queries, tmp_path, monkeypatch, capsys):
    """`codenib run` over `folder` uploaded as `indexes/NAME`, results to `runs/NAME`: exit
    status, stderr and the index's URI."""
    uri = upload_dir(s3_endpoint, folder, bucket, f"indexes/{name}")
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    code = main(["run", "--queries", str(s3_queries[0]), "--index", uri, "--out", f"s3://{bucket}/runs/{name}",
                 "--index-cache", str(tmp_path / "cache"), "--quiet"])
    return code, capsys.readouterr().err, uri
