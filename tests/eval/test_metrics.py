"""Measures on literal runs with hand-computed values, and agreement with ir_measures."""

import math

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.core.errors import BadInputError
from codenib.eval import metrics

# q1: 4 relevant (b graded 2), z never retrieved; q2: one relevant at rank 3; q3: no results.
RUN = {"q1": ["a", "x", "b", "y", "c"], "q2": ["x", "y", "d"]}
QRELS = {"q1": {"a": 1, "b": 2, "c": 1, "z": 1, "x": 0}, "q2": {"d": 1}, "q3": {"e": 1}}

DCG_Q1 = 1 / math.log2(2) + 2 / math.log2(4) + 1 / math.log2(6)
IDCG_Q1 = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)

EXPECTED = {
    "R@1": {"q1": 1 / 4, "q2": 0.0, "q3": 0.0},
    "R@5": {"q1": 3 / 4, "q2": 1.0, "q3": 0.0},
    "P@1": {"q1": 1.0, "q2": 0.0, "q3": 0.0},
    "P@5": {"q1": 3 / 5, "q2": 1 / 5, "q3": 0.0},
    "P@10": {"q1": 3 / 10, "q2": 1 / 10, "q3": 0.0},   # divides by k, as trec_eval does
    "RR@10": {"q1": 1.0, "q2": 1 / 3, "q3": 0.0},
    "RR@2": {"q1": 1.0, "q2": 0.0, "q3": 0.0},
    "nDCG@10": {"q1": DCG_Q1 / IDCG_Q1, "q2": 0.5, "q3": 0.0},
    "AP": {"q1": (1 / 1 + 2 / 3 + 3 / 5) / 4, "q2": 1 / 3, "q3": 0.0},
    "Success@1": {"q1": 1.0, "q2": 0.0, "q3": 0.0},
    "Acc@5": {"q1": 0.0, "q2": 1.0, "q3": 0.0},       # q1's z is missing: not all gold found
    "Acc@1": {"q1": 0.0, "q2": 0.0, "q3": 0.0},
}


@pytest.mark.parametrize("measure", sorted(EXPECTED))
def test_every_measure_on_a_literal_run(measure):
    got = metrics.evaluate(RUN, QRELS, [measure])[measure]
    assert got == pytest.approx(EXPECTED[measure])


def test_hand_values_match_ir_measures():
    measures = ["R@1", "R@5", "P@1", "P@5", "P@10", "RR@10", "nDCG@10", "AP"]
    ours = metrics.evaluate(RUN, QRELS, measures)
    for m in ir_measures.iter_calc([ir_measures.parse_measure(x) for x in measures],
                                   _ir_qrels(QRELS), _ir_run(RUN)):
        assert ours[str(m.measure)][m.query_id] == pytest.approx(m.value)


def test_queries_without_results_count_as_zero():
    means = metrics.mean_of(metrics.evaluate(RUN, QRELS, ["R@5"]))
    assert means["R@5"] == pytest.approx((0.75 + 1.0 + 0.0) / 3)  # q3 is in the mean, as 0


def test_only_queries_with_a_relevant_item_are_judged():
    assert metrics.judged_qids({"a": {"x": 0}, "b": {"y": 2}, "c": {}}) == ["b"]


def test_a_doc_retrieved_twice_counts_once_at_its_best_rank():
    run = {"q": ["a", "a", "b"]}
    assert metrics.evaluate(run, {"q": {"b": 1}}, ["RR@10"])["RR@10"]["q"] == 0.5


def test_file_run_ranks_a_file_where_its_first_node_ranks():
    run = {"q": ["pkg/a.py::A.f", "pkg/b.py::g", "pkg/a.py::A", "pkg/c.py", "pkg/b.py::h"]}
    assert metrics.to_file_run(run) == {"q": ["pkg/a.py", "pkg/b.py", "pkg/c.py"]}


def test_file_qrels_take_the_highest_grade_of_their_nodes():
    qrels = {"q": {"a.py::f": 1, "a.py::g": 3, "b.py": 2, "c.py::k": 0}}
    assert metrics.to_file_qrels(qrels) == {"q": {"a.py": 3, "b.py": 2, "c.py": 0}}


def test_acc_at_k_needs_every_gold_item_after_deduplicating_files():
    run = {"q": ["f1.py::A", "f1.py::B", "f2.py::C", "f3.py"]}
    node_qrels = {"q": {"f1.py::B": 1, "f3.py::D": 1}}
    file_run, file_qrels = metrics.to_file_run(run), metrics.to_file_qrels(node_qrels)
    file_acc = metrics.evaluate(file_run, file_qrels, ["Acc@2", "Acc@3"])
    assert file_acc == {"Acc@2": {"q": 0.0}, "Acc@3": {"q": 1.0}}  # 4 nodes, 3 distinct files
    node_acc = metrics.evaluate(run, node_qrels, ["Acc@10"])
    assert node_acc["Acc@10"]["q"] == 0.0  # f3.py::D never retrieved, f3.py is not it


def test_recall_curve_matches_r_at_k():
    ks = [1, 2, 3, 5, 100]
    curve = metrics.recall_curve(RUN, QRELS, ks)
    for k, value in zip(ks, curve):
        assert value == pytest.approx(metrics.mean_of(metrics.evaluate(RUN, QRELS, [f"R@{k}"]))[f"R@{k}"])


@pytest.mark.parametrize("name", ["Foo@10", "P", "R@0", "nDCG@x", ""])
def test_unknown_or_malformed_measures_are_bad_input(name):
    with pytest.raises(BadInputError) as exc:
        metrics.parse_measure(name)
    assert "fix:" in str(exc.value)


def test_measure_names_follow_ir_measures():
    for name in ["R@10", "P@5", "RR@10", "RR", "nDCG@10", "nDCG", "AP", "AP@100", "Success@5"]:
        assert metrics.parse_measure(name).name == name == str(ir_measures.parse_measure(name))


# --- agreement with ir_measures on random runs ------------------------------------------

ORACLE_MEASURES = ["R@1", "R@3", "R@10", "P@1", "P@3", "P@10", "RR@10", "RR", "nDCG@10", "nDCG@3",
                   "nDCG", "AP", "AP@5", "Success@3"]
DOCS = [f"src/m{i % 4}.py::f{i}" for i in range(14)]


@st.composite
def run_and_qrels(draw):
    run, qrels = {}, {}
    for q in range(draw(st.integers(1, 4))):
        qid = f"q{q}"
        run[qid] = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=12))
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=6))
        qrels[qid] = judged
    return run, qrels


@settings(max_examples=30, deadline=None)
@given(run_and_qrels())
def test_agrees_with_ir_measures_on_random_runs(case):
    run, qrels = case
    ours = metrics.evaluate(run, qrels, ORACLE_MEASURES)
    theirs = list(ir_measures.iter_calc([ir_measures.parse_measure(m) for m in ORACLE_MEASURES],
                                        _ir_qrels(qrels), _ir_run(run)))
    # ir_measures scores only queries that are in the run and have a relevant doc; we score
    # every judged query, the others as zero.
    for m in theirs:
        if any(r > 0 for r in qrels[m.query_id].values()):
            assert ours[str(m.measure)][m.query_id] == pytest.approx(m.value, abs=1e-9), (m, run, qrels)
    file_run, file_qrels = metrics.to_file_run(run), metrics.to_file_qrels(qrels)
    ours_f = metrics.evaluate(file_run, file_qrels, ORACLE_MEASURES)
    for m in ir_measures.iter_calc([ir_measures.parse_measure(x) for x in ORACLE_MEASURES],
                                   _ir_qrels(file_qrels), _ir_run(file_run)):
        if any(r > 0 for r in file_qrels[m.query_id].values()):
            assert ours_f[str(m.measure)][m.query_id] == pytest.approx(m.value, abs=1e-9)


def _ir_run(run):
    # Strictly decreasing scores, so ir_measures' re-sort by score keeps our list order.
    return [ir_measures.ScoredDoc(q, d, float(len(docs) - i)) for q, docs in run.items()
            for i, d in enumerate(docs)]


def _ir_qrels(qrels):
    return [ir_measures.Qrel(q, d, r) for q, rels in qrels.items() for d, r in rels.items()]


def test_function_level_drops_file_nodes_and_duplicate_suffixes():
    # Localization benchmarks' function level: file nodes out, `#2` folded into its symbol.
    run = {"q": ["a.py", "a.py::f#2", "b.py::C.m", "a.py::f", "c.py::g"]}
    qrels = {"q": {"a.py::f": 1, "b.py::C.m": 1, "a.py": 1}}
    frun = metrics.to_function_run(run)
    fqrels = metrics.to_function_qrels(qrels)
    assert frun == {"q": ["a.py::f", "b.py::C.m", "c.py::g"]}
    assert fqrels == {"q": {"a.py::f": 1, "b.py::C.m": 1}}
    acc = metrics.evaluate(frun, fqrels, ["Acc@1", "Acc@2"])
    assert acc["Acc@1"]["q"] == 0.0 and acc["Acc@2"]["q"] == 1.0


def test_file_level_accuracy_is_strict():
    run = {"q": ["a.py::f", "a.py::g", "b.py::h", "c.py"]}
    files = metrics.to_file_run(run)
    assert files == {"q": ["a.py", "b.py", "c.py"]}
    acc = metrics.evaluate(files, {"q": {"a.py": 1, "c.py": 1}}, ["Acc@2", "Acc@3"])
    assert acc["Acc@2"]["q"] == 0.0 and acc["Acc@3"]["q"] == 1.0


# --- Multi-SWE-bench's function level: definitions matched by file and last name segment ----------

def test_file_and_name_keeps_the_file_and_the_last_name_segment():
    assert metrics.file_and_name("src/a.rs::Opts.parse#2") == "src/a.rs::parse"
    assert metrics.file_and_name("include/fmt/format.h::fmt.detail.write") == "include/fmt/format.h::write"
    assert metrics.file_and_name("src/a.rs::parse") == "src/a.rs::parse"
    assert metrics.file_and_name("src/a.rs") == "src/a.rs"          # a file's own id unchanged


def test_function_name_run_drops_files_and_keeps_the_first_of_each_key():
    run = {"q": ["src/a.rs", "src/a.rs::Opts.parse", "src/a.rs::parse#2", "src/b.rs::ns.A.f",
                 "src/a.rs::Cli.run", "src/b.rs::g", "src/b.rs::f"]}
    # file node dropped; Opts.parse and parse#2 are one key, ns.A.f and f are one key
    assert metrics.to_function_name_run(run) == {"q": ["src/a.rs::parse", "src/b.rs::f", "src/a.rs::run",
                                                       "src/b.rs::g"]}


def test_function_name_qrels_drop_file_nodes_and_keep_the_highest_grade():
    qrels = {"q": {"a.rs::A.f": 1, "a.rs::B.f": 2, "a.rs": 3, "b.rs::g#2": 1}}
    assert metrics.to_function_name_qrels(qrels) == {"q": {"a.rs::f": 2, "b.rs::g": 1}}


def test_acc_at_k_by_function_and_by_function_name_differ_as_hand_computed():
    run = {"q": ["src/a.rs", "src/a.rs::Opts.parse", "src/a.rs::parse#2", "src/b.rs::ns.A.f",
                 "src/a.rs::Cli.run", "src/b.rs::g", "src/b.rs::f"]}
    gold = {"q": {"src/a.rs::parse": 1, "src/b.rs::B.g": 1}}
    by = {}
    for name in ("function", "function_name"):
        level = metrics.LEVELS[name]
        by[name] = metrics.evaluate(level.run(run), level.qrels(gold), ["Acc@1", "Acc@3", "Acc@4", "Acc@10"])
    # function: b.rs::B.g is never retrieved as such (only b.rs::g), so no cutoff finds both.
    assert {m: v["q"] for m, v in by["function"].items()} == {"Acc@1": 0.0, "Acc@3": 0.0, "Acc@4": 0.0,
                                                             "Acc@10": 0.0}
    # function_name: a.rs::parse at 1, b.rs::g (= B.g) at 4 of [a::parse, b::f, a::run, b::g].
    assert {m: v["q"] for m, v in by["function_name"].items()} == {"Acc@1": 0.0, "Acc@3": 0.0, "Acc@4": 1.0,
                                                                  "Acc@10": 1.0}


def test_levels_are_named_and_checked():
    assert metrics.parse_levels(["file", " function_name", "file"]) == ("file", "function_name")
    assert metrics.DEFAULT_LEVELS == ("node", "file", "function")
    with pytest.raises(BadInputError, match="unknown level.*func.*function_name"):
        metrics.parse_levels(["func"])
    with pytest.raises(BadInputError, match="no level"):
        metrics.parse_levels([" "])


def test_localisation_recall_counts_distinct_files_and_definitions():
    # Issue 41, class 5: Recall@k = |gold within the first k distinct files (or definitions)| / |gold|.
    # Nodes of 12 files; the gold files a.py (rank 1), k.py (11th distinct file) and z.py (absent).
    nodes = ["a.py::f", "a.py::g", "b.py", "c.py::h", "d.py", "e.py", "f.py", "g.py", "h.py", "i.py", "j.py",
             "k.py::m", "k.py::m#2"]
    files = metrics.to_file_run({"q": nodes})
    assert files["q"][10] == "k.py" and len(files["q"]) == 11
    gold = {"q": {"a.py": 1, "k.py": 1, "z.py": 1}}
    r = metrics.evaluate(files, gold, ["R@10", "R@20"])
    assert r["R@10"]["q"] == pytest.approx(1 / 3)   # a.py only
    assert r["R@20"]["q"] == pytest.approx(2 / 3)   # + k.py; z.py never retrieved
    # Definitions: file nodes dropped and `#2` folded, so k.py::m is the 4th definition.
    funcs = metrics.to_function_run({"q": nodes})
    assert funcs["q"] == ["a.py::f", "a.py::g", "c.py::h", "k.py::m"]
    fgold = metrics.to_function_qrels({"q": {"k.py::m#2": 1, "c.py::h": 1, "y.py::n": 1, "a.py": 1}})
    r = metrics.evaluate(funcs, fgold, ["R@3", "R@10"])
    assert r["R@3"]["q"] == pytest.approx(1 / 3)    # c.py::h is 3rd; k.py::m is 4th
    assert r["R@10"]["q"] == pytest.approx(2 / 3)   # y.py::n is missing


def test_mean_and_worst_over_groups_skip_groups_without_gold():
    s = metrics.mean_and_worst({"fd": 0.5, "jq": math.nan, "bat": 0.25, "fmt": 0.75})
    assert s == metrics.GroupSummary(0.5, 0.25, "bat")      # (0.5 + 0.25 + 0.75) / 3
    tie = metrics.mean_and_worst({"x": 0.2, "y": 0.2})
    assert tie.worst_group == "x"                           # the first of a tie
    none = metrics.mean_and_worst({"x": math.nan})
    assert math.isnan(none.mean) and math.isnan(none.worst) and none.worst_group == "-"
