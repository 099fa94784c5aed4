"""`RetrievalPlanner`: query signals x budget x capabilities -> a declarative `RetrievalPathPlan`.

Deterministic and cheap: no model, no LLM, no I/O. The same inputs always give the same
plan, and the trace says why (including every degradation forced by a missing capability).
Plans are decided once per query (`plan_query`: in the batch driver, or in-process for
`codenib query` and `RetrieveRerankPipeline.run`) and travel with the query as data.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from codenib.errors import BadInputError, CodeNibError
from codenib.model.plans import MODE_PLANS, PLANS, plan_class
from codenib.model.planspec import (  # noqa: F401 - the planner's public data types
    BUDGETS,
    BudgetPreset,
    GraphExpansionPlan,
    PlannerCapabilities,
    PlannerTrace,
    QueryPlan,
    RetrievalPathPlan,
)
from codenib.model.intent import SymbolTable
from codenib.model.signals import QuerySignals, query_signals

MODES = ("auto", *MODE_PLANS)
RERANKERS = ("none", "embedding", "llm")

#: Signal thresholds: a query is structural / lexical / semantic from these scores up.
STRUCTURAL_MIN = 0.5
LEXICAL_MIN = 0.6
SEMANTIC_MIN = 0.5


class RetrievalPlanner:
    """Maps (signals, budget, capabilities, mode) to a plan. Deterministic; never calls an LLM."""

    def __init__(self, hybrid_weights: tuple[float, float] = (1.0, 1.0)):
        self.hybrid_weights = hybrid_weights   # (sparse, dense) RRF weights

    def check(self, budget: str, mode: str, rerank: str | None, capabilities: Any = None) -> None:
        """Validate the options every query of a run shares.

        Raises:
            BadInputError: unknown budget, mode or reranker, or an index with no sparse,
                dense or graph capability at all.
        """
        _preset(budget)
        if mode not in MODES:
            raise BadInputError(f"unknown mode {mode!r}", fix=f"use one of: {', '.join(MODES)}")
        if rerank is not None and rerank not in RERANKERS:
            raise BadInputError(f"unknown reranker {rerank!r}", fix=f"use one of: {', '.join(RERANKERS)}")
        caps = capabilities or PlannerCapabilities()
        if not (caps.sparse or caps.dense):
            raise BadInputError("the index has neither a sparse nor a dense index",
                                fix="rebuild it with `codenib index`")

    def plan(self, signals: QuerySignals, budget: str = "balanced", capabilities: Any = None,
             mode: str = "auto", rerank: str | None = None) -> tuple[RetrievalPathPlan, PlannerTrace]:
        """Choose and parametrize a plan.

        Args:
            rerank: none | embedding | llm to force a reranker (None: the budget decides).

        Raises:
            BadInputError: as `check`.
        """
        self.check(budget, mode, rerank, capabilities)
        preset = _preset(budget)
        caps = capabilities or PlannerCapabilities()
        reasons: list[str] = []
        intended = MODE_PLANS[mode] if mode != "auto" else self._choose(signals, reasons)
        plan_name = self._degrade(intended, preset, caps, reasons)
        plan = self._parametrize(plan_name, signals, preset, caps, rerank, reasons)
        trace = PlannerTrace(signals.to_dict(), preset.name, _caps_dict(caps), mode, intended,
                             plan.plan, tuple(reasons))
        return plan, trace

    def plan_query(self, text: str, budget: str = "balanced", capabilities: Any = None, mode: str = "auto",
                   rerank: str | None = None, symbols: SymbolTable | None = None) -> QueryPlan:
        """Signals and plan of one query text, as data; a query that cannot be planned
        (empty text, bad options) carries its error instead of raising.

        Args:
            symbols: the index's symbol table (`LoadedIndex.symbols`, `load_symbols`): with
                it, plain words that name definitions can be targets ("who calls invoke").
        """
        if not isinstance(text, str) or not text.strip():
            return QueryPlan(mode, error="empty query text")
        signals = query_signals(text, symbols)
        try:
            plan, trace = self.plan(signals, budget, capabilities, mode, rerank)
        except CodeNibError as exc:
            return QueryPlan(mode, signals, error=str(exc))
        return QueryPlan(mode, signals, plan, trace)

    def plan_queries(self, texts: Sequence[str], budget: str = "balanced", capabilities: Any = None,
                     mode: str = "auto", rerank: str | None = None,
                     symbols: SymbolTable | None = None) -> list[QueryPlan]:
        """`plan_query` for every text."""
        return [self.plan_query(t, budget, capabilities, mode, rerank, symbols) for t in texts]

    # -- choice ------------------------------------------------------------------------------

    def _choose(self, s: QuerySignals, reasons: list[str]) -> str:
        if s.structural >= STRUCTURAL_MIN and s.target:
            reasons.append(f"structural signal {s.structural}: {s.relation} {s.direction} of "
                           f"{', '.join(s.targets or (s.target,))} ({s.rule})")
            return "structural_graph"
        if s.lexical >= LEXICAL_MIN and s.target:
            reasons.append(f"lexical signal {s.lexical}: exact-name look-up of {s.target!r}")
            return "fast_lexical"
        if s.long_text:
            reasons.append("long report: files-first localisation from BM25 of the whole text, title and "
                           "prose, mentions, the graph and dense where present")
            return "bug_localisation"
        if s.semantic >= SEMANTIC_MIN:
            # Natural language dominates even when a few identifiers are mentioned: on the
            # dev sets the dense branch alone beat fusion with BM25 for such sentences.
            reasons.append(f"semantic signal {s.semantic}: natural-language behaviour query")
            return "semantic"
        if s.keywords.symbols():
            reasons.append("short mixed query (a few words with code identifiers)")
            return "hybrid_fusion"
        reasons.append("no dominant signal")
        return "hybrid_fusion"

    def _degrade(self, plan: str, preset: BudgetPreset, caps, reasons: list[str]) -> str:
        # Each plan names its fallback; the chain ends because an index always has a sparse
        # or a dense branch (checked above), and the cap guards against a cycle.
        for _ in range(len(PLANS) + 1):
            step = plan_class(plan).degrade(preset, caps)
            if step is None:
                return plan
            plan, reason = step
            reasons.append(reason)
        raise BadInputError(f"no plan fits the index's capabilities {_caps_dict(caps)}",
                            fix="rebuild the index with `codenib index`")

    def _parametrize(self, plan: str, s: QuerySignals, preset: BudgetPreset, caps, rerank: str | None,
                     reasons: list[str]) -> RetrievalPathPlan:
        params = plan_class(plan).parametrize(s, preset, self)
        chosen = self._reranker(plan, preset, caps, rerank, reasons)
        top = preset.rerank_top if chosen != "none" else 0
        if chosen != "none" and top == 0:
            top = min(50, params.k)
        return dataclasses.replace(params, rerank=chosen, rerank_top=top)

    def _reranker(self, plan: str, preset: BudgetPreset, caps, rerank: str | None, reasons: list[str]) -> str:
        if rerank is None:
            # Plans whose answers are already precise take no default reranker (see
            # `RetrievalPlan.budget_rerank`). The budget's default reranker is the LLM
            # where allowed and configured, otherwise none.
            if not plan_class(plan).budget_rerank or preset.rerank_top == 0:
                return "none"
            return "llm" if preset.llm and caps.llm_rerank else "none"
        if rerank == "llm" and not caps.llm_rerank:
            reasons.append("llm rerank -> none: no LLM endpoint configured")
            return "none"
        if rerank == "llm" and not preset.llm:
            reasons.append(f"llm rerank requested at budget {preset.name}: allowed because it was asked for")
        if rerank == "embedding" and not caps.embedding_rerank:
            reasons.append("embedding rerank -> none: the index has no dense model")
            return "none"
        return rerank


def _preset(budget: str) -> BudgetPreset:
    if budget not in BUDGETS:
        raise BadInputError(f"unknown budget {budget!r}", fix=f"use one of: {', '.join(BUDGETS)}")
    return BUDGETS[budget]


def _caps_dict(caps) -> dict[str, bool]:
    return {k: bool(getattr(caps, k, False)) for k in ("dense", "sparse", "graph", "embedding_rerank", "llm_rerank")}
