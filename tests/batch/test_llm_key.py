"""An API key never goes in clear text to another machine: a plain-http endpoint off this
machine with a key set is bad input (exit 2) before any work: no output folder, no Ray, no
connection. Nothing here connects beyond 127.0.0.1 (connections elsewhere fail the test)."""

import socket

import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.commands.cli import main
from tests.batch.conftest import QUERIES, write_queries

KEY = "sk-test-never-sent-5f1c"


@pytest.fixture
def guarded(monkeypatch):
    """Connections beyond loopback and Ray's start fail the test at once."""
    import ray

    real = socket.create_connection

    def loopback_only(address, *args, **kwargs):
        if address[0] not in ("127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"tried to connect to {address[0]}")
        return real(address, *args, **kwargs)

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started")

    monkeypatch.setattr(socket, "create_connection", loopback_only)
    monkeypatch.setattr(ray, "init", no_ray)
    monkeypatch.setenv("CODENIB_LLM_API_KEY", KEY)


def _config(tmp_path, endpoint):
    path = tmp_path / "llm.toml"
    path.write_text(f'[llm]\nendpoint = "{endpoint}"\nmodel = "m"\nretries = 0\n')
    return path


@pytest.mark.parametrize("extra", [["--rerank", "llm"], ["--budget", "thorough"]])
def test_run_refuses_a_key_over_plain_http_to_another_machine_before_any_work(extra, guarded, tmp_path,
                                                                             sparse_only_index_dir, capsys):
    qpath = write_queries(tmp_path / "q.parquet", QUERIES)
    out = tmp_path / "out"
    code = main(["run", "--queries", str(qpath), "--index", str(sparse_only_index_dir), "--out", str(out),
                 "--llm-config", str(_config(tmp_path, "http://10.0.0.5:8000/v1")), "--local-below", "0",
                 "--quiet", *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the API key in $CODENIB_LLM_API_KEY would go in clear text over http to 10.0.0.5" in err
    assert "(LLM reranker endpoint http://10.0.0.5:8000/v1)" in err and "(fix: " in err and KEY not in err
    assert not out.exists()


def test_rerank_refuses_it_too_and_https_or_loopback_pass_the_check(guarded, tmp_path, sparse_only_index_dir, capsys,
                                                                   monkeypatch):
    qpath = write_queries(tmp_path / "q.parquet", QUERIES)
    source = tmp_path / "source"
    monkeypatch.delenv("CODENIB_LLM_API_KEY")
    run_job(RunOptions(queries=str(qpath), index=str(sparse_only_index_dir), out=str(source), mode="sparse",
                       progress=False), log=lambda m: None)
    monkeypatch.setenv("CODENIB_LLM_API_KEY", KEY)
    out = tmp_path / "rr"
    code = main(["rerank", "--results", str(source), "--out", str(out), "--reranker", "llm", "--llm-config",
                 str(_config(tmp_path, "http://llm.example.com/v1")), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "would go in clear text over http to llm.example.com" in err and KEY not in err, err
    assert not out.exists()
    from codenib.engines.llm.client import LLMConfig

    for endpoint in ("https://llm.example.com/v1", "http://127.0.0.1:9/v1", "http://localhost:9/v1"):
        LLMConfig(endpoint, "m").check_key_route()   # raises for a key in clear text only
    monkeypatch.delenv("CODENIB_LLM_API_KEY")
    LLMConfig("http://10.0.0.5:8000/v1", "m").check_key_route()   # no key, nothing to leak
