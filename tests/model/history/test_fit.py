"""Localisation weights fitted on the repository's own history (`codenib index --history
--fit-weights`): deterministic and moved from the prior in the expected direction, leakage
free (a commit's evidence comes from its proper ancestors only), stored in the index and
named in the trace, and an index built without them unchanged.

The repository is a real git repository made with pygit2, indexed by the real build. In it,
six modules share their words ("adjust", "value"), so BM25 over the code cannot tell them
apart; each commit's message names a topic word that only earlier commit messages carry,
and a topic always changes the same module: similar past changes is the evidence that
works, and the fit must raise its weight above the prior's."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from codenib.model.session import RetrievalSession
from codenib.model.weights import FITTED_PATH, MANIFEST_KEY, load_index_weights, load_packaged_weights
from codenib.commands.cli import main
from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.history import HistorySpec
from codenib.index.loaded import load_index
from codenib.model.history import evidence as history_evidence, fit as history_fit
from codenib.model.pipelines import RetrieveRerankPipeline
from codenib.model.planner import plan_options
from tests.git_history import git_commit


TOPICS = ("quasar", "nebula", "pulsar", "comet", "meteor", "galaxy")
N_COMMITS = 48
PRIOR_HISTORY = dict(history_evidence.WEIGHTS)["similar_changes"]

REPORT = ("The pulsar handler returns a wrong value\n\n"
          "After the last release the pulsar handling gives back a value that is off by one. "
          "Expected: the adjusted value is the input plus its offset, as it was before.")


def _module(k: int, n: int) -> str:
    return f'"""Handler {k}."""\n\n\ndef handler_{k}(value):\n    """Return the value adjusted."""\n    return value + {n}\n'


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """An initial import, then `N_COMMITS` commits, topic j % 6 changing module j % 6; two of
    them also carry the word "xylophone" (the leakage probe: m0 first, m1 later)."""
    root = tmp_path_factory.mktemp("fit") / "repo"
    git = pygit2.init_repository(str(root), initial_head="main")
    head = git_commit(git, {"pkg/__init__.py": "", **{f"pkg/m{k}.py": _module(k, 0) for k in range(6)}},
                      "Initial import", 1_000_000, [])
    for j in range(N_COMMITS):
        k = j % 6
        extra = " xylophone" if j in (12, 37) else ""
        head = git_commit(git, {f"pkg/m{k}.py": _module(k, j + 1)}, f"{TOPICS[k]}: adjust the value{extra}",
                          1_000_000 + 1_000 * (j + 1), [head])
    return root


@pytest.fixture(scope="module")
def indexes(repo, tmp_path_factory):
    """The repository indexed with history, with history and fitted weights (the CLI), and
    without history."""
    tmp = tmp_path_factory.mktemp("idx")
    build_index(repo, tmp / "history", BuildOptions(dense=False, progress=False, use_cache=False, jobs=1,
                                                    history=HistorySpec()))
    build_index(repo, tmp / "plain", BuildOptions(dense=False, progress=False, use_cache=False, jobs=1))
    assert main(["index", str(repo), "--out", str(tmp / "fitted"), "--no-dense", "--no-cache", "--jobs", "1",
                 "--quiet", "--history", "--fit-weights"]) == 0
    return {name: tmp / name for name in ("history", "plain", "fitted")}


def _fit(index_dir: Path):
    index = load_index(index_dir, dense=False)
    return history_fit.fit_history(index, index.history, load_packaged_weights(), PRIOR_HISTORY)


def test_the_fit_is_deterministic_and_raises_the_evidence_that_works(indexes):
    first, second = _fit(indexes["history"]), _fit(indexes["history"])
    assert first == second
    assert first.fitted and first.examples >= history_fit.MIN_EXAMPLES
    fitted = dict(first.history)["similar_changes"]
    assert fitted > PRIOR_HISTORY                     # the one signal that tells the modules apart
    assert first.train_file_at5[1] >= first.train_file_at5[0]
    assert first.weights.to_dict() != load_packaged_weights().to_dict()


def test_too_few_commits_keep_the_prior(indexes):
    index = load_index(indexes["history"], dense=False)
    few = history_fit.fit_history(index, index.history, load_packaged_weights(), PRIOR_HISTORY,
                                  limit=history_fit.MIN_EXAMPLES - 1)
    assert not few.fitted and few.weights == load_packaged_weights() and few.history == (("similar_changes", PRIOR_HISTORY),)


def test_a_commit_is_never_its_own_evidence_nor_is_a_later_one(indexes):
    index = load_index(indexes["history"], dense=False)
    history = index.history
    probes = [i for i, m in enumerate(history.messages) if "xylophone" in m]
    later, earlier = probes                           # newest first
    message = history.messages[earlier]
    # Unrestricted, the two xylophone commits are the best matches of the earlier one's message.
    assert {c for c, _ in history.similar_commits(message, k=2)} == {history.ids[later], history.ids[earlier]}
    ancestors = history.ancestors(history.ids[earlier])
    assert ancestors == frozenset(range(earlier + 1, len(history)))     # a linear history: the older rows
    hidden = frozenset(range(len(history))) - ancestors
    allowed = {c for c, _ in history.similar_commits(message, exclude=hidden)}
    assert allowed and allowed <= {history.ids[i] for i in ancestors}
    # The training example's history column is built from the ancestors only: the later
    # xylophone commit (m1) would lift m1.py, the commit itself (m0) m0.py.
    leaky = history.similar_changes(message)
    clean = history.similar_changes(message, exclude=hidden)
    ex = history_fit.example(index, history, earlier)
    column = {index.nodes.node_id[r]: v for r, v in zip(ex.rows.tolist(), ex.X[:, -1])}
    top = max(clean.files.values())
    for f in ("pkg/m0.py", "pkg/m1.py"):
        assert leaky.files[f] > clean.files.get(f, 0.0)
        assert column.get(f, 0.0) == pytest.approx(clean.files.get(f, 0.0) / top)


def test_fitted_weights_are_stored_listed_and_used_at_query_time(indexes):
    manifest = json.loads((indexes["fitted"] / "manifest.json").read_text())
    entry = manifest[MANIFEST_KEY]
    assert entry["path"] == FITTED_PATH and entry["version"] == history_fit.FIT_VERSION and entry["fitted"]
    assert FITTED_PATH in manifest["artifacts"]
    stored = json.loads((indexes["fitted"] / FITTED_PATH).read_text())
    fit = _fit(indexes["history"])
    assert stored["weights"] == fit.weights.to_dict() and stored["history"] == dict(fit.history)
    session = RetrievalSession.load(str(indexes["fitted"]))
    assert session.weights == load_index_weights(session.index) and session.weights.source.startswith(f"index:{FITTED_PATH}")
    result = session.search(REPORT, plan_options("balanced"))
    assert result.plan == "bug_localisation"
    detail = result.trace["detail"]
    assert detail["weights"] == session.weights.source
    assert detail["history"]["similar_changes"]["weight"] == stored["history"]["similar_changes"]
    assert result.candidates[0].file == "pkg/m2.py"   # pulsar's module
    # The Python pipeline, given no weights, ranks with the index's fitted ones too.
    piped = RetrieveRerankPipeline(session.index).search(REPORT)
    assert piped.trace["detail"]["weights"] == session.weights.source
    assert [(c.node_id, c.score) for c in piped.candidates] == [(c.node_id, c.score) for c in result.candidates]
    # Weights given to the job win over the index's.
    given = RetrievalSession.load(str(indexes["fitted"]), weights=tuple(load_packaged_weights().values.items()))
    assert given.search(REPORT, plan_options("balanced")).trace["detail"]["weights"] == "given"


def test_without_fitted_weights_the_index_is_unchanged(indexes):
    """--fit-weights only adds its file and manifest entry: every other artifact has the same
    bytes; without it (or without history) sessions use the packaged weights, and an index
    without history names no weights in its trace."""
    fitted = json.loads((indexes["fitted"] / "manifest.json").read_text())
    plain_history = json.loads((indexes["history"] / "manifest.json").read_text())
    assert MANIFEST_KEY not in plain_history
    same = {k: v for k, v in fitted["artifacts"].items() if k != FITTED_PATH}
    assert same == plain_history["artifacts"]
    for name in ("history", "plain"):
        session = RetrievalSession.load(str(indexes[name]))
        assert session.weights == load_packaged_weights()
    trace = RetrievalSession.load(str(indexes["plain"])).search(REPORT, plan_options("balanced")).trace
    assert "weights" not in trace["detail"] and "history" not in json.dumps(trace)


def test_fit_weights_needs_history(repo, tmp_path, capsys):
    assert main(["index", str(repo), "--out", str(tmp_path / "x"), "--no-dense", "--quiet", "--fit-weights"]) == 2
    assert "--history" in capsys.readouterr().err and not (tmp_path / "x").exists()
