"""History as evidence in the `bug_localisation` plan: a report that matches a past commit's
message ranks the file that commit changed first with history and not without; the trace
names the history runs; an index without history plans and ranks as before.

The repository is a real git repository made with pygit2, indexed by the real build."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from codenib.model.session import RetrievalSession
from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.history import HistorySpec
from codenib.model.history import cochange, evidence as history_evidence
from codenib.model.planner import plan_options
from tests.git_history import git_commit


# Neither definition's name uses the report's words (`n_name_words` 0 for both), so the words
# in their bodies and docstrings and, with history, the past fix decide.
LEGEND = '''"""Keys."""


def draw_keys(labels, title):
    """Draw the legend labels under a title."""
    lines = [title] + [f"* {label}" for label in labels]
    return "\\n".join(lines)
'''
LAYOUT = '''"""Boxes on a page."""


def stack_boxes(boxes, gap):
    """Place boxes (a long chart title, the legend labels) top to bottom, `gap` apart, so text never overlaps."""
    y, out = 0, []
    for height in boxes:
        out.append(y)
        y += height + gap
    return out
'''
COLORS = '''"""Colours."""


def parse_hex(code):
    return tuple(int(code[i:i + 2], 16) for i in (1, 3, 5))
'''

REPORT = ("Legend labels overlap a long chart title again\n\n"
          "When the chart title is long, the legend labels overlap the title text. This was fixed once "
          "before and came back in the last release. Expected: the legend labels sit below the title.")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """The same work tree indexed with and without --history."""
    tmp = tmp_path_factory.mktemp("hist")
    root = tmp / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"app/__init__.py": "", "app/legend.py": LEGEND, "app/layout.py": LAYOUT.replace(
           "height + gap", "height")}, "Initial import", 1_000_000, [])
    c2 = git_commit(repo, {"app/layout.py": LAYOUT}, "Fix legend labels overlapping a long chart title",
                    2_000_000, [c1])
    git_commit(repo, {"app/colors.py": COLORS}, "Add colour parsing for hex codes", 3_000_000, [c2])
    out = {}
    for name, history in (("with", HistorySpec()), ("without", None)):
        build_index(root, tmp / name, BuildOptions(dense=False, progress=False, use_cache=False, jobs=1,
                                                   history=history))
        out[name] = tmp / name
    return out


#: The signal these tests are about, at the weight it shipped with before the co-change walk
#: replaced it (`history.evidence.WEIGHTS`): the mechanism, not the packaged choice.
SIMILAR_ONLY = (("similar_changes", 0.5), ("fix_proneness", 0.0))


@pytest.fixture(autouse=True)
def similar_changes_only(monkeypatch):
    monkeypatch.setattr(history_evidence, "WEIGHTS", SIMILAR_ONLY)
    monkeypatch.setattr(cochange, "COCHANGE_WEIGHT", 0.0)


def _search(index_dir: Path):
    session = RetrievalSession.load(str(index_dir))
    return session.search(REPORT, plan_options("balanced"))


def _files(result) -> list[str]:
    return list(dict.fromkeys(c.file for c in result.candidates))


def test_a_report_like_a_past_fix_ranks_that_fix_s_file_first_with_history(indexes):
    without, with_history = _search(indexes["without"]), _search(indexes["with"])
    assert without.plan == with_history.plan == "bug_localisation"
    assert _files(without)[0] == "app/legend.py"        # the words of the report
    assert _files(with_history)[0] == "app/layout.py"   # the file the past fix changed


def test_the_trace_names_the_history_runs(indexes):
    trace = _search(indexes["with"]).trace
    weights = dict(SIMILAR_ONLY)
    assert trace["capabilities"]["history"] is True
    assert [n for n, _ in trace["detail"]["plan"]["history"]] == [n for n, w in SIMILAR_ONLY if w]
    assert set(trace["detail"]["history"]) == {n for n, w in weights.items() if w}
    assert trace["detail"]["history"]["similar_changes"]["files"] >= 1
    assert any(r.startswith("history: similar_changes") for r in trace["reasons"])
    top = trace["detail"]["contributions"][0]
    assert top["node_id"].startswith("app/layout.py")
    assert top["contributions"]["history:similar_changes"] > 0


def test_without_history_the_plan_and_ranking_are_those_of_the_history_less_plan(indexes, monkeypatch):
    """An index without history: no history in the trace at all, and the ranking equals that
    of the history index when the plan carries no history signal."""
    plain = _search(indexes["without"])
    assert "history" not in json.dumps(plain.trace)
    monkeypatch.setattr(history_evidence, "WEIGHTS", tuple((n, 0.0) for n, _ in history_evidence.WEIGHTS))
    off = _search(indexes["with"])
    assert "history" not in off.trace["detail"]["plan"]
    assert [(c.node_id, c.score) for c in off.candidates] == [(c.node_id, c.score) for c in plain.candidates]


def test_the_packaged_plan_walks_co_change_and_adds_no_signal(indexes, monkeypatch):
    """The packaged weights (chosen leave-one-repository-out): the co-change walk at 1, the
    signals off; the plan and the trace say so."""
    monkeypatch.undo()
    assert cochange.COCHANGE_WEIGHT == 1.0 and not any(w for _, w in history_evidence.WEIGHTS)
    trace = _search(indexes["with"]).trace
    assert "history" not in trace["detail"]["plan"] and trace["detail"]["plan"]["cochange"] == 1.0
    assert any(r.startswith("history: co_changed walk (weight 1)") for r in trace["reasons"])
    assert trace["detail"]["co_change"]["weight"] == 1.0
    # The top results are explained after the walk re-ranked them: features, then co-change.
    for row in trace["detail"]["contributions"]:
        assert any(k.startswith(("f_", "n_")) for k in row["contributions"])
