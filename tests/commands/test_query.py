"""`codenib query`: the plan, the ranked nodes, and `--explain`."""

import json

import pytest

from codenib.commands.cli import main


def test_explain_shows_signals_table_matches_and_the_rule(fixture_index_dir, capsys):
    # "prepare" is a plain word: only the index's symbol table makes it a target.
    assert main(["query", str(fixture_index_dir), "hey, who calls prepare? thanks", "--explain", "-k", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("plan: structural_graph")
    assert "relation calls  direction incoming  target prepare" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("prepare "))
    # One definition (Engine.prepare): specificity 1.
    assert row.split()[1:5] == ["no", "name", "1", "1.000"]
    assert "why: structural signal 0.9: calls incoming of prepare" in out
    assert "pkg/core.py::Engine.start" in out


def test_without_explain_the_table_is_not_printed(fixture_index_dir, capsys):
    assert main(["query", str(fixture_index_dir), "what inherits from Base", "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("plan: structural_graph") and "symbol table" not in out
    assert "pkg/core.py::Engine" in out


BUG_REPORT = ("Engine.start crashes on a fresh engine\n\nStarting an engine right after creating it fails; the log "
              "shows:\n\nTraceback (most recent call last):\n  File \"pkg/core.py\", line 18, in start\n"
              "    self.prepare()\n  File \"pkg/core.py\", line 24, in prepare\n    super().setup()\n"
              "AttributeError: 'Engine' object has no attribute 'ready'\n")


@pytest.mark.parametrize("text", ["who calls prepare?", BUG_REPORT], ids=["structural", "bug-report"])
def test_plain_output_is_short_plan_why_and_ranked_nodes(fixture_index_dir, capsys, text):
    assert main(["query", str(fixture_index_dir), text, "-k", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("plan: ")
    assert max(len(line) for line in lines) <= 200, max(lines, key=len)
    assert not any(line.startswith("trace") or "{" in line for line in lines), lines
    why = [line for line in lines if line.strip().startswith("why:")]
    assert 1 <= len(why) <= 2
    ranked = [line for line in lines if line[:4].strip().rstrip(".").isdigit()]
    assert len(ranked) == 5 and ranked[0].split()[0] == "1."
    rank, score, node_id = ranked[0].split()[:3]
    assert float(score) and "::" in node_id or node_id.endswith(".py")
    assert len(lines) <= 1 + 3 + 5


def test_explain_adds_the_full_trace(fixture_index_dir, capsys):
    assert main(["query", str(fixture_index_dir), BUG_REPORT, "-k", "3", "--explain"]) == 0
    out = capsys.readouterr().out
    trace = json.loads(out.split("\ntrace:\n", 1)[1])
    assert trace["plan"] == "bug_localisation" and "signals" in trace and "detail" in trace
    assert main(["query", str(fixture_index_dir), BUG_REPORT, "-k", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trace"]["plan"] == "bug_localisation"


def test_the_bug_report_why_says_what_the_plan_searches(fixture_index_dir, capsys):
    # The plan fetches no dense run, even on an index with vectors; its why line says so.
    assert main(["query", str(fixture_index_dir), BUG_REPORT, "-k", "3", "--json"]) == 0
    trace = json.loads(capsys.readouterr().out)["trace"]
    assert trace["capabilities"]["dense"] is True
    why = next(r for r in trace["reasons"] if r.startswith("long report"))
    assert "no dense search" in why and "where present" not in why
    assert "dense" not in trace["detail"]["runs"]
