"""scripts/routing.py: routing accuracy of a labelled question set against a real index."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "routing.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("routing", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_accuracy_with_and_without_the_symbol_table(fixture_index_dir, tmp_path, capsys):
    pkg = fixture_index_dir.name
    questions = _write(tmp_path / "q.jsonl", [
        # Two plain words: only the table says they are names (without it, neither is a target).
        {"package": pkg, "query": "who calls prepare or slugify", "category": "graph", "relation": "calls",
         "direction": "incoming"},
        {"package": pkg, "query": "what does Engine.start call", "category": "graph", "relation": "calls",
         "direction": "outgoing"},
        {"package": pkg, "query": "where is run_engine defined", "category": "lookup"},
        # Labelled wrong on purpose: the planner reads it as callers.
        {"package": pkg, "query": "who calls helper", "category": "graph", "relation": "calls",
         "direction": "outgoing"},
    ])
    assert _load_script().main([str(questions), "--index-root", str(fixture_index_dir.parent), "--misses"]) == 0
    out = capsys.readouterr()
    lines = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in out.out.splitlines()}
    assert lines["all"][1:4] == ["4", "0.750", "0.500"]
    assert lines["graph: calls incoming"][1:4] == ["1", "1.000", "0.000"]
    assert "MISS [graph calls outgoing] 'who calls helper'" in out.err


def test_an_unknown_category_exits_2(tmp_path, capsys):
    questions = _write(tmp_path / "q.jsonl", [{"query": "x", "category": "graph"}, {"query": "y", "category": "misc"}])
    assert _load_script().main([str(questions), "--index-root", str(tmp_path)]) == 2
    assert "line 2: field 'category' must be one of graph, lookup, behaviour" in capsys.readouterr().err
