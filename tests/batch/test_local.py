"""Small jobs run in the driver's process without Ray, with the rows the Ray job writes."""

import sys

from codenib.batch.driver import RunOptions, _local_reason, run_job
from codenib.core.results import read_results
from tests.batch.conftest import QUERIES, write_queries


def rows_of(out):
    return [(r["qid"], r["rank"], r["node_id"], round(r["score"], 9), r["plan"])
            for r in read_results(out).to_pylist()]


def test_a_small_job_runs_in_process_with_the_rows_of_the_ray_job(ray_session, fixture_index_dir, tmp_path,
                                                                  monkeypatch):
    queries = write_queries(tmp_path / "q.parquet", QUERIES)
    opts = dict(queries=str(queries), index=str(fixture_index_dir), shard_size=3, progress=False, mode="all")
    on_ray = run_job(RunOptions(out=str(tmp_path / "ray"), local_below=0, **opts), log=lambda m: None)
    assert on_ray.runner == "ray" and "not started" not in on_ray.render()

    # This test process has a Ray (the fixture's), which would be joined: pretend it has none.
    monkeypatch.setattr(ray_session, "is_initialized", lambda: False)
    logs: list[str] = []
    local = run_job(RunOptions(out=str(tmp_path / "local"), **opts), log=logs.append)
    assert "fewer than --local-below 256" in local.runner
    assert "ray        not started" in local.render()
    assert any("without Ray" in line for line in logs)
    assert rows_of(tmp_path / "local") == rows_of(tmp_path / "ray")
    assert local.plans == on_ray.plans and local.errors == on_ray.errors


def test_ray_is_kept_for_clusters_and_large_jobs(monkeypatch, tmp_path):
    opts = RunOptions(queries="q.parquet", index="i", out=str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delitem(sys.modules, "ray", raising=False)   # as in a process that never started Ray
    assert _local_reason(opts, 15) is not None
    assert _local_reason(opts, 256) is None
    assert _local_reason(RunOptions(queries="q", index="i", out="o", address="127.0.0.1:6379"), 15) is None
    assert _local_reason(RunOptions(queries="q", index="i", out="o", local_below=0), 15) is None
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    assert _local_reason(opts, 15) is None
