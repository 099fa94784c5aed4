"""RetrievalPlanner: determinism, every budget x capability combination, signal cases."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from codenib.core.errors import BadInputError
from codenib.model.planner import MODES, RetrievalPlanner, plan_options
from codenib.model.plans import PLANS
from codenib.model.planspec import BUDGETS, PlannerCapabilities
from codenib.model.signals import query_signals

PLANNER = RetrievalPlanner()
QUERIES = [
    "where is `Context.invoke` defined",
    "who calls parse_args?",
    "what does Parser.parse_tuple call?",
    "Return the bytecode as bytes.",
    "how do I render a template with `Environment.get_template` and autoescape",
    "Traceback (most recent call last):\n  File \"src/app/core.py\", line 10, in run\nValueError: bad " + "word " * 60,
    "",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(QUERIES) | st.text(max_size=80), st.sampled_from(list(BUDGETS)),
       st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_same_inputs_same_plan(query, budget, dense, sparse, graph, llm):
    caps = PlannerCapabilities(dense=dense, sparse=sparse or not dense, graph=graph,
                               embedding_rerank=dense, llm_rerank=llm)
    a = PLANNER.plan(query_signals(query), plan_options(budget), caps)
    b = RetrievalPlanner().plan(query_signals(query), plan_options(budget), caps)
    assert a == b


@pytest.mark.parametrize("budget,mode", list(itertools.product(BUDGETS, MODES)))
def test_every_budget_and_capability_combination_yields_a_runnable_plan(budget, mode):
    for dense, sparse, graph, llm in itertools.product([True, False], repeat=4):
        caps = PlannerCapabilities(dense, sparse, graph, dense, llm)
        for q in QUERIES:
            if not (dense or sparse):
                with pytest.raises(BadInputError, match="neither a sparse nor a dense"):
                    PLANNER.plan(query_signals(q), plan_options(budget, mode), caps)
                continue
            plan, trace = PLANNER.plan(query_signals(q), plan_options(budget, mode), caps)
            assert plan.plan in PLANS and trace.plan == plan.plan
            # Runnable: every branch the plan uses exists.
            assert plan.dense_weight == 0 or dense
            assert plan.sparse_weight == 0 or sparse
            assert plan.graph is None or (graph and BUDGETS[budget].graph)
            assert plan.rerank != "llm" or llm
            if trace.intended != plan.plan:
                assert trace.reasons, "a degradation must say why"


def test_signal_cases_pick_the_expected_plans():
    pick = lambda q: PLANNER.plan(query_signals(q))[0]
    assert pick("go to definition ProgressBar.render").plan == "fast_lexical"
    assert pick("`parse_args`").plan == "fast_lexical"
    s = pick("who calls `Context.invoke`?")
    assert s.plan == "structural_graph" and s.graph.direction == "callers"
    assert pick("functions called by Parser.subparse").graph.direction == "callees"
    assert pick("what does do_join call?").graph.direction == "callees"
    assert pick("Return the default stream encoding if not found.").plan == "semantic"
    assert pick("Get the default for a parameter from default_map.").plan == "semantic"
    assert pick("default_map lookup").plan == "fast_lexical"
    assert pick(QUERIES[5]).plan == "bug_localisation"  # a long bug report with a traceback
    # A report in Chinese naming one identifier: a report, not a look-up of `parse_date`.
    chinese = "parse_date 解析日期错误\n\n输入的字符串带有时区时，调用 `parse_date` 解析日期失败，升级以后才出现。"
    assert pick(chinese).plan == "bug_localisation"


def test_degradations_are_traced():
    no_graph = PlannerCapabilities(graph=False)
    plan, trace = PLANNER.plan(query_signals("who calls parse_args?"), plan_options("balanced"), no_graph)
    assert (trace.intended, plan.plan) == ("structural_graph", "fast_lexical")
    assert "no graph" in trace.reasons[-1]
    plan, trace = PLANNER.plan(query_signals("who calls parse_args?"), plan_options("fast"))
    assert plan.plan == "fast_lexical" and "budget fast" in trace.reasons[-1]
    plan, trace = PLANNER.plan(query_signals("Open the file lazily."), plan_options("balanced"), PlannerCapabilities(dense=False))
    assert plan.plan == "fast_lexical" and "no dense" in trace.reasons[-1]


def test_budgets_set_k_rerank_and_traversal():
    q = query_signals("who calls parse_args?")
    assert PLANNER.plan(q, plan_options("fast"))[0].k == 32
    assert PLANNER.plan(q, plan_options("balanced"))[0].graph.method == "bfs"
    assert PLANNER.plan(q, plan_options("thorough"))[0].graph.method == "ppr"
    sem = query_signals("Return the default stream encoding if not found.")
    plan, _ = PLANNER.plan(sem, plan_options("balanced", rerank="embedding"))
    assert (plan.rerank, plan.rerank_top) == ("embedding", 50)
    plan, trace = PLANNER.plan(sem, plan_options("thorough", rerank="llm"), PlannerCapabilities(llm_rerank=False))
    assert plan.rerank == "none" and "no LLM endpoint" in trace.reasons[-1]


def test_fixed_modes_bypass_the_choice():
    q = query_signals("who calls parse_args?")
    for mode, expected in {"sparse": "fast_lexical", "dense": "semantic", "hybrid": "hybrid_fusion",
                           "graph": "structural_graph"}.items():
        assert PLANNER.plan(q, plan_options("balanced", mode))[0].plan == expected


def test_bad_names_list_the_valid_choices():
    with pytest.raises(BadInputError, match="fast, balanced, thorough"):
        plan_options("cheap")
    with pytest.raises(BadInputError, match="auto, sparse"):
        plan_options("balanced", "magic")
