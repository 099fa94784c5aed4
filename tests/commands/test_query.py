"""`codenib query`: the plan, the ranked nodes, and `--explain`."""

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
