"""The batch job on a real local Ray: end to end, determinism, resume, actor death, multi-index."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.commands.cli import main
from codenib.core.results import METADATA_KEY, read_results
from tests.batch.conftest import QUERIES, write_queries


def rows_of(out):
    t = read_results(out)
    return [(r["qid"], r["rank"], r["node_id"], round(r["score"], 9), r["plan"]) for r in t.to_pylist()]


@pytest.fixture(scope="module")
def queries_path(tmp_path_factory):
    return write_queries(tmp_path_factory.mktemp("q") / "q.parquet",
                         QUERIES + [{"qid": "q8", "query": ""}])


@pytest.fixture(scope="module")
def baseline(ray_session, queries_path, fixture_index_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "baseline"
    summary = run_job(RunOptions(queries=str(queries_path), index=str(fixture_index_dir), out=str(out),
                                 shard_size=3, progress=False), log=lambda m: None)
    return out, summary


def test_end_to_end(baseline):
    out, summary = baseline
    assert (out / "_SUCCESS").is_file() and (out / "plans.parquet").is_file()
    assert summary.queries == 8 and summary.errors == 1 and summary.shards == 3
    plans = pq.read_table(out / "plans.parquet").to_pylist()
    assert sorted(p["qid"] for p in plans) == [f"q{i}" for i in range(1, 9)]
    by_qid = {p["qid"]: p for p in plans}
    assert by_qid["q8"]["error"] == "empty query text"
    assert by_qid["q2"]["plan"] == "structural_graph" and json.loads(by_qid["q2"]["trace"])["budget"] == "balanced"
    results = read_results(out)
    first = {r["qid"]: r["node_id"] for r in results.to_pylist() if r["rank"] == 1}
    assert first["q1"] == "pkg/core.py::run_engine"
    assert first["q4"] == "pkg/util.py::slugify"
    meta = json.loads(pq.read_schema(out / "part-00000.parquet").metadata[METADATA_KEY])
    assert meta["run_id"] == summary.run_id and meta["job_spec"]["shard_size"] == 3
    assert list(meta["indexes"].values())[0]["format_version"] == 1
    assert results.column("run_tag").unique().to_pylist() == ["codenib-auto-balanced"]


@pytest.mark.parametrize("shard_size,workers", [(1, 1), (2, 2), (100, 2)])
def test_rows_do_not_depend_on_shard_size_or_actor_count(baseline, ray_session, queries_path,
                                                         fixture_index_dir, tmp_path, shard_size, workers):
    out = tmp_path / "run"
    run_job(RunOptions(queries=str(queries_path), index=str(fixture_index_dir), out=str(out),
                       shard_size=shard_size, workers=workers, progress=False), log=lambda m: None)
    assert rows_of(out) == rows_of(baseline[0])


def test_rerun_of_a_complete_job_does_nothing(baseline, ray_session, queries_path, fixture_index_dir):
    out, summary = baseline
    before = rows_of(out)
    again = run_job(RunOptions(queries=str(queries_path), index=str(fixture_index_dir), out=str(out),
                               shard_size=3, progress=False), log=lambda m: None)
    assert again.shards_run == 0 and again.shards_resumed == 3 and rows_of(out) == before


def test_another_jobs_output_folder_is_refused(baseline, queries_path, fixture_index_dir, capsys):
    out, _ = baseline
    code = main(["run", "--queries", str(queries_path), "--index", str(fixture_index_dir), "--out", str(out),
                 "--budget", "fast"])
    assert code == 2 and "another job's results" in capsys.readouterr().err


def test_resume_after_the_driver_is_killed(baseline, fixture_index_dir, tmp_path):
    """Kill `codenib run` midway: the re-run completes with the rows of an uninterrupted run."""
    many = [{"qid": f"m{i:03d}", "query": q["query"]} for i, q in enumerate(QUERIES * 6)]
    qpath = write_queries(tmp_path / "many.parquet", many)
    out = tmp_path / "resumed"
    cmd = [sys.executable, "-m", "codenib.commands.cli", "run", "--queries", str(qpath), "--index",
           str(fixture_index_dir), "--out", str(out), "--shard-size", "1", "--quiet", "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 180
        committed = 0
        while time.time() < deadline and committed < 3:
            try:
                committed = len(json.loads((out / "_manifest.json").read_text())["shards"])
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        assert committed >= 3, "the job never committed three shards"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    manifest = json.loads((out / "_manifest.json").read_text())
    assert not (out / "_SUCCESS").exists() and len(manifest["shards"]) < len(many)
    assert subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300).returncode == 0
    full = tmp_path / "full"
    assert subprocess.run(cmd[:9] + [str(full)] + cmd[10:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          timeout=300).returncode == 0
    resumed_rows = rows_of(out)
    assert resumed_rows == rows_of(full)
    assert len({(q, r) for q, r, *_ in resumed_rows}) == len(resumed_rows)  # no duplicates
    assert len(pq.read_table(out / "plans.parquet")) == len(many)


def test_an_actor_killed_mid_job_loses_no_rows(baseline, ray_session, fixture_index_dir, tmp_path):
    import ray

    many = [{"qid": f"k{i:03d}", "query": q["query"]} for i, q in enumerate(QUERIES * 5)]
    qpath = write_queries(tmp_path / "many.parquet", many)
    out = tmp_path / "killed"
    options = RunOptions(queries=str(qpath), index=str(fixture_index_dir), out=str(out), shard_size=1,
                         workers=2, progress=False)
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("summary", run_job(options, log=lambda m: None)))
    thread.start()
    killed = set()
    deadline = time.time() + 120
    while time.time() < deadline and len(killed) < 2 and thread.is_alive():
        names = [n for n in ray.util.list_named_actors() if n.startswith("codenib-")]
        for role in ("-graph-0", "-dense"):
            for name in names:
                if name.endswith(role) and role not in killed:
                    committed = 0
                    try:
                        committed = len(json.loads((out / "_manifest.json").read_text())["shards"])
                    except (OSError, ValueError, KeyError):
                        pass
                    if committed >= 2 + 4 * len(killed):
                        ray.kill(ray.get_actor(name), no_restart=False)
                        killed.add(role)
        time.sleep(0.05)
    thread.join(timeout=300)
    assert killed, "no actor was killed while the job ran"
    summary = box["summary"]
    assert summary.errors == 0
    plans = pq.read_table(out / "plans.parquet").to_pylist()
    assert sorted(p["qid"] for p in plans) == sorted(q["qid"] for q in many)
    reference = {}
    for r in rows_of(baseline[0]):
        reference.setdefault(r[0], []).append(r[1:])
    got = {}
    for r in rows_of(out):
        got.setdefault(r[0], []).append(r[1:])
    for i, q in enumerate(QUERIES * 5):
        assert got[f"k{i:03d}"] == reference[q["qid"]]


def test_multi_index_query_set(ray_session, fixture_index_dir, sparse_only_index_dir, tmp_path):
    root = tmp_path / "indexes"
    # Copies: index names resolve strictly under the root, so a link leading out of it is refused.
    shutil.copytree(fixture_index_dir, root / "full")
    shutil.copytree(sparse_only_index_dir, root / "sparse")
    rows = [{"qid": "a", "query": "Turn the given text into a lowercase slug.", "index": "full"},
            {"qid": "b", "query": "Turn the given text into a lowercase slug.", "index": "sparse"},
            {"qid": "c", "query": "who calls slugify?", "index": "sparse"},
            {"qid": "d", "query": "helper", "index": "missing"}]
    qpath = write_queries(tmp_path / "multi.parquet", rows)
    out = tmp_path / "multi"
    summary = run_job(RunOptions(queries=str(qpath), index_root=str(root), out=str(out), progress=False),
                      log=lambda m: None)
    plans = {p["qid"]: p for p in pq.read_table(out / "plans.parquet").to_pylist()}
    assert plans["a"]["plan"] == "semantic" and plans["a"]["index"] == "full"
    assert plans["b"]["plan"] == "fast_lexical"  # no dense vectors in that index: degraded, traced
    assert "no dense" in json.loads(plans["b"]["trace"])["reasons"][-1]
    assert plans["c"]["plan"] == "structural_graph"
    assert "not found" in plans["d"]["error"]
    assert summary.errors == 1
    top = {}
    for r in read_results(out).to_pylist():
        if r["rank"] <= 2:
            top.setdefault(r["qid"], set()).add(r["node_id"])
    assert "pkg/util.py::slugify" in top["a"]
    assert top["c"] == {"pkg/util.py::helper", "pkg/core.py::Engine.start"}


def test_mode_all_writes_every_plan_and_the_auto_choice(ray_session, queries_path, fixture_index_dir, tmp_path):
    out = tmp_path / "all"
    run_job(RunOptions(queries=str(queries_path), index=str(fixture_index_dir), out=str(out), mode="all",
                       progress=False), log=lambda m: None)
    plans = pq.read_table(out / "plans.parquet").to_pylist()
    q2 = [p for p in plans if p["qid"] == "q2"]
    assert sorted(p["mode"] for p in q2) == ["auto", "dense", "graph", "hybrid", "sparse"]
    assert [p["plan"] for p in q2 if p["mode"] == "auto"] == ["structural_graph"]
    results = read_results(out).to_pylist()
    assert {r["plan"] for r in results if r["qid"] == "q2"} == {"fast_lexical", "semantic", "hybrid_fusion",
                                                                 "structural_graph"}


def test_mode_all_writes_each_plan_once_when_modes_degrade(ray_session, queries_path, sparse_only_index_dir,
                                                           tmp_path):
    out = tmp_path / "degraded"
    run_job(RunOptions(queries=str(queries_path), index=str(sparse_only_index_dir), out=str(out), mode="all",
                       budget="fast", progress=False), log=lambda m: None)
    rows = read_results(out).to_pylist()
    keys = [(r["qid"], r["plan"], r["rank"]) for r in rows]
    assert len(keys) == len(set(keys))  # no (qid, plan, rank) twice
    # Without dense vectors and at budget fast every mode runs as fast_lexical.
    assert {r["plan"] for r in rows} == {"fast_lexical"}
