"""`RetrieveRerankPipeline`: the planner over the one executor, ranked as `codenib query` ranks."""

from __future__ import annotations

import json

import pytest

from codenib.commands.cli import main
from codenib.core.errors import CodeNibError
from codenib.core.types import EDGES_SCHEMA
from codenib.index.graph import CodeGraph
from codenib.index.loaded import load_index
from codenib.model.pipelines import RetrieveRerankPipeline
from codenib.model.planner import MODES
from codenib.model.session import RetrievalSession

STRUCTURAL = "who calls Engine.prepare?"
# A bug report: a title, prose and a traceback through the fixture's own frames.
BUG_REPORT = """Engine.start crashes on a fresh engine

Starting an engine right after creating it fails; the log shows:

Traceback (most recent call last):
  File "scripts/tool.py", line 9, in main
    e.start()
  File "pkg/core.py", line 18, in start
    self.prepare()
  File "pkg/core.py", line 24, in prepare
    super().setup()
  File "pkg/base.py", line 3, in setup
    self.ready = True
AttributeError: 'Engine' object has no attribute 'ready'
"""


@pytest.fixture(scope="module")
def index(fixture_index_dir):
    # Loaded as `codenib query` loads it (device auto), so dense scores match to the bit.
    return load_index(fixture_index_dir)


def _cli(index_dir, text: str, capsys, k: int) -> dict:
    assert main(["query", str(index_dir), text, "--json", "-k", str(k)]) == 0
    return json.loads(capsys.readouterr().out)


def _ranking(candidates) -> list[tuple[str, float]]:
    return [(c.node_id, c.score) for c in candidates]


@pytest.mark.parametrize("text, plan", [(STRUCTURAL, "structural_graph"), (BUG_REPORT, "bug_localisation")],
                         ids=["structural", "bug-report"])
def test_the_pipeline_ranks_as_codenib_query(index, fixture_index_dir, capsys, text, plan):
    # No weights passed: the pipeline ranks bug reports with the weights `codenib query` uses.
    pipe = RetrieveRerankPipeline(index, k=10)
    result = pipe.search(text)
    out = _cli(fixture_index_dir, text, capsys, k=10)
    assert out["plan"] == plan and result.plan == plan
    assert _ranking(result.candidates) == [(r["node_id"], r["score"]) for r in out["results"]]
    assert len(result.candidates) >= 3
    # The plan and its trace (signals, budget, capabilities, plan) are kept on the instance.
    assert pipe.last_selected_plan == out["plan"]
    assert json.loads(json.dumps(pipe.last_planner_trace)) == out["trace"]
    trace = pipe.last_planner_trace
    assert trace["plan"] == plan and trace["budget"] == "balanced" and trace["capabilities"]["graph"] is True
    assert trace["signals"] and trace["detail"]["plan"]["plan"] == plan


def test_the_last_plan_is_the_last_querys(index):
    pipe = RetrieveRerankPipeline(index)
    assert pipe.last_selected_plan is None and pipe.last_planner_trace is None
    first, last = pipe.run([STRUCTURAL, "Turn the given text into a lowercase slug."], k=5)
    assert (first.plan, last.plan) == ("structural_graph", "semantic")
    assert pipe.last_selected_plan == "semantic" and pipe.last_planner_trace is last.trace
    assert len(last.candidates) == 5


def test_structural_questions_walk_the_code_graph_it_is_given(index, fixture_index_dir):
    bare = load_index(fixture_index_dir, graph=False, dense=False)
    without = RetrieveRerankPipeline(bare)
    without.search(STRUCTURAL)
    assert without.last_selected_plan == "fast_lexical"
    assert without.last_planner_trace["capabilities"]["graph"] is False
    assert "structural_graph -> fast_lexical: the index has no graph" in without.last_planner_trace["reasons"]

    walked = RetrieveRerankPipeline(bare, code_graph=index.graph).search(STRUCTURAL)
    full = RetrieveRerankPipeline(index).search(STRUCTURAL)
    assert walked.plan == "structural_graph" and walked.trace["detail"]["plan"]["graph"]["direction"] == "callers"
    assert _ranking(walked.candidates) == _ranking(full.candidates)


def test_a_code_graph_over_other_nodes_is_refused(index):
    other = CodeGraph(["elsewhere.py::f"], EDGES_SCHEMA.empty_table())
    with pytest.raises(CodeNibError, match="code_graph has 1 nodes"):
        RetrieveRerankPipeline(index, code_graph=other)


@pytest.mark.parametrize("kwargs, names", [
    ({"retrieval_mode": "semantic"}, MODES),
    ({"retrieval_mode": "all"}, MODES),          # a batch-run mode, not a pipeline's
    ({"budget": "cheap"}, ("fast", "balanced", "thorough")),
    ({"rerank": "cross"}, ("none", "embedding", "llm")),
    ({"k": 0}, ("k=10",)),
])
def test_bad_options_are_refused_naming_the_choices(index, kwargs, names):
    with pytest.raises(CodeNibError) as err:
        RetrieveRerankPipeline(index, **kwargs)
    assert all(n in str(err.value) for n in names), str(err.value)


def test_the_default_weights_are_the_ones_codenib_query_uses(index, fixture_index_dir):
    # The index's fitted weights, else the packaged ones: a `RetrievalSession`'s, as `codenib query` loads it.
    pipe = RetrieveRerankPipeline(index)
    weights = pipe.executor.parts.localise_weights
    assert weights == RetrievalSession.load(str(fixture_index_dir)).weights and weights.source == "packaged"
