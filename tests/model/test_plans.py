"""The plan registry, planned queries as data, and how a new plan is added."""

import pickle

import pytest

from codenib.errors import BadInputError
from codenib.model.parts import fuse
from tests.retrieval import Retrieval
from codenib.model.planner import MODE_PLANS, MODES, PLANS, PlannerCapabilities, RetrievalPlanner, plan_options
from codenib.model.plans import PLAN_REGISTRY, RetrievalPathPlan, RetrievalPlan, plan_class
from codenib.model.signals import query_signals


def test_registry_is_the_one_table_of_plans_and_modes():
    assert PLANS == tuple(PLAN_REGISTRY) == ("fast_lexical", "semantic", "hybrid_fusion", "structural_graph",
                                                 "bug_localisation")
    assert MODE_PLANS == {"sparse": "fast_lexical", "dense": "semantic", "hybrid": "hybrid_fusion",
                          "graph": "structural_graph"}
    assert MODES == ("auto", "sparse", "dense", "hybrid", "graph")
    with pytest.raises(BadInputError) as err:
        plan_class("magic")
    assert "fast_lexical, semantic, hybrid_fusion, structural_graph" in err.value.fix


def test_needs_follow_the_plan():
    planner = RetrievalPlanner()
    needs = {}
    for mode in ("sparse", "dense", "hybrid", "graph"):
        plan, _ = planner.plan(query_signals("who calls run_engine?"), plan_options("balanced", mode), PlannerCapabilities())
        needs[plan.plan] = plan_class(plan.plan).needs(plan)
    assert needs == {"fast_lexical": {"sparse", "symbols"}, "semantic": {"dense"},
                     "hybrid_fusion": {"sparse", "dense", "symbols"},
                     "structural_graph": {"sparse", "graph", "symbols"}}
    only_dense = RetrievalPathPlan("hybrid_fusion", 10, 0.0, 1.0)
    assert plan_class("hybrid_fusion").needs(only_dense) == {"dense"}


def test_planned_queries_are_data_and_execute_like_run(fixture_index):
    pipe = Retrieval(fixture_index)
    queries = ["who calls Engine.prepare?", "Turn the given text into a lowercase slug.", " "]
    plans = pickle.loads(pickle.dumps(pipe.plan(queries)))  # what Ray ships to the actors
    assert [p.error for p in plans] == [None, None, "empty query text"]
    a, b = pipe.session.executor().execute(queries, plans, 10), pipe.run(queries, 10)
    assert [(r.plan, r.candidates, r.trace, r.error) for r in a] == [(r.plan, r.candidates, r.trace, r.error)
                                                                       for r in b]
    # Executing a plan twice does not leak assembly details into the planned trace.
    assert plans[0].trace.detail == {}


class _FirstFile(RetrievalPlan):
    """A toy fifth plan: BM25 hits of the best file only."""

    name = "first_file"

    def parametrize(self, s, preset, hybrid_weights):
        return RetrievalPathPlan(self.name, preset.k, sparse_weight=1.0)

    def needs(self, plan):
        return frozenset({"sparse"})

    def assemble(self, q, parts):
        first = q.sparse[0].file if q.sparse else None
        return fuse([[c for c in q.sparse if c.file == first]])


class _ToyPlanner(RetrievalPlanner):
    def _choose(self, s, reasons):
        reasons.append("toy")
        return "first_file"


def test_a_new_plan_is_one_class_and_a_choice(fixture_index, monkeypatch):
    monkeypatch.setitem(PLAN_REGISTRY, "first_file", _FirstFile())
    pipe = Retrieval(fixture_index, planner=_ToyPlanner())
    result = pipe.search("slugify text", k=5)
    assert result.plan == "first_file"
    assert result.candidates and len({c.file for c in result.candidates}) == 1
    assert result.trace["reasons"] == ["toy"]
