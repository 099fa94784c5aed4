"""Breakdowns, planner regret and paired tests on constructed cases."""

import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from codenib.eval import report
from codenib.eval.breakdowns import planner_regret
from codenib.eval.qrels import read_qrels
from codenib.eval.queries import read_queries
from codenib.eval.runs import read_results
from codenib.eval.stats import paired_test

from tests.eval.conftest import write_qrels, write_queries, write_results


def test_planner_regret_on_a_constructed_case():
    # q1: auto chose semantic (RR 0.5) but fast_lexical had 1.0 -> regret 0.5.
    # q2: auto chose the best plan. q3: every plan scores 0 -> a tie, no regret.
    per_plan = {"fast_lexical": {"q1": 1.0, "q2": 0.0, "q3": 0.0},
                "semantic": {"q1": 0.5, "q2": 1.0, "q3": 0.0}}
    chosen = {"q1": "semantic", "q2": "semantic", "q3": "fast_lexical"}
    r = planner_regret(per_plan, chosen, ["q1", "q2", "q3", "q9"])
    assert r["queries"] == 3 and r["skipped"] == {"no recorded choice": 1}
    assert r["chosen"] == pytest.approx(1.5 / 3)
    assert r["best"] == pytest.approx(2.0 / 3)
    assert r["regret"] == pytest.approx(0.5 / 3)
    assert r["queries_with_regret"] == 1 and r["chose_best"] == 2
    assert r["confusion"] == {"fast_lexical": {"fast_lexical": 1},
                              "semantic": {"fast_lexical": 1, "semantic": 1}}
    assert r["per_plan"] == pytest.approx({"fast_lexical": 1 / 3, "semantic": 0.5})


def _mode_all_case(tmp_path, *, auto_rows=True):
    rankings = {
        ("q1", "fast_lexical"): ["a.py::g", "x.py::n"],
        ("q1", "semantic"): ["x.py::n", "a.py::g"],
        ("q2", "fast_lexical"): ["x.py::n"],
        ("q2", "semantic"): ["b.py::h"],
        ("q3", "fast_lexical"): ["x.py::n"],
        ("q3", "semantic"): ["y.py::m"],
    }
    plans = [{"qid": q, "plan": p, "mode": "all"} for q, p in rankings]
    if auto_rows:
        plans += [{"qid": "q1", "plan": "semantic", "mode": "auto"},
                  {"qid": "q2", "plan": "semantic", "mode": "auto"},
                  {"qid": "q3", "plan": "fast_lexical", "mode": "auto"}]
    results = write_results(tmp_path / "all", rankings, plans=plans)
    qrels = write_qrels(tmp_path / "qrels.parquet", [
        {"qid": "q1", "node_id": "a.py::g", "relevance": 1},
        {"qid": "q2", "node_id": "b.py::h", "relevance": 1},
        {"qid": "q3", "node_id": "c.py::w", "relevance": 1},
    ])
    return results, qrels


def test_regret_from_a_mode_all_folder(tmp_path):
    results, qrels = _mode_all_case(tmp_path)
    ev = report.evaluate_results(read_results(results), read_qrels(qrels), warn=lambda m: None)
    reg = ev.summary["regret"]["levels"]["node"]
    assert reg["RR@10"]["regret"] == pytest.approx(0.5 / 3)
    assert reg["R@10"]["regret"] == 0.0
    assert set(ev.summary["systems"]) == {"fast_lexical", "semantic", "auto"}
    assert ev.summary["systems"]["auto"]["node"]["RR@10"] == pytest.approx(1.5 / 3)
    assert ev.summary["regret"]["oracle"]["node"]["RR@10"] == pytest.approx(2 / 3)
    # The plan breakdown of a --mode all run groups queries by auto's choice.
    assert ev.summary["breakdowns"]["plan"]["semantic"]["n"]["node"] == 2


def test_regret_with_choices_from_an_auto_run(tmp_path):
    results, qrels = _mode_all_case(tmp_path, auto_rows=False)
    auto = write_results(tmp_path / "auto", {("q1", "semantic"): ["x.py::n"], ("q2", "semantic"): ["b.py::h"],
                                             ("q3", "fast_lexical"): ["x.py::n"]})
    ev = report.evaluate_results(read_results(results), read_qrels(qrels),
                                 auto=read_results(auto), warn=lambda m: None)
    assert ev.summary["regret"]["levels"]["node"]["RR@10"]["regret"] == pytest.approx(0.5 / 3)


def test_paired_test_with_a_constant_difference():
    t = paired_test([0.9, 0.8, 0.7, 0.6, 0.5], [0.4, 0.3, 0.2, 0.1, 0.0])
    assert t.delta == pytest.approx(0.5) and t.wins == 5 and t.losses == 0
    assert t.t_p == 0.0                       # zero spread, non-zero mean difference
    assert t.exact and t.permutations == 32
    assert t.permutation_p == pytest.approx(2 / 32)  # only all-plus and all-minus flips reach it


def test_paired_test_enumerates_sign_flips_exactly():
    a, b = [1.0, 2.0, 3.0, 0.0], [0.0, 0.0, 0.0, 1.0]  # differences 1, 2, 3, -1; sum 5
    t = paired_test(a, b)
    # |sum| >= 5 for sign patterns (+,+,+,+/-1 flipped either way) and their mirror images: 6 of 16.
    assert t.permutation_p == pytest.approx(6 / 16)
    ref = stats.ttest_rel(a, b)
    assert t.t_statistic == pytest.approx(ref.statistic) and t.t_p == pytest.approx(ref.pvalue)
    assert (t.wins, t.losses, t.ties) == (3, 1, 0)


def test_paired_test_samples_when_enumeration_is_too_large():
    rng = np.random.default_rng(1)
    a = rng.uniform(0.4, 1.0, 200)
    b = a - 0.2 + rng.normal(0, 0.05, 200)
    t = paired_test(a, b, permutations=2000, seed=3)
    assert not t.exact and t.permutations == 2000
    assert t.permutation_p == pytest.approx(1 / 2001) and t.t_p < 1e-10
    same = paired_test(a, a, permutations=500)
    assert same.permutation_p == 1.0 and same.t_p == 1.0


def test_comparison_and_breakdowns_in_the_summary(small_case, tmp_path):
    worse = write_results(tmp_path / "worse", {("q1", "fast_lexical"): ["x.py::n"],
                                               ("q2", "semantic"): ["b.py::h"]})
    ev = report.evaluate_results(read_results(small_case["results"]), read_qrels(small_case["qrels"]),
                                 queries=read_queries(small_case["queries"]),
                                 compare=read_results(worse), warn=lambda m: None)
    s = ev.summary
    assert s["queries"]["evaluated"] == {"node": 3, "file": 3, "function": 3}
    assert s["queries"]["judged_without_results"] == 1 and s["queries"]["results_not_judged"] == 1
    assert s["systems"]["run"]["node"]["RR@10"] == pytest.approx((1 / 2 + 1 / 3 + 0) / 3)
    # Files: q1 gold a.py ranks 1; q2 gold b.py, d.py: b.py ranks 1 -> R@10 = 1/2.
    assert s["systems"]["run"]["file"]["R@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert s["breakdowns"]["kind"]["structural"]["n"]["node"] == 1
    assert set(s["breakdowns"]["plan"]) == {"fast_lexical", "semantic", "(not recorded)"}
    c = s["comparison"]["levels"]["node"]["RR@10"]
    assert c["mean_a"] == pytest.approx((1 / 2 + 1 / 3) / 3) and c["mean_b"] == pytest.approx(1 / 3)
    json.dumps(report._jsonable(s))  # metrics.json must serialise


def test_write_report_replaces_an_old_report_atomically(small_case, tmp_path):
    ev = report.evaluate_results(read_results(small_case["results"]), read_qrels(small_case["qrels"]),
                                 queries=read_queries(small_case["queries"]), warn=lambda m: None)
    out = tmp_path / "report"
    report.write_report(ev, out, plots=False)
    report.write_report(ev, out, plots=False)
    # manifest.json lists what the report wrote, so a re-run replaces only that
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "metrics.json", "per_query.parquet",
                                                     "report.md"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _mswe_case(tmp_path):
    """Multi-SWE-bench-shaped judgments in two files (files; functions by node id, no file
    column) over an auto run; q3 has a gold file and no results."""
    results = write_results(tmp_path / "run", {
        ("q1", "bug_localisation"): ["a.js::A.f", "a.js", "b.js::g", "c.js::h"],
        ("q2", "bug_localisation"): ["x.c::main", "y.c::parse", "x.c::helper"],
    })
    files = write_qrels(tmp_path / "qrels_file.parquet", [
        {"qid": "q1", "file": "a.js", "relevance": 1}, {"qid": "q1", "file": "b.js", "relevance": 1},
        {"qid": "q2", "file": "y.c", "relevance": 1}, {"qid": "q2", "file": "z.c", "relevance": 1},
        {"qid": "q3", "file": "k.c", "relevance": 1}])
    functions = write_qrels(tmp_path / "qrels_function.parquet", [
        {"qid": "q1", "node_id": "a.js::f", "relevance": 1},
        {"qid": "q2", "node_id": "y.c::ns.parse", "relevance": 1}])
    return results, files, functions


def test_the_function_name_level_gives_multi_swe_benchs_function_accuracy(tmp_path):
    from codenib.eval.qrels import merge_qrels
    from codenib.eval.reportdata import EvalOptions

    results, files, functions = _mswe_case(tmp_path)
    qrels = merge_qrels([read_qrels(files), read_qrels(functions)])
    ev = report.evaluate_results(read_results(results), qrels, options=EvalOptions(
        measures=("Acc@1", "Acc@5", "Acc@10"), levels=("file", "function", "function_name")))
    s = ev.summary
    assert s["levels"] == ["file", "function", "function_name"]
    assert s["queries"]["evaluated"] == {"file": 3, "function": 2, "function_name": 2}
    means = s["systems"]["run"]
    # file: q1 [a.js, b.js, c.js] has both gold files in 2; q2 [x.c, y.c] lacks z.c; q3 has no results.
    assert means["file"] == pytest.approx({"Acc@1": 0.0, "Acc@5": 1 / 3, "Acc@10": 1 / 3})
    # function (exact ids): a.js::A.f is not a.js::f, y.c::parse is not y.c::ns.parse.
    assert means["function"] == pytest.approx({"Acc@1": 0.0, "Acc@5": 0.0, "Acc@10": 0.0})
    # function_name: q1's a.js::f first; q2's y.c::parse second among its named definitions.
    assert means["function_name"] == pytest.approx({"Acc@1": 0.5, "Acc@5": 1.0, "Acc@10": 1.0})
    from codenib.eval.markdown import render_markdown

    assert "- function_name level: named definitions matched by file and last name segment" in render_markdown(ev)


def _three_repositories(tmp_path, repos=True):
    """Five queries over repositories a (q1-q3), b (q4), c (q5); `run` finds q1's and q4's gold
    file first, `none` finds none."""
    hits = {"q1": True, "q2": False, "q3": False, "q4": True, "q5": False}
    run = write_results(tmp_path / "run", {(q, "bug_localisation"): [f"g{q}.py::f" if hit else "other.py::x"]
                                           for q, hit in hits.items()})
    none = write_results(tmp_path / "none", {(q, "bug_localisation"): ["other.py::x"] for q in hits})
    qrels = write_qrels(tmp_path / "qrels.parquet", [{"qid": q, "node_id": f"g{q}.py::f", "file": f"g{q}.py",
                                                      "relevance": 1} for q in hits])
    repo_of = {"q1": "a", "q2": "a", "q3": "a", "q4": "b", "q5": "c"}
    queries = write_queries(tmp_path / "queries.parquet",
                            [{"qid": q, "query": "text", **({"repo": repo_of[q]} if repos else {})} for q in hits])
    return run, none, qrels, queries


def test_the_mean_over_repositories_and_its_paired_test(tmp_path):
    from codenib.eval.html import render_html
    from codenib.eval.markdown import render_markdown, render_summary
    from codenib.eval.reportdata import EvalOptions

    run, none, qrels, queries = _three_repositories(tmp_path)
    ev = report.evaluate_results(read_results(run), read_qrels(qrels), queries=read_queries(queries),
                                 compare=read_results(none), warn=lambda m: None,
                                 options=EvalOptions(measures=("Acc@1",), levels=("file",)))
    s = ev.summary
    # Over queries 2/5; per repository a 1/3, b 1, c 0, so over repositories 4/9, worst c.
    assert s["systems"]["run"]["file"]["Acc@1"] == pytest.approx(0.4)
    assert s["macro"]["groups"] == {"file": 3}
    # The 95% margin over the three: sd sqrt(7/27), standard error sqrt(7/81), t(0.975, 2 df) 4.30265.
    assert s["macro"]["systems"]["run"]["file"]["Acc@1"] == pytest.approx(
        {"mean": 4 / 9, "margin95": 4.30265 * math.sqrt(7 / 81), "worst": 0.0, "worst_group": "c"}, abs=1e-5)
    assert s["breakdowns"]["repo"]["a"]["n"]["file"] == 3
    t = s["comparison"]["macro"]["levels"]["file"]["Acc@1"]
    assert (t["mean_a"], t["mean_b"], t["delta"]) == pytest.approx((4 / 9, 0.0, 4 / 9))
    assert (t["wins"], t["losses"], t["ties"]) == (2, 0, 3)
    # Weighted differences 5/9 (q1) and 5/3 (q4): of the four sign pairs, two reach |4/9|.
    assert t["exact"] and t["permutation_p"] == pytest.approx(0.5)
    assert s["comparison"]["levels"]["file"]["Acc@1"]["delta"] == pytest.approx(0.4)
    assert "## Mean over repositories" in render_markdown(ev)
    assert "| run | file | 3 | Acc@1 | 0.4444 | 1.2649 | 0.0000 | c |" in render_markdown(ev)
    # The breakdown shows the measures computed, not headline measures left out.
    assert "| group | system | level | n | Acc@1 |" in render_markdown(ev)
    assert "| a | run | file | 3 | 0.3333 |" in render_markdown(ev)
    assert "mean over 3 repositories (± 95%): Acc@1 0.4444 ± 1.2649; worst Acc@1 0.0000 (c)" in render_summary(ev)
    page = render_html(ev, {})
    assert 'id="macro"' in page and "Comparison over repositories" in page
    json.dumps(report._jsonable(s))


def test_no_mean_over_repositories_without_two_of_them(tmp_path):
    from codenib.eval.markdown import render_markdown

    run, none, qrels, queries = _three_repositories(tmp_path, repos=False)
    ev = report.evaluate_results(read_results(run), read_qrels(qrels), queries=read_queries(queries),
                                 compare=read_results(none), warn=lambda m: None)
    assert ev.summary["macro"] is None and "macro" not in ev.summary["comparison"]
    assert "Mean over repositories" not in render_markdown(ev)
    one = write_queries(tmp_path / "one.parquet", [{"qid": f"q{i}", "query": "t", "repo": "a"} for i in range(1, 6)])
    ev = report.evaluate_results(read_results(run), read_qrels(qrels), queries=read_queries(one), warn=lambda m: None)
    assert ev.summary["macro"] is None


def test_a_groups_file_gives_the_mean_over_repositories_of_a_query_set_without_repo(tmp_path):
    from codenib.eval.queries import read_groups

    run, none, qrels, queries = _three_repositories(tmp_path, repos=False)
    # SWE-bench-shaped (instance_id, repo), with a row for a query the run did not answer.
    groups = tmp_path / "instances.jsonl"
    lang = {"a": "go", "b": "rust", "c": "rust", "d": "c"}
    groups.write_text("".join(json.dumps({"instance_id": q, "repo": r, "language": lang[r]}) + "\n" for q, r in
                              (("q1", "a"), ("q2", "a"), ("q3", "a"), ("q4", "b"), ("q5", "c"), ("q9", "d"))))
    ev = report.evaluate_results(read_results(run), read_qrels(qrels), queries=read_queries(queries),
                                 groups=read_groups(groups), warn=lambda m: None)
    s = ev.summary
    # The same hand-computed case as above: per repository a 1/3, b 1, c 0.
    assert s["macro"]["systems"]["run"]["file"]["Acc@1"] == pytest.approx(
        {"mean": 4 / 9, "margin95": 4.30265 * math.sqrt(7 / 81), "worst": 0.0, "worst_group": "c"}, abs=1e-5)
    assert s["breakdowns"]["repo"]["b"]["n"]["file"] == 1 and "d" not in s["breakdowns"]["repo"]
    assert s["inputs"]["groups"] == str(groups) and s["warnings"] == []
    # The file's language column is a breakdown too: go (q1-q3) 1/3, rust (q4, q5) 1/2.
    by_language = s["breakdowns"]["language"]
    assert {g: e["systems"]["run"]["file"]["Acc@1"] for g, e in by_language.items()} == pytest.approx(
        {"go": 1 / 3, "rust": 0.5})


def test_a_groups_file_that_misses_queries_is_said_or_refused(tmp_path):
    from codenib.core.errors import BadInputError
    from codenib.eval.queries import read_groups

    run, none, qrels, queries = _three_repositories(tmp_path, repos=False)
    part = write_queries(tmp_path / "part.parquet", [{"qid": q, "repo": r} for q, r in
                                                     (("q1", "a"), ("q2", "a"), ("q4", "b"))])
    said = []
    ev = report.evaluate_results(read_results(run), read_qrels(qrels), groups=read_groups(part), warn=said.append)
    assert any("2 of 5 evaluated queries have no repo" in m and "q3, q5" in m for m in said)
    # q3 and q5 form one more group: a 1/2, b 1, (not recorded) 0.
    assert ev.summary["macro"]["systems"]["run"]["file"]["Acc@1"]["mean"] == pytest.approx(0.5)
    other = write_queries(tmp_path / "other.parquet", [{"qid": "x1", "repo": "a"}])
    with pytest.raises(BadInputError, match="names none of the 5 evaluated queries"):
        report.evaluate_results(read_results(run), read_qrels(qrels), groups=read_groups(other), warn=said.append)


@pytest.mark.parametrize("rows, needle", [
    ([{"qid": "q1"}], "lacks column(s) repo"),
    ([{"query": "t", "repo": "a"}], "lacks column(s) qid"),
    ([{"qid": "q1", "repo": "a"}, {"qid": "q1", "repo": "b"}], "gives qid q1 two repositories"),
    ([{"qid": "q1", "repo": None}, {"qid": "q2", "repo": ""}], "gives no query a repo (2 rows"),
])
def test_bad_groups_files_name_the_file_and_the_fix(tmp_path, rows, needle):
    from codenib.core.errors import BadInputError
    from codenib.eval.queries import read_groups

    path = write_queries(tmp_path / "g.parquet", rows)
    with pytest.raises(BadInputError, match=re.escape(needle)) as exc:
        read_groups(path)
    assert exc.value.path == str(path) and "qid" in exc.value.fix
    with pytest.raises(BadInputError, match="no such groups file"):
        read_groups(tmp_path / "missing.parquet")


def test_group_weights_make_the_weighted_mean_the_mean_over_groups():
    from codenib.eval.stats import group_weights

    groups = ["a", "a", "a", "b", "c"]
    w = group_weights(groups)
    assert w == pytest.approx([5 / 9, 5 / 9, 5 / 9, 5 / 3, 5 / 3])
    values = np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    assert (values * w).mean() == pytest.approx((1 / 3 + 1 + 0) / 3)
    t = paired_test(values, np.zeros(5), weights=w)
    assert t.mean_a == pytest.approx(4 / 9) and t.delta == pytest.approx(4 / 9)
    with pytest.raises(ValueError, match="one weight per query"):
        paired_test(values, np.zeros(5), weights=w[:4])
