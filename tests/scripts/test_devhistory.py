"""scripts/devhistory.py: the history weights are chosen by strict Acc alone; the Recall
columns travel beside them (issue 41)."""

from __future__ import annotations

import math

import pytest

from tests.scripts.script_loader import load_script


devhistory = load_script("devhistory")


def test_the_objective_reads_the_acc_columns_only():
    assert devhistory.COLUMNS[:devhistory.OBJECTIVE] == ("file@5", "func@10")
    # (0.5 + 0.25) / 2 and (1.0 + 0.5) / 2 averaged; the Recall values (0.9 ...) do not count.
    per_repo = {"a": (0.5, 0.25, 0.9, 0.9, 0.9), "b": (1.0, 0.5, 0.0, 0.0, 0.0),
                "c": (math.nan, math.nan, 1.0, 1.0, 1.0)}      # c: no gold, left out
    assert devhistory._objective(per_repo, ["a", "b", "c"]) == pytest.approx((0.375 + 0.75) / 2)


def test_rows_print_recall_beside_acc_with_mean_and_worst(capsys):
    rows = {"no history": {"fd": (0.5, 0.25, 0.75, 1.0, 0.5), "jq": (1.0, 0.5, 0.25, 0.5, 1.0)}}
    devhistory.print_rows(rows, ["fd", "jq"])
    out = capsys.readouterr().out.splitlines()
    assert out[2].split() == ["no", "history", "fd", "0.500", "0.250", "0.750", "1.000", "0.500"]
    summary = [ln.replace("(", " ").replace(")", " ").split() for ln in out
               if ln.startswith("no history") and "(" in ln]
    # mean, its 95% margin, worst, worst repository of file@5 and func@10; then of fileR@10,
    # fileR@20, funcR@10. Two repositories: margin = t(0.975, 1 df) 12.7062 x |a - b| / 2.
    assert summary[0][2:] == ["0.750", "±3.177", "0.500", "fd", "0.375", "±1.588", "0.250", "fd"]
    assert summary[1][2:] == ["0.500", "±3.177", "0.250", "jq", "0.750", "±3.177", "0.500", "jq",
                              "0.750", "±3.177", "0.500", "fd"]


def test_rows_are_tested_against_the_base_over_repositories(capsys):
    from types import SimpleNamespace

    # fd has three reports, jq one; "walk" wins fd's first report and jq's (file@5) and loses
    # nothing; func@10 of q3 is NaN (no gold definition) on both sides.
    cases = {q: SimpleNamespace(repo=r) for q, r in (("q1", "fd"), ("q2", "fd"), ("q3", "fd"), ("q4", "jq"))}
    nan = math.nan
    base = {"q1": (0.0, 0.0), "q2": (1.0, 1.0), "q3": (0.0, nan), "q4": (0.0, 1.0)}
    walk = {"q1": (1.0, 0.0), "q2": (1.0, 1.0), "q3": (0.0, nan), "q4": (1.0, 1.0)}
    devhistory.print_tests({"no history": base, "walk": walk}, cases, "no history")
    line = capsys.readouterr().out.splitlines()[-1]
    # file@5 over repositories: fd 1/3 -> 2/3, jq 0 -> 1, so (1/3 + 1) / 2 = 0.667; func@10 unchanged.
    assert line.split()[:4] == ["walk", "file@5", "+0.667", "(+2/-0,"]
    assert "func@10 +0.000 (+0/-0, p 1.000)" in line
