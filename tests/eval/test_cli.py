"""`codenib eval` end to end: reports, TREC export, comparisons, and bad input (exit 2)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codenib.commands.cli import main

from tests.eval.conftest import write_qrels, write_queries, write_results


def test_eval_writes_the_report_folder(small_case, capsys):
    out = small_case["tmp"] / "report"
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--queries", str(small_case["queries"]), "--out", str(out)])
    assert rc == 0
    names = {p.name for p in out.iterdir()}
    assert {"metrics.json", "report.md", "per_query.parquet", "recall_at_k.png", "per_plan.png",
            "by_kind.png"} <= names
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["systems"]["run"]["node"]["R@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert set(summary["breakdowns"]) == {"plan", "kind", "index"}
    md = (out / "report.md").read_text()
    assert "## By kind" in md and "| run | node |" in md
    per_query = pq.read_table(out / "per_query.parquet")
    assert summary["levels"] == ["node", "file", "function"]
    assert per_query.num_rows == 3 * 3 * len(summary["measures"])  # levels x queries x measures
    assert "R@10" in capsys.readouterr().err


def test_eval_without_out_prints_metrics_json(small_case, capsys):
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--measures", "R@10,RR@10"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["measures"] == ["R@10", "RR@10"]
    assert summary["queries"]["judged_without_results"] == 1


def test_eval_compare_reports_paired_tests(small_case, tmp_path, capsys):
    other = write_results(tmp_path / "other", {("q1", "semantic"): ["a.py::g"], ("q3", "semantic"): ["c.py::w"]})
    out = tmp_path / "cmp"
    rc = main(["eval", "--results", str(small_case["results"]), "--compare", str(other),
               "--qrels", str(small_case["qrels"]), "--out", str(out), "--no-plots"])
    assert rc == 0
    c = json.loads((out / "metrics.json").read_text())["comparison"]
    assert (c["a"], c["b"]) == ("run", "other")
    rr = c["levels"]["node"]["RR@10"]
    assert rr["delta"] == pytest.approx((1 / 2 + 1 / 3) / 3 - 2 / 3)
    assert rr["exact"] and 0 < rr["permutation_p"] <= 1
    assert "## Comparison" in (out / "report.md").read_text()


def test_eval_groups_gives_the_mean_over_repositories(small_case, tmp_path, capsys):
    groups = write_queries(tmp_path / "instances.parquet", [{"qid": q, "repo": r} for q, r in
                                                            (("q1", "x/a"), ("q2", "x/a"), ("q3", "x/b"))])
    out = tmp_path / "report"
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--groups", str(groups), "--measures", "R@10", "--levels", "node", "--out", str(out), "--no-plots"])
    assert rc == 0
    macro = json.loads((out / "metrics.json").read_text())["macro"]
    # Node R@10 per query 1, 1/2, 0 (test_eval_writes_the_report_folder): x/a 3/4, x/b 0.
    # Two repositories, 3/4 and 0: standard error 3/8, t(0.975, 1 df) 12.7062.
    assert macro["systems"]["run"]["node"]["R@10"] == pytest.approx(
        {"mean": 3 / 8, "margin95": 12.7062 * 3 / 8, "worst": 0.0, "worst_group": "x/b"}, abs=1e-4)
    assert "## Mean over repositories" in (out / "report.md").read_text()
    assert "mean over 2 repositories" in capsys.readouterr().err


def test_eval_groups_that_name_no_query_exit_2_and_write_nothing(small_case, tmp_path, capsys):
    groups = write_queries(tmp_path / "instances.parquet", [{"qid": "other", "repo": "x/a"}])
    out = tmp_path / "report"
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--groups", str(groups), "--out", str(out)])
    assert rc == 2 and not out.exists()
    assert "names none of the 3 evaluated queries" in _error(capsys)
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--groups", str(tmp_path / "nope.parquet"), "--out", str(out)])
    assert rc == 2 and not out.exists()
    assert "no such groups file" in _error(capsys)


def test_eval_mode_all_with_auto_rows_reports_regret(tmp_path, capsys):
    rankings = {("q1", "fast_lexical"): ["a.py::g"], ("q1", "semantic"): ["x.py::n", "a.py::g"]}
    plans = [{"qid": "q1", "plan": p, "mode": "all"} for _, p in rankings]
    plans.append({"qid": "q1", "plan": "semantic", "mode": "auto"})
    results = write_results(tmp_path / "all", rankings, plans=plans)
    qrels = write_qrels(tmp_path / "q.parquet", [{"qid": "q1", "node_id": "a.py::g", "relevance": 1}])
    out = tmp_path / "rep"
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--out", str(out)]) == 0
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["regret"]["levels"]["node"]["RR@10"]["regret"] == pytest.approx(0.5)
    assert summary["regret"]["levels"]["node"]["RR@10"]["confusion"] == {"semantic": {"fast_lexical": 1}}
    assert "## Planner regret" in (out / "report.md").read_text()
    assert (out / "per_plan.png").is_file()


def test_export_trec_and_evaluate_the_trec_file(small_case, tmp_path, capsys):
    trec = tmp_path / "run.trec"
    assert main(["eval", "--results", str(small_case["results"]), "--export-trec", str(trec)]) == 0
    assert len(trec.read_text().splitlines()) == 7
    capsys.readouterr()
    assert main(["eval", "--results", str(trec), "--qrels", str(small_case["qrels"]), "--measures", "R@10"]) == 0
    from_trec = json.loads(capsys.readouterr().out)
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
                 "--measures", "R@10"]) == 0
    from_parquet = json.loads(capsys.readouterr().out)
    assert from_trec["systems"]["run"] == from_parquet["systems"]["run"]


# --- bad input: exit 2 and a message naming the fix ------------------------------------

def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err, err
    return err


def test_folder_without_success_exits_2(tmp_path, small_case, capsys):
    folder = write_results(tmp_path / "unfinished", {("q1", "semantic"): ["a.py::g"]}, success=False)
    assert main(["eval", "--results", str(folder), "--qrels", str(small_case["qrels"])]) == 2
    err = _error(capsys)
    assert str(folder) in err and "--allow-partial" in err
    assert main(["eval", "--results", str(folder), "--qrels", str(small_case["qrels"]), "--allow-partial"]) == 0


def test_qrels_with_qids_outside_the_query_set_exit_2(small_case, tmp_path, capsys):
    queries = write_queries(tmp_path / "two.parquet", [{"qid": "q1", "query": "g"}, {"qid": "q2", "query": "h"}])
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--queries", str(queries)])
    assert rc == 2
    err = _error(capsys)
    assert "q3" in err and "not in the query set" in err


def test_qrels_qids_without_results_count_as_zero(small_case, capsys):
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"])]) == 0
    captured = capsys.readouterr()
    assert "1 of 3 judged queries have no results; they count as zero" in captured.err
    assert json.loads(captured.out)["queries"]["evaluated"]["node"] == 3


def test_qrels_missing_columns_exit_2(small_case, tmp_path, capsys):
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"qid": ["q1"], "doc": ["a.py::g"], "relevance": [1]}), bad)
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(bad)]) == 2
    err = _error(capsys)
    assert str(bad) in err and "node_id or file" in err
    pq.write_table(pa.table({"qid": ["q1"], "node_id": ["a.py::g"]}), bad)
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(bad)]) == 2
    assert "relevance" in _error(capsys)


def test_non_integer_relevance_exits_2(small_case, tmp_path, capsys):
    bad = write_qrels(tmp_path / "bad.parquet", [{"qid": "q1", "node_id": "a.py::g", "relevance": "yes"}],
                      relevance_type=pa.string())
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(bad)]) == 2
    err = _error(capsys)
    assert str(bad) in err and "column relevance" in err and "astype('int64')" in err


@pytest.mark.parametrize("argv,needle", [
    (["--measures", "Recall@10"], "unknown measure"),
    (["--permutations", "0"], "--permutations"),
    (["--plan", "semantic"], "one plan per query"),
])
def test_bad_options_exit_2(small_case, capsys, argv, needle):
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]), *argv])
    assert rc == 2
    assert needle in _error(capsys)


def test_missing_qrels_and_missing_results_exit_2(small_case, tmp_path, capsys):
    assert main(["eval", "--results", str(small_case["results"])]) == 2
    assert "--qrels" in _error(capsys)
    assert main(["eval", "--results", str(tmp_path / "nope"), "--qrels", str(small_case["qrels"])]) == 2
    assert "nope" in _error(capsys)


def test_auto_needs_a_mode_all_run(small_case, capsys):
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--auto", str(small_case["results"])])
    assert rc == 2
    assert "--mode all" in _error(capsys)


def test_report_folder_that_is_not_a_report_is_not_overwritten(small_case, tmp_path, capsys):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    rc = main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
               "--out", str(out)])
    assert rc == 2 and (out / "notes.txt").read_text() == "keep me"
    assert "refusing to overwrite" in _error(capsys)


def test_plan_of_a_mode_all_run_must_exist(tmp_path, capsys):
    rankings = {("q1", "fast_lexical"): ["a.py::g"], ("q1", "semantic"): ["x.py::n"]}
    results = write_results(tmp_path / "all", rankings)
    qrels = write_qrels(tmp_path / "q.parquet", [{"qid": "q1", "node_id": "a.py::g", "relevance": 1}])
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--plan", "nosuch"]) == 2
    assert "fast_lexical, semantic" in _error(capsys)
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--plan", "fast_lexical",
                 "--measures", "RR@10"]) == 0
    assert json.loads(capsys.readouterr().out)["systems"]["fast_lexical"]["node"]["RR@10"] == 1.0


def test_file_only_qrels_evaluate_the_file_level(small_case, tmp_path, capsys):
    qrels = tmp_path / "files.parquet"
    pq.write_table(pa.table({"qid": ["q1", "q2"], "file": ["b.py", "d.py"], "relevance": [1, 1]}), qrels)
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(qrels),
                 "--measures", "RR@10", "--out", str(tmp_path / "rep")]) == 0
    summary = json.loads((tmp_path / "rep" / "metrics.json").read_text())
    assert summary["levels"] == ["file"]
    assert summary["systems"]["run"] == {"file": {"RR@10": pytest.approx((0.5 + 0.0) / 2)}}
    assert "judges files only" in capsys.readouterr().err


def test_finished_run_without_rows_scores_zero(small_case, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_SUCCESS").write_text("")
    assert main(["eval", "--results", str(empty), "--qrels", str(small_case["qrels"]), "--measures", "R@10"]) == 0
    assert json.loads(capsys.readouterr().out)["systems"]["empty"]["node"]["R@10"] == 0.0


def test_compare_needs_one_ranking_per_query(small_case, tmp_path, capsys):
    rankings = {("q1", "fast_lexical"): ["a.py::g"], ("q1", "semantic"): ["x.py::n"]}
    results = write_results(tmp_path / "all", rankings)
    rc = main(["eval", "--results", str(results), "--compare", str(small_case["results"]),
               "--qrels", str(small_case["qrels"])])
    assert rc == 2
    assert "--plan NAME, or --auto" in _error(capsys)


def test_run_spec_eval_section_runs_the_eval_command(small_case, capsys):
    """`codenib run --spec` with an [eval] section evaluates the results with the spec's options."""
    from codenib.commands import run
    from codenib.commands.jobs import JobSpec

    spec = JobSpec(path="job.toml", eval={"qrels": str(small_case["qrels"]), "measures": ["R@10", "RR@10"]})
    run._evaluate(spec, str(small_case["results"]))
    summary = json.loads(capsys.readouterr().out)
    assert summary["measures"] == ["R@10", "RR@10"]
    assert summary["queries"]["judged_without_results"] == 1


def test_run_spec_eval_section_errors_exit_as_eval_does(small_case, tmp_path, capsys):
    from codenib.commands import run
    from codenib.commands.jobs import JobSpec

    spec = JobSpec(path="job.toml", eval={"qrels": str(tmp_path / "missing.parquet")})
    with pytest.raises(SystemExit) as exc:
        run._evaluate(spec, str(small_case["results"]))
    assert exc.value.code == 2
    assert "codenib eval: error:" in capsys.readouterr().err


def test_rewriting_a_report_that_holds_a_users_file_touches_nothing(small_case, tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
            "--out", str(out), "--no-plots"]
    assert main(argv) == 0
    (out / "NOTES.txt").write_text("what I concluded")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(argv) == 2
    err = _error(capsys)
    assert "NOTES.txt" in err and "--force" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main(argv + ["--force"]) == 0
    assert not (out / "NOTES.txt").exists() and (out / "report.md").is_file()


def test_export_trec_refuses_an_existing_file_without_force(small_case, tmp_path, capsys):
    trec = tmp_path / "mine.trec"
    trec.write_text("the user's own run\n")
    assert main(["eval", "--results", str(small_case["results"]), "--export-trec", str(trec)]) == 2
    err = _error(capsys)
    assert str(trec) in err and "--force" in err
    assert trec.read_text() == "the user's own run\n"
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
                 "--export-trec", str(trec)]) == 2
    assert trec.read_text() == "the user's own run\n" and str(trec) in _error(capsys)
    assert main(["eval", "--results", str(small_case["results"]), "--export-trec", str(trec), "--force"]) == 0
    assert len(trec.read_text().splitlines()) == 7
    capsys.readouterr()
    assert main(["eval", "--results", str(small_case["results"]), "--export-trec", str(tmp_path)]) == 2
    assert "--export-trec names a folder" in _error(capsys)


def test_empty_qrels_are_refused_without_the_files_only_note(small_case, tmp_path, capsys):
    qrels = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"qid": pa.array([], pa.string()), "node_id": pa.array([], pa.string()),
                             "relevance": pa.array([], pa.int64())}), qrels)
    code = main(["eval", "--results", str(small_case["results"]), "--qrels", str(qrels)])
    err = capsys.readouterr().err
    assert code == 2 and "judges files only" not in err, err


@pytest.fixture
def job_folder(sparse_only_index_dir, tmp_path, capsys):
    """A results folder of a real `codenib run` (in this process), one query per shard, and its qrels."""
    queries = write_queries(tmp_path / "q.parquet", [{"qid": "q1", "query": "start the engine"},
                                                     {"qid": "q2", "query": "who calls Engine.prepare?"}])
    out = tmp_path / "run"
    assert main(["run", "--queries", str(queries), "--index", str(sparse_only_index_dir), "--out", str(out),
                 "--shard-size", "1", "--quiet"]) == 0
    qrels = write_qrels(tmp_path / "qrels.parquet", [{"qid": "q1", "node_id": "pkg/core.py::Engine.start",
                                                      "relevance": 1},
                                                     {"qid": "q2", "node_id": "pkg/core.py::Engine.start",
                                                      "relevance": 1}])
    capsys.readouterr()
    return out, qrels


def test_a_folder_whose_manifest_is_unreadable_is_refused(job_folder, capsys):
    """The manifest is the record of what was committed: without it a lost part would go unseen."""
    out, qrels = job_folder
    (out / "_manifest.json").write_text("{")
    (out / "part-00001.parquet").unlink()
    assert main(["eval", "--results", str(out), "--qrels", str(qrels)]) == 2
    err = capsys.readouterr().err
    assert "_manifest.json: unreadable _manifest.json" in err and "re-run the job into a new --out folder" in err


def test_a_folder_without_a_manifest_is_checked_shard_by_shard(job_folder, capsys):
    out, qrels = job_folder
    (out / "_manifest.json").unlink()
    assert main(["eval", "--results", str(out), "--qrels", str(qrels)]) == 0     # every shard whole
    capsys.readouterr()
    (out / "part-00001.parquet").unlink()
    assert main(["eval", "--results", str(out), "--qrels", str(qrels)]) == 2
    err = capsys.readouterr().err
    assert "part-00001.parquet: 1 shard(s) have plans but no result part, and there is no _manifest.json" in err
