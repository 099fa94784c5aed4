"""A failed LLM rerank keeps the ranking it was given and says so: the result carries the
failure, `codenib query` warns on stderr and the batch job records it in the query's plans row
(as `codenib rerank` does), where a query that could be reranked is reordered."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from codenib.commands.cli import main
from codenib.core.results import read_results
from codenib.engines.llm.client import LLMConfig
from codenib.model.planspec import BUDGETS, PlanOptions
from codenib.model.session import RetrievalSession
from tests.ops.llm_server import FakeChatServer, http_error

QUERY = "who calls Engine.prepare?"


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv("CODENIB_LLM_API_KEY", raising=False)


def _config(server: FakeChatServer) -> dict:
    return {"endpoint": server.endpoint, "model": "m", "retries": 0, "backoff_s": 0.01, "timeout_s": 5.0}


def _ranking(result) -> list[tuple[str, float]]:
    return [(c.node_id, c.score) for c in result.candidates]


def test_a_rerank_that_fails_keeps_the_ranking_and_its_scores(fixture_index_dir):
    with FakeChatServer(default=http_error(500)) as server:
        session = RetrievalSession.load(str(fixture_index_dir), llm=LLMConfig(**_config(server)))
        plain = session.search(QUERY, PlanOptions(BUDGETS["balanced"], "auto", "none"), k=10)
        failed = session.search(QUERY, PlanOptions(BUDGETS["balanced"], "auto", "llm"), k=10)
    assert plain.candidates and plain.rerank_error is None
    assert failed.error is None and failed.rerank_error.startswith("llm rerank: listwise window 1/1")
    assert _ranking(failed) == _ranking(plain)
    assert failed.trace["detail"]["rerank_errors"]


def test_a_rerank_that_answers_reorders_with_no_failure(fixture_index_dir):
    with FakeChatServer() as server:     # reverses every window
        session = RetrievalSession.load(str(fixture_index_dir), llm=LLMConfig(**_config(server)))
        plain = session.search(QUERY, PlanOptions(BUDGETS["balanced"], "auto", "none"), k=10)
        reranked = session.search(QUERY, PlanOptions(BUDGETS["balanced"], "auto", "llm"), k=10)
    assert reranked.rerank_error is None
    assert [c.node_id for c in reranked.candidates] != [c.node_id for c in plain.candidates]
    assert [c.score for c in reranked.candidates][:3] == [1.0, 0.5, pytest.approx(1 / 3)]


def test_a_rerank_that_fails_in_part_is_a_reranked_list_that_names_its_failure(fixture_index_dir):
    """Windows of 4 with a stride of 2: the first window asked fails, the others answer."""
    with FakeChatServer() as server:
        server.push(http_error(500))
        config = LLMConfig(**{**_config(server), "window": 4, "stride": 2})
        session = RetrievalSession.load(str(fixture_index_dir), llm=config)
        plain = session.search(QUERY, PlanOptions(BUDGETS["balanced"], "auto", "none"), k=10)
        reranked = session.search(QUERY, PlanOptions(BUDGETS["balanced"], "auto", "llm"), k=10)
    assert reranked.rerank_error.startswith("llm rerank: listwise window 1/")
    assert len(reranked.trace["detail"]["rerank_errors"]) == 1
    assert [c.node_id for c in reranked.candidates] != [c.node_id for c in plain.candidates]
    assert [c.score for c in reranked.candidates][:2] == [1.0, 0.5]


def test_the_query_command_warns_and_the_job_records_it_per_row(fixture_index_dir, tmp_path, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"qid": q, "query": t}) + "\n"
                               for q, t in (("a", QUERY), ("b", "start the engine"))))
    with FakeChatServer(default=http_error(500)) as server:
        cfg = tmp_path / "llm.json"
        cfg.write_text(json.dumps(_config(server)))
        assert main(["query", str(fixture_index_dir), QUERY, "--rerank", "llm", "--llm-config", str(cfg)]) == 0
        err = capsys.readouterr().err
        assert "codenib query: warning: llm rerank: listwise window 1/1" in err
        assert main(["run", "--queries", str(queries), "--index", str(fixture_index_dir), "--out",
                     str(tmp_path / "plain"), "--quiet"]) == 0
        assert main(["run", "--queries", str(queries), "--index", str(fixture_index_dir), "--out",
                     str(tmp_path / "llm"), "--rerank", "llm", "--llm-config", str(cfg), "--quiet"]) == 0
    errors = {r["qid"]: r["error"] for r in pq.read_table(tmp_path / "llm" / "plans.parquet").to_pylist()}
    assert all(e and e.startswith("llm rerank: ") for e in errors.values()) and set(errors) == {"a", "b"}
    rows = read_results(str(tmp_path / "llm")).select(["qid", "node_id", "score"]).to_pylist()
    plain = read_results(str(tmp_path / "plain")).select(["qid", "node_id", "score"]).to_pylist()
    assert rows == plain      # nothing lost, nothing rescored
