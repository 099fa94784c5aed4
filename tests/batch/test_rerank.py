"""`codenib rerank` on a real local Ray: embedding and LLM rerankers, resume, lineage."""

import json

import pyarrow.parquet as pq
import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.batch.rerank import RerankOptions, rerank_job
from codenib.batch.sink import ParquetSink
from codenib.commands.cli import main
from codenib.core.results import read_results
from tests.batch.conftest import QUERIES, write_queries
from tests.ops.llm_server import FakeChatServer, answer


def lists(out):
    got = {}
    for r in read_results(out).to_pylist():
        got.setdefault((r["qid"], r["plan"]), []).append(r["node_id"])
    return got


@pytest.fixture(scope="module")
def source(ray_session, fixture_index_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("rr")
    qpath = write_queries(base / "q.parquet", QUERIES)
    out = base / "source"
    run_job(RunOptions(queries=str(qpath), index=str(fixture_index_dir), out=str(out), progress=False),
            log=lambda m: None)
    return out


def test_embedding_rerank_end_to_end_with_lineage(source, tmp_path):
    out = tmp_path / "rr"
    summary = rerank_job(RerankOptions(results=str(source), out=str(out), top_n=3, progress=False),
                         log=lambda m: None)
    before, after = lists(source), lists(out)
    assert set(before) == set(after) and summary.errors == 0
    for key in before:
        assert sorted(before[key][:3]) == sorted(after[key][:3])  # the head is reordered, not replaced
        assert before[key][3:] == after[key][3:]                  # the tail keeps its order
    meta = json.loads(pq.read_schema(out / "plans.parquet").metadata[b"codenib"])
    lineage = meta["lineage"]
    assert lineage["reranker"] == "embedding" and lineage["model"] == "all-MiniLM-L6-v2"
    assert lineage["source_run_id"].startswith("run-") and meta["created"]
    tags = set(read_results(out).column("run_tag").to_pylist())
    assert tags == {"codenib-auto-balanced+embedding"}
    scores = [r["score"] for r in read_results(out).to_pylist() if r["qid"] == "q4"]
    assert scores == sorted(scores, reverse=True)


def test_resume_after_interruption(source, tmp_path, monkeypatch):
    out = tmp_path / "rr"
    options = RerankOptions(results=str(source), out=str(out), shard_size=2, top_n=3, progress=False)
    real_commit = ParquetSink.commit
    calls = {"n": 0}

    def crash_after_two(self, *args, **kwargs):
        if calls["n"] == 2:
            raise KeyboardInterrupt("driver interrupted")
        calls["n"] += 1
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(ParquetSink, "commit", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        rerank_job(options, log=lambda m: None)
    assert not (out / "_SUCCESS").exists()
    assert len(json.loads((out / "_manifest.json").read_text())["shards"]) == 2
    monkeypatch.setattr(ParquetSink, "commit", real_commit)
    resumed = rerank_job(options, log=lambda m: None)
    assert resumed.shards_resumed == 2 and resumed.shards_run == resumed.shards - 2
    clean = tmp_path / "clean"
    rerank_job(RerankOptions(results=str(source), out=str(clean), shard_size=2, top_n=3, progress=False),
               log=lambda m: None)
    assert lists(out) == lists(clean)
    rows = read_results(out).to_pylist()
    assert len({(r["qid"], r["plan"], r["rank"]) for r in rows}) == len(rows)


def test_llm_rerank_against_a_loopback_server(source, tmp_path):
    with FakeChatServer() as server:  # reverses every window
        out = tmp_path / "llm"
        cfg = {"endpoint": server.endpoint, "model": "test-model", "window": 5, "stride": 2, "top_n": 5,
               "timeout_s": 5, "retries": 0}
        summary = rerank_job(RerankOptions(results=str(source), out=str(out), reranker="llm", top_n=3, llm=cfg,
                                           progress=False), log=lambda m: None)
        assert summary.errors == 0 and server.requests
        before, after = lists(source), lists(out)
        for key in before:
            assert after[key][:3] == list(reversed(before[key][:3]))
            assert after[key][3:] == before[key][3:]
        meta = json.loads(pq.read_schema(out / "plans.parquet").metadata[b"codenib"])
        assert meta["lineage"]["model"] == "test-model"

        server.default = answer("I cannot rank these.")  # malformed: order kept, error recorded
        bad = tmp_path / "bad"
        summary = rerank_job(RerankOptions(results=str(source), out=str(bad), reranker="llm", top_n=3, llm=cfg,
                                           progress=False), log=lambda m: None)
        assert lists(bad) == before
        errors = [p["error"] for p in pq.read_table(bad / "plans.parquet").to_pylist()]
        assert all(e and "malformed" in e.lower() for e in errors) and summary.errors == len(errors)


def test_bad_inputs(source, tmp_path, capsys):
    assert main(["rerank", "--results", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "not a CodeNib results folder" in capsys.readouterr().err
    assert main(["rerank", "--results", str(source), "--out", str(tmp_path / "o"), "--reranker", "llm"]) == 2
    assert "needs an LLM configuration" in capsys.readouterr().err
    assert main(["rerank", "--results", str(source), "--out", str(tmp_path / "o"),
                 "--queries", str(tmp_path / "none.parquet")]) == 2
    assert "not here" in capsys.readouterr().err


def test_an_embedding_rerank_over_indexes_without_vectors_is_bad_input(sparse_only_index_dir, tmp_path, capsys):
    """Every row could only fail: exit 2 before the output folder or Ray, naming the index."""
    qpath = write_queries(tmp_path / "q.parquet", QUERIES)
    source = tmp_path / "source"
    assert main(["run", "--queries", str(qpath), "--index", str(sparse_only_index_dir), "--out", str(source),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["rerank", "--results", str(source), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "the embedding reranker needs dense vectors" in err and str(sparse_only_index_dir) in err
    assert not (tmp_path / "o").exists()


def test_a_shard_that_cannot_load_its_index_is_recorded_as_errors(ray_session, fixture_index_dir, tmp_path):
    import shutil

    index = tmp_path / "index"
    shutil.copytree(fixture_index_dir, index)
    qpath = write_queries(tmp_path / "q.parquet", QUERIES)
    source = tmp_path / "source"
    run_job(RunOptions(queries=str(qpath), index=str(index), out=str(source), progress=False), log=lambda m: None)
    # The index is damaged after the run: every rerank actor fails to load it.
    (index / "nodes.parquet").write_bytes(b"not parquet")
    out = tmp_path / "rr"
    summary = rerank_job(RerankOptions(results=str(source), out=str(out), top_n=3, progress=False),
                         log=lambda m: None)
    assert summary.errors == len(lists(source)) and summary.failed_shards >= 1
    # Every list keeps its order, each row marked with the shard's error.
    assert lists(out) == lists(source)

    plans = pq.read_table(out / "plans.parquet").column("error").to_pylist()
    assert all(e and e.startswith("shard failed") for e in plans), plans[:3]
