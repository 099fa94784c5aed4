"""The co_changed walk in the `bug_localisation` plan: with a weight, a file changed together
with the best-ranked file moves up by its co-change contribution, and the trace says so; at
weight 0 the plan does not walk them.

The repository is a real git repository made with pygit2, indexed by the real build."""

from __future__ import annotations

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


LEGEND = ('def draw_legend(labels, title):\n    """Draw the legend labels under a title."""\n'
          "    return [title] + labels\n")
# Both match the report weakly: colors.py ranks above spacing.py by its words alone.
SPACING = 'def pad(x):\n    """Space under a title."""\n    return x + 1\n'
COLORS = 'def parse_hex(code):\n    """Colour of legend labels and the title text."""\n    return int(code[1:], 16)\n'

REPORT = ("Legend labels overlap a long chart title\n\nWhen the chart title is long the legend labels "
          "overlap the title text. Expected: the legend labels sit below the title.")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """app/legend.py and app/spacing.py changed together twice (messages unlike the report)."""
    tmp = tmp_path_factory.mktemp("cochange_plan")
    root = tmp / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"app/legend.py": LEGEND, "app/spacing.py": SPACING, "app/colors.py": COLORS},
                    "Initial import", 1_000_000, [])
    c2 = git_commit(repo, {"app/legend.py": LEGEND + "\n", "app/spacing.py": SPACING.replace("1", "2")},
                    "Tweak offsets", 2_000_000, [c1])
    git_commit(repo, {"app/legend.py": LEGEND + "\n\n", "app/spacing.py": SPACING.replace("1", "3")},
               "Tweak offsets again", 3_000_000, [c2])
    build_index(root, tmp / "idx", BuildOptions(dense=False, progress=False, use_cache=False, jobs=1,
                                                history=HistorySpec()))
    return tmp / "idx"


def _search(index_dir: Path):
    return RetrievalSession.load(str(index_dir)).search(REPORT, plan_options("balanced"))


def test_the_walk_lifts_what_changed_with_the_best_file(index, monkeypatch):
    monkeypatch.setattr(history_evidence, "WEIGHTS", ())
    off = _search(index)
    monkeypatch.setattr(cochange, "COCHANGE_WEIGHT", 5.0)
    on = _search(index)
    assert on.plan == "bug_localisation"
    # pad (changed with draw_legend twice) below parse_hex without the walk, above it with it.
    assert _functions(off)[:3] == ["app/legend.py::draw_legend", "app/colors.py::parse_hex", "app/spacing.py::pad"]
    assert _functions(on)[:3] == ["app/legend.py::draw_legend", "app/spacing.py::pad", "app/colors.py::parse_hex"]
    assert on.trace["detail"]["plan"]["cochange"] == 5.0
    assert on.trace["detail"]["co_change"]["nodes"] >= 1
    assert any(r.startswith("history: co_changed walk") for r in on.trace["reasons"])
    pad = next(c for c in on.trace["detail"]["contributions"] if c["node_id"] == "app/spacing.py::pad")
    assert pad["contributions"]["history:co_change"] > 0


def _functions(result) -> list[str]:
    return [c.node_id for c in result.candidates if "::" in c.node_id]


def test_at_weight_0_the_edges_are_not_walked(index, monkeypatch):
    monkeypatch.setattr(history_evidence, "WEIGHTS", ())
    monkeypatch.setattr(cochange, "COCHANGE_WEIGHT", 0.0)
    result = _search(index)
    assert "cochange" not in result.trace["detail"]["plan"]
    assert "co_change" not in result.trace["detail"]
