"""scripts/devsets.py: the strict Acc and Recall columns of a ranking, and the mean and worst
repository of a table (issue 41, class 5), on literal rankings with hand-computed values."""

from __future__ import annotations

import math

import pytest

from tests.scripts.script_loader import load_script


devsets = load_script("devsets")


def test_recall_columns_sit_beside_the_strict_acc():
    # Four gold files; three are within the first ten distinct files, the fourth is 12th.
    files = [f"f{i}.py" for i in range(1, 13)]
    ranks = {"q": [f"{f}::x" for f in files]}
    gold_files = {"q": {"f1.py", "f4.py", "f9.py", "f12.py"}}
    gold_funcs = {"q": {"f1.py::x", "f2.py::x", "z.py::y"}}
    row = devsets.scores(ranks, ["q"], gold_files, gold_funcs)
    assert list(row) == ["file@1", "file@5", "file@10", "func@5", "func@10", "fileR@10", "fileR@20", "funcR@10"]
    assert row["file@10"] == 0.0 and row["func@10"] == 0.0        # strict: one gold is missing
    assert row["fileR@10"] == pytest.approx(3 / 4)
    assert row["fileR@20"] == 1.0
    assert row["funcR@10"] == pytest.approx(2 / 3)               # z.py::y never ranked


def test_recall_averages_only_over_queries_with_gold_at_its_level():
    ranks = {"a": ["x.py::f", "y.py"], "b": ["y.py::g"]}
    gold_files = {"a": {"x.py", "w.py"}, "b": {"y.py"}}
    gold_funcs = {"a": {"x.py::f"}}                               # b has no gold function
    row = devsets.scores(ranks, ["a", "b"], gold_files, gold_funcs)
    assert row["fileR@10"] == pytest.approx((1 / 2 + 1) / 2)
    assert row["funcR@10"] == 1.0                                 # a only


def test_recall_of_functions_uses_the_sets_key():
    # Multi-SWE's key: `ns.A.f` and `B.f` in one file are one definition, counted once.
    ranks = {"q": ["a.go::ns.A.f", "a.go::B.f", "b.go::g"]}
    gold_funcs = {"q": {devsets.file_and_name("a.go::A.f"), devsets.file_and_name("c.go::h")}}
    row = devsets.scores(ranks, ["q"], {"q": {"a.go"}}, gold_funcs, devsets.file_and_name)
    assert row["funcR@10"] == pytest.approx(1 / 2)


def test_mean_and_worst_repository_of_each_column():
    rows = {"fd": {"file@5": 0.5, "fileR@10": 0.9}, "jq": {"file@5": 0.25, "fileR@10": math.nan},
            "bat": {"file@5": 0.75, "fileR@10": 0.6}}
    mean, worst, names = devsets.mean_and_worst(rows)
    assert mean == pytest.approx({"file@5": 0.5, "fileR@10": 0.75})
    assert worst == {"file@5": 0.25, "fileR@10": 0.6}
    assert names == {"file@5": "jq", "fileR@10": "bat"}
    assert devsets.worst_names(names) == "(file@5: jq, fileR@10: bat)"


def test_recalls_count_the_share_of_gold_found():
    ranks = {
        # files in order: a.py, b.py, c.py; named definitions: a.py::f, b.py::g
        "q1": ["a.py::f", "a.py", "b.py::g", "c.py"],
        # 21 distinct files: the gold z.py is the 21st, outside both cut-offs but one
        "q2": [f"f{i:02d}.py" for i in range(19)] + ["y.py", "z.py"],
    }
    gold_files = {"q1": {"a.py", "d.py"}, "q2": {"y.py", "z.py"}}
    gold_funcs = {"q1": {"b.py::g", "a.py::h"}}
    row = devsets.recalls(ranks, ["q1", "q2"], gold_files, gold_funcs)
    # q1: a.py of {a.py, d.py} -> 1/2 at 10 and 20; q2: y.py is 20th -> 0 at 10, 1/2 at 20.
    assert row["fileR@10"] == pytest.approx((0.5 + 0.0) / 2)
    assert row["fileR@20"] == pytest.approx((0.5 + 0.5) / 2)
    # Only q1 has function gold: b.py::g of {b.py::g, a.py::h}.
    assert row["funcR@10"] == pytest.approx(0.5)


def test_the_95_margin_of_each_columns_mean_over_repositories():
    rows = {"a": {"file@5": 0.5, "func@10": 0.2}, "b": {"file@5": 0.7, "func@10": 0.4},
            "c": {"file@5": 0.9, "func@10": math.nan}}
    m = devsets.margins(rows)
    # file@5: sd 0.2, standard error 0.2 / sqrt(3), t(0.975, 2 df) 4.30265; func@10 (c has no
    # gold functions): sd sqrt(0.02), standard error 0.1, t(0.975, 1 df) 12.7062.
    assert m["file@5"] == pytest.approx(4.30265 * 0.2 / math.sqrt(3), abs=1e-5)
    assert m["func@10"] == pytest.approx(1.27062, abs=1e-5)
