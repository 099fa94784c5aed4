"""The co_changed walk in the `bug_localisation` plan: with a weight, a file changed together
with the best-ranked file joins the ranking with its co-change contribution, and the trace
says so; at weight 0 the plan does not walk them.

The repository is a real git repository made with pygit2, indexed by the real build."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from codenib.batch.session import RetrievalSession
from codenib.compiler.build import BuildOptions, build_index
from codenib.compiler.history import HistorySpec
from codenib.model import cochange, history_evidence
from codenib.model.planner import plan_options

LEGEND = 'def draw_legend(labels, title):\n    """Draw the legend labels under a title."""\n    return [title] + labels\n'
SPACING = "def pad(x):\n    return x + 1\n"
COLORS = "def parse_hex(code):\n    return int(code[1:], 16)\n"
REPORT = ("Legend labels overlap a long chart title\n\nWhen the chart title is long the legend labels "
          "overlap the title text. Expected: the legend labels sit below the title.")


def _commit(repo, files: dict[str, str], message: str, t: int, parents: list):
    root = Path(repo.workdir)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("t", "t@example.org", t, 0)
    return repo.create_commit("HEAD", sig, sig, message, repo.index.write_tree(), parents)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """app/legend.py and app/spacing.py changed together twice (messages unlike the report)."""
    tmp = tmp_path_factory.mktemp("cochange_plan")
    root = tmp / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = _commit(repo, {"app/legend.py": LEGEND, "app/spacing.py": SPACING, "app/colors.py": COLORS},
                 "Initial import", 1_000_000, [])
    c2 = _commit(repo, {"app/legend.py": LEGEND + "\n", "app/spacing.py": SPACING.replace("1", "2")},
                 "Tweak offsets", 2_000_000, [c1])
    _commit(repo, {"app/legend.py": LEGEND + "\n\n", "app/spacing.py": SPACING.replace("1", "3")},
            "Tweak offsets again", 3_000_000, [c2])
    build_index(root, tmp / "idx", BuildOptions(dense=False, progress=False, use_cache=False, jobs=1,
                                                history=HistorySpec()))
    return tmp / "idx"


def _search(index_dir: Path):
    return RetrievalSession.load(str(index_dir)).search(REPORT, plan_options("balanced"))


def test_the_walk_lifts_what_changed_with_the_best_file(index, monkeypatch):
    monkeypatch.setattr(history_evidence, "WEIGHTS", ())
    off = _search(index)
    monkeypatch.setattr(cochange, "COCHANGE_WEIGHT", 1.0)
    on = _search(index)
    assert on.plan == "bug_localisation"
    files = list(dict.fromkeys(c.file for c in on.candidates))
    assert files[:2] == ["app/legend.py", "app/spacing.py"]
    assert on.trace["detail"]["plan"]["cochange"] == 1.0
    assert on.trace["detail"]["co_change"]["files"] >= 1
    assert any(r.startswith("history: co_changed walk") for r in on.trace["reasons"])
    spacing = next(c for c in on.trace["detail"]["contributions"] if c["node_id"].startswith("app/spacing.py"))
    assert spacing["contributions"]["history:co_change"] > 0
    # spacing.py ranked below colors.py, or not at all, without the walk.
    before = list(dict.fromkeys(c.file for c in off.candidates))
    assert "app/spacing.py" not in before[:2]


def test_at_weight_0_the_edges_are_not_walked(index, monkeypatch):
    monkeypatch.setattr(history_evidence, "WEIGHTS", ())
    monkeypatch.setattr(cochange, "COCHANGE_WEIGHT", 0.0)
    result = _search(index)
    assert "cochange" not in result.trace["detail"]["plan"]
    assert "co_change" not in result.trace["detail"]
