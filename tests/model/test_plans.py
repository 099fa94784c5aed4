"""The plan registry, planned queries as data, and how a new plan is added."""

import pickle

import pytest

from codenib.core.errors import BadInputError
from codenib.model.parts import fuse
from tests.retrieval import Retrieval
from codenib.model.planner import MODES, RetrievalPlanner, plan_options
from codenib.model.plans import MODE_PLANS, PLANS
from codenib.model.planspec import PlannerCapabilities
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


def test_the_plan_carries_what_the_executor_runs(fixture_index):
    # A long report planned: its searches, its fusion runs and weights and its parsed report
    # are in the plan (the executor decides none of them), and stay out of the trace.
    report = ("Store loses items after upgrade\n\n" + "We see this in production every night. " * 30
              + '\nTraceback (most recent call last):\n  File "/venv/site-packages/pkg/util.py", line 14, in put\n'
              "TypeError: bad item\n")
    pipe = Retrieval(fixture_index, retrieval_mode="hybrid")
    [planned] = pipe.plan([report])
    plan = planned.plan
    assert [s.name for s in plan.sparse_searches] == ["sparse"] and plan.dense_search.depth == 400
    assert [name for name, _ in plan.fusion] == ["sparse", "dense", "file_prior", "symbols"]
    assert not set(plan.to_dict()) & set(plan.EXECUTION)
    # The executor runs what the plan says: a plan fusing the BM25 run alone ranks as BM25.
    import dataclasses

    only_sparse = dataclasses.replace(planned, plan=dataclasses.replace(plan, fusion=(("sparse", 1.0),)))
    [res] = pipe.session.executor().execute([report], [only_sparse], 10)
    assert res.trace["detail"]["fusion_weights"] == [1.0]
    from codenib.ops.filter import demote_tests

    bm25 = fuse([pipe.session.executor()._branches([0], {0: plan}, {0: 100}, {}, {0: 0.0})[0][0]])
    assert plan.prefer_library
    assert [c.node_id for c in res.candidates] == [c.node_id for c in demote_tests(bm25)[:10]]
    auto = Retrieval(fixture_index).plan([report])[0].plan
    assert auto.plan == "bug_localisation" and auto.report is not None
    assert [s.name for s in auto.sparse_searches] == ["bm25", "title", "prose"] and auto.dense_search is None
