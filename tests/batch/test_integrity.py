"""A results folder is whole only when every part its manifest lists is there, with the rows
and the sha256 recorded at commit: a resumed `run` redoes a damaged shard, `eval` and
`rerank` (of its source) refuse one, exit 2, naming the part. Locally and on object storage."""

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.commands.cli import main
from codenib.core.results import read_results
from tests.batch.conftest import QUERIES, write_queries
from tests.batch.s3 import client, listing, new_bucket, read_results_rows


def rows_of(out):
    return sorted((r["qid"], r["rank"], r["node_id"]) for r in read_results(out).to_pylist())


def options(qpath, index, out):
    # Shards of two queries: four parts, so one can be damaged while the others stay.
    return RunOptions(queries=str(qpath), index=str(index), out=str(out), shard_size=2, mode="sparse", k=5,
                      progress=False)


@pytest.fixture(scope="module")
def finished(sparse_only_index_dir, tmp_path_factory):
    """A complete run (in this process: fewer queries than --local-below) and its query set."""
    base = tmp_path_factory.mktemp("integrity")
    qpath = write_queries(base / "q.parquet", QUERIES)
    out = base / "run"
    run_job(options(qpath, sparse_only_index_dir, out), log=lambda m: None)
    return qpath, out


def _truncate(part):
    """Rewrite a part with its first row only (a whole, readable Parquet file)."""
    table = pq.read_table(part)
    pq.write_table(table.slice(0, 1), part)


DAMAGE = {"missing": lambda part: part.unlink(), "fewer rows": _truncate,
          "same rows, other bytes": lambda part: pq.write_table(pq.read_table(part), part, compression="none")}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_resumed_run_redoes_a_damaged_shard(damage, finished, sparse_only_index_dir, tmp_path):
    qpath, done = finished
    out = shutil.copytree(done, tmp_path / "run")
    DAMAGE[damage](out / "part-00001.parquet")
    logged = []
    summary = run_job(options(qpath, sparse_only_index_dir, out), log=logged.append)
    assert summary.shards_run == 1 and summary.shards_resumed == 3, logged
    assert any("part-00001.parquet" in m for m in logged), logged
    assert rows_of(out) == rows_of(done)
    assert (out / "_SUCCESS").is_file()
    manifest = json.loads((out / "_manifest.json").read_text())
    assert all(len(s["sha256"]) == 64 for s in manifest["shards"].values())


def test_an_old_manifest_without_checksums_is_checked_by_presence_and_rows(finished, sparse_only_index_dir,
                                                                           tmp_path, capsys):
    qpath, done = finished
    out = shutil.copytree(done, tmp_path / "run")
    path = out / "_manifest.json"
    manifest = json.loads(path.read_text())
    for shard in manifest["shards"].values():
        shard.pop("sha256"), shard.pop("plans_sha256")
    path.write_text(json.dumps(manifest))
    assert main(["eval", "--results", str(out), "--export-trec", str(tmp_path / "ok.trec")]) == 0
    _truncate(out / "part-00002.parquet")
    assert main(["eval", "--results", str(out), "--export-trec", str(tmp_path / "bad.trec")]) == 2
    assert "part-00002.parquet" in capsys.readouterr().err
    logged = []
    run_job(options(qpath, sparse_only_index_dir, out), log=logged.append)
    assert any("part-00002.parquet" in m for m in logged) and rows_of(out) == rows_of(done)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_eval_refuses_a_damaged_folder_naming_the_part(damage, finished, tmp_path, capsys):
    _, done = finished
    out = shutil.copytree(done, tmp_path / "run")
    DAMAGE[damage](out / "part-00003.parquet")
    qrels = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["q1"], "node_id": ["pkg/core.py::run_engine"], "relevance": [1]}), qrels)
    assert main(["eval", "--results", str(out), "--qrels", str(qrels)]) == 2
    err = capsys.readouterr().err
    assert "part-00003.parquet" in err and "(fix: " in err and "re-run the same `codenib run`" in err, err


def test_a_damaged_plan_part_is_caught_too(finished, sparse_only_index_dir, tmp_path):
    qpath, done = finished
    out = shutil.copytree(done, tmp_path / "run")
    (out / "_plans" / "part-00000.parquet").unlink()
    logged = []
    summary = run_job(options(qpath, sparse_only_index_dir, out), log=logged.append)
    assert summary.shards_run == 1 and any("_plans/part-00000.parquet" in m for m in logged), logged
    assert pq.read_table(out / "plans.parquet").num_rows == len(QUERIES)


def test_rerank_refuses_a_damaged_source(finished, tmp_path, capsys):
    _, done = finished
    source = shutil.copytree(done, tmp_path / "run")
    (source / "part-00002.parquet").unlink()
    assert main(["rerank", "--results", str(source), "--out", str(tmp_path / "rr"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "part-00002.parquet" in err and "is missing" in err, err
    assert not (tmp_path / "rr").exists()


def test_on_object_storage_a_damaged_part_is_redone_and_eval_refuses_it(s3_endpoint, finished, sparse_only_index_dir,
                                                                        tmp_path, monkeypatch, capsys):
    qpath, done = finished
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    bucket = new_bucket(s3_endpoint)
    uri = f"s3://{bucket}/runs/x"
    run_job(options(qpath, sparse_only_index_dir, uri), log=lambda m: None)
    c = client(s3_endpoint)
    part = pq.read_table(pa.BufferReader(listing(s3_endpoint, bucket, "runs/x")["part-00001.parquet"]))
    sink = pa.BufferOutputStream()
    pq.write_table(part.slice(0, 1), sink)
    c.put_object(Bucket=bucket, Key="runs/x/part-00001.parquet", Body=sink.getvalue().to_pybytes())
    assert main(["eval", "--results", uri, "--export-trec", str(tmp_path / "x.trec")]) == 2
    err = capsys.readouterr().err
    assert "part-00001.parquet" in err and "1 rows" in err, err
    logged = []
    summary = run_job(options(qpath, sparse_only_index_dir, uri), log=logged.append)
    assert summary.shards_run == 1 and any("part-00001.parquet" in m for m in logged), logged
    assert [r[:3] for r in read_results_rows(s3_endpoint, bucket, "runs/x")] == rows_of(done)
    c.delete_object(Bucket=bucket, Key="runs/x/part-00003.parquet")
    assert main(["eval", "--results", uri, "--export-trec", str(tmp_path / "y.trec")]) == 2
    err = capsys.readouterr().err
    assert "part-00003.parquet" in err and "is missing" in err, err
    logged = []
    summary = run_job(options(qpath, sparse_only_index_dir, uri), log=logged.append)
    assert summary.shards_run == 1 and any("part-00003.parquet" in m for m in logged), logged
    assert "_SUCCESS" in listing(s3_endpoint, bucket, "runs/x")


def test_a_manifest_entry_naming_another_file_is_damage_and_that_file_is_left_alone(finished, sparse_only_index_dir,
                                                                                    tmp_path):
    qpath, done = finished
    out = shutil.copytree(done, tmp_path / "run")
    keep = tmp_path / "keep.txt"
    keep.write_text("not a part")
    path = out / "_manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shards"]["00001"]["file"] = "../keep.txt"
    path.write_text(json.dumps(manifest))
    logged = []
    summary = run_job(options(qpath, sparse_only_index_dir, out), log=logged.append)
    assert summary.shards_run == 1 and any("listed under another name" in m for m in logged), logged
    assert keep.read_text() == "not a part" and rows_of(out) == rows_of(done)
