"""Reading results folders and qrels; TREC run export and import."""

import math

import pyarrow as pa
import pytest

from codenib.core.errors import BadInputError
from codenib.eval.qrels import read_qrels
from codenib.eval.runs import read_results
from codenib.eval.trec import read_trec_run, trec_rows, write_trec_run

from tests.eval.conftest import write_qrels, write_results


def test_results_folder_is_read_across_parts_in_rank_order(small_case):
    results = read_results(small_case["results"])
    assert not results.multi_plan and results.complete and results.run_tag == "test-run"
    assert results.run() == {
        "q1": ["a.py::f", "a.py::g", "b.py::h"],
        "q2": ["b.py::x", "c.py::y", "b.py::h"],
        "q4": ["a.py::f"],
    }
    assert results.attrs["plan"] == {"q1": "fast_lexical", "q2": "semantic", "q4": "semantic"}
    assert results.attrs["index"]["q1"] == "idx/click"


def test_mode_all_results_keep_each_plans_ranking(tmp_path):
    rankings = {("q1", "fast_lexical"): ["a.py::f"], ("q1", "semantic"): ["b.py::g", "a.py::f"]}
    plans = [{"qid": "q1", "plan": "fast_lexical", "mode": "all"},
             {"qid": "q1", "plan": "semantic", "mode": "all"},
             {"qid": "q1", "plan": "semantic", "mode": "auto"}]
    results = read_results(write_results(tmp_path / "all", rankings, plans=plans))
    assert results.multi_plan and results.plans == ["fast_lexical", "semantic"]
    assert results.chosen == {"q1": "semantic"}
    assert results.run("fast_lexical") == {"q1": ["a.py::f"]}
    assert results.run() == {"q1": ["b.py::g", "a.py::f"]}  # auto's choice per query


def test_mode_all_results_without_choices_need_a_plan(tmp_path):
    rankings = {("q1", "fast_lexical"): ["a.py::f"], ("q1", "semantic"): ["b.py::g"]}
    results = read_results(write_results(tmp_path / "all", rankings))
    with pytest.raises(BadInputError, match="--plan"):
        results.run()


def test_folder_without_success_is_refused_unless_partial(tmp_path):
    folder = write_results(tmp_path / "run", {("q1", "semantic"): ["a.py::f"]}, success=False)
    with pytest.raises(BadInputError) as exc:
        read_results(folder)
    assert "_SUCCESS" in str(exc.value) and "--allow-partial" in str(exc.value)
    warnings = []
    results = read_results(folder, allow_partial=True, warn=warnings.append)
    assert not results.complete and results.run() == {"q1": ["a.py::f"]} and warnings


def test_qrels_with_node_and_file_columns(tmp_path):
    path = write_qrels(tmp_path / "q.parquet", [
        {"qid": "q1", "node_id": "a.py::f", "file": "a.py", "relevance": 1},
        {"qid": "q1", "node_id": "a.py::g", "file": "a.py", "relevance": 2},
        {"qid": "q2", "node_id": None, "file": "b.py", "relevance": 1},  # a file-only judgment
    ])
    qrels = read_qrels(path)
    assert qrels.nodes == {"q1": {"a.py::f": 1, "a.py::g": 2}}
    assert qrels.files == {"q1": {"a.py": 2}, "q2": {"b.py": 1}}


def test_file_only_qrels_have_no_node_level(tmp_path):
    path = write_qrels(tmp_path / "q.parquet", [{"qid": "q1", "file": "a.py", "relevance": 1}])
    qrels = read_qrels(path)
    assert qrels.nodes is None and qrels.files == {"q1": {"a.py": 1}}


def test_whole_number_float_relevance_is_accepted_with_a_warning(tmp_path):
    path = write_qrels(tmp_path / "q.parquet", [{"qid": "q1", "node_id": "a.py::f", "relevance": 1.0}],
                       relevance_type=pa.float64())
    warnings = []
    assert read_qrels(path, warn=warnings.append).nodes == {"q1": {"a.py::f": 1}}
    assert "relevance" in warnings[0]


@pytest.mark.parametrize("values,typ", [([0.5], pa.float64()), (["1"], pa.string()), ([None], pa.int64())])
def test_non_integer_relevance_is_bad_input(tmp_path, values, typ):
    path = write_qrels(tmp_path / "q.parquet", [{"qid": "q1", "node_id": "a.py::f", "relevance": v}
                                               for v in values], relevance_type=typ)
    with pytest.raises(BadInputError) as exc:
        read_qrels(path)
    text = str(exc.value)
    assert str(path) in text and "relevance" in text and "fix:" in text


def test_trec_round_trip(tmp_path, small_case):
    results = read_results(small_case["results"])
    rows = trec_rows(results.run(), results.run_scores(), "my run")
    path = tmp_path / "run.trec"
    assert write_trec_run(rows, path) == 7
    first = path.read_text().splitlines()[0].split()
    assert first[:4] == ["q1", "Q0", "a.py::f", "1"] and first[5] == "my_run"
    back = read_trec_run(path)
    assert back == rows
    again = read_results(path)
    assert again.run() == results.run()
    assert again.run_scores() == results.run_scores()  # repr() of a float reads back exactly


def test_trec_import_orders_by_score_like_trec_eval(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 b 1 0.5 t\nq1 Q0 a 2 0.9 t\nq1 Q0 c 3 0.5 t\n")
    assert read_results(path).run() == {"q1": ["a", "b", "c"]}  # ties keep rank order


def test_trec_export_rewrites_tied_scores_so_order_survives(tmp_path):
    warnings = []
    rows = trec_rows({"q": ["a", "b", "c"]}, {"q": [1.0, 1.0, math.nan]}, "t", warn=warnings.append)
    assert [r.score for r in rows] == [3.0, 2.0, 1.0] and warnings
    write_trec_run(rows, tmp_path / "r.trec")
    assert read_results(tmp_path / "r.trec").run() == {"q": ["a", "b", "c"]}


def test_trec_export_refuses_ids_with_whitespace(tmp_path):
    rows = trec_rows({"q": ["my file.py::f"]}, {"q": [1.0]}, "t")
    with pytest.raises(BadInputError, match="whitespace"):
        write_trec_run(rows, tmp_path / "r.trec")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_malformed_trec_lines_are_bad_input(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 a 1 notanumber t\n")
    with pytest.raises(BadInputError, match="line 1"):
        read_trec_run(path)
    path.write_text("q1 a 1 0.5\n")
    with pytest.raises(BadInputError, match="expected 6"):
        read_trec_run(path)


def test_kind_and_index_are_read_from_result_rows_and_plans(tmp_path):
    import pyarrow.parquet as pq

    folder = tmp_path / "run"
    folder.mkdir()
    pq.write_table(pa.table({"qid": ["q1", "q2"], "rank": [1, 1], "node_id": ["a.py::f", "b.py::g"],
                             "kind": ["lexical", None], "index": ["idx/a", "idx/b"]}),
                   folder / "part-00000.parquet")
    pq.write_table(pa.table({"qid": ["q2"], "plan": ["semantic"], "kind": ["semantic"],
                             "error": ["timeout"]}), folder / "plans.parquet")
    (folder / "_SUCCESS").write_text("")
    results = read_results(folder)
    assert results.attrs["kind"] == {"q1": "lexical", "q2": "semantic"}
    assert results.attrs["index"] == {"q1": "idx/a", "q2": "idx/b"}
    assert results.attrs["plan"] == {"q2": "semantic"} and results.errors == {"q2": "timeout"}


def test_a_swe_bench_shaped_query_set_is_read_as_run_reads_it(tmp_path):
    """`instance_id` (no `qid`) is the qid and the index, `problem_statement` the query text."""
    import json

    from codenib.eval.queries import read_queries

    path = tmp_path / "swe.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "a" * 40, "problem_statement": "it breaks",
         "patch": "--- a/x\n"},
        {"instance_id": "o__r-2", "repo": "o/r", "base_commit": "b" * 40, "problem_statement": "it hangs",
         "patch": "--- a/y\n"}]))
    queries = read_queries(path)
    assert queries.qids == ["o__r-1", "o__r-2"]
    assert queries.texts == {"o__r-1": "it breaks", "o__r-2": "it hangs"}
    assert queries.attrs == {"index": {"o__r-1": "o__r-1", "o__r-2": "o__r-2"},
                             "repo": {"o__r-1": "o/r", "o__r-2": "o/r"}}
