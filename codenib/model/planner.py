"""`RetrievalPlanner`: query signals x budget x capabilities -> a declarative `RetrievalPathPlan`.

Deterministic and cheap: no model, no LLM, no I/O. The same inputs always give the same
plan, and the trace says why (including every degradation forced by a missing capability).
Plans are decided once per query (`plan_query`; `plan_rows` for query rows: in the batch
driver, the Ray Data adapter, or in-process for `codenib query`) and travel with the query
as data. Options are checked once, at the edge, into a `PlanOptions` (`plan_options`);
`--mode all` becomes its modes in `run_modes` alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from codenib.core.errors import BadInputError, CodeNibError
from codenib.model.plans import MODE_PLANS, PLANS, plan_class
from codenib.model.planspec import (
    BUDGETS,
    BudgetPreset,
    PlanOptions,
    PlannerCapabilities,
    PlannerTrace,
    QueryPlan,
    RetrievalPathPlan,
)
from codenib.model.intent.tokens import SymbolTable
from codenib.model.signals import QuerySignals, query_signals

MODES = ("auto", *MODE_PLANS)
#: The fixed modes a `--mode all` run executes for every query.
ALL_MODES = tuple(MODE_PLANS)
#: `--mode` of the batch entry points: a planner mode, or all (every fixed mode for every query).
RUN_MODES = MODES + ("all",)
RERANKERS = ("none", "embedding", "llm")

#: Signal thresholds: a query is structural / lexical / semantic from these scores up.
STRUCTURAL_MIN = 0.5
LEXICAL_MIN = 0.6
SEMANTIC_MIN = 0.5


class RetrievalPlanner:
    """Maps (signals, budget, capabilities, mode) to a plan. Deterministic; never calls an LLM."""

    def __init__(self, hybrid_weights: tuple[float, float] = (1.0, 1.0)):
        self.hybrid_weights = hybrid_weights   # (sparse, dense) RRF weights

    def plan(self, signals: QuerySignals, options: PlanOptions | None = None, capabilities: Any = None,
             text: str | None = None) -> tuple[RetrievalPathPlan, PlannerTrace]:
        """Choose and parametrize a plan for one mode (`options.mode` is not all; default:
        auto at budget balanced). With `text` (the query's cleaned text) the plan carries its
        searches, ready to execute.

        Raises:
            BadInputError: an index with no sparse or dense capability at all.
        """
        caps = capabilities or PlannerCapabilities()
        check_capabilities(caps)
        options = options or PlanOptions(BUDGETS["balanced"])
        preset, mode = options.budget, options.mode
        reasons: list[str] = []
        intended = MODE_PLANS[mode] if mode != "auto" else self._choose(signals, reasons)
        plan_name = self._degrade(intended, preset, caps, reasons)
        plan = self._parametrize(plan_name, signals, preset, caps, options.rerank, reasons)
        if text is not None:
            plan = plan_class(plan_name).searches(text, signals, plan)
        trace = PlannerTrace(signals.to_dict(), preset.name, _caps_dict(caps), mode, intended,
                             plan.plan, tuple(reasons))
        return plan, trace

    def plan_query(self, text: str, options: PlanOptions, capabilities: Any = None,
                   symbols: SymbolTable | None = None) -> QueryPlan:
        """Signals and plan of one query text (cleaned: `codenib.core.querytext`), as data; a
        query that cannot be planned (empty text, an unusable index) carries its error
        instead of raising.

        Args:
            symbols: the index's symbol table (`LoadedIndex.symbols`, `load_symbols`): with
                it, plain words that name definitions can be targets ("who calls invoke").
        """
        if not isinstance(text, str) or not text.strip():
            return QueryPlan(options.mode, error="empty query text")
        signals = query_signals(text, symbols)
        try:
            plan, trace = self.plan(signals, options, capabilities, text)
        except CodeNibError as exc:
            return QueryPlan(options.mode, signals, error=str(exc))
        return QueryPlan(options.mode, signals, plan, trace)

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
            # What `BugLocalisation` runs: BM25 runs, mentions and the graph; no vector search.
            reasons.append("long report: files-first localisation from BM25 of the whole text, its title and "
                           "prose, the code it mentions and the graph around it (no dense search)")
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
        params = plan_class(plan).with_capabilities(plan_class(plan).parametrize(s, preset, self.hybrid_weights),
                                                    caps, reasons)
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


def plan_options(budget: str, mode: str = "auto", rerank: str | None = None) -> PlanOptions:
    """The run's planning options, checked: the one place a budget, mode or reranker name
    from the command line, a job spec or an adapter is validated.

    Raises:
        BadInputError: unknown budget, mode or reranker.
    """
    for what, value, valid in (("budget", budget, tuple(BUDGETS)), ("mode", mode, RUN_MODES)):
        if value not in valid:
            raise BadInputError(f"unknown {what} {value!r}", fix=f"use one of: {', '.join(valid)}")
    if rerank is not None and rerank not in RERANKERS:
        raise BadInputError(f"unknown reranker {rerank!r}", fix=f"use one of: {', '.join(RERANKERS)}")
    return PlanOptions(BUDGETS[budget], mode, rerank)


def check_capabilities(caps: Any) -> None:
    """Raises BadInputError for an index with neither a sparse nor a dense index (no plan runs)."""
    if not (caps.sparse or caps.dense):
        raise BadInputError("the index has neither a sparse nor a dense index",
                            fix="rebuild it with `codenib index`")


def run_modes(mode: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The modes a run plans each query with, as (executed, recorded only): `all` executes
    every fixed mode and records the planner's own choice; any other mode executes itself.
    The one place `--mode all` expands."""
    return (ALL_MODES, ("auto",)) if mode == "all" else ((mode,), ())


def planner_chooses(mode: str) -> bool:
    """Whether a run in `mode` lets the planner choose (and so reads the symbol table)."""
    return "auto" in sum(run_modes(mode), ())


def plan_rows(rows: Sequence[Any], options: PlanOptions, capabilities: Mapping[str, Any],
              symbols: Mapping[str, SymbolTable] | None = None, planner: RetrievalPlanner | None = None) -> tuple:
    """Plan every query row once: each row (a frozen dataclass with `query`, `index_path`,
    `budget`, `mode`, `error` and `plans`: `codenib.batch.queries.QueryRow`) gets its plans,
    one per mode it runs or records (`run_modes`), to carry to the executor as data. Rows with an error
    or an index without capabilities stay unplanned. `symbols` maps an index path to its
    symbol table, which grounds the planner's targets.

    Raises:
        BadInputError: an index no query can run on (no sparse and no dense index).
    """
    planner = planner or RetrievalPlanner()
    out = []
    for row in rows:
        caps = capabilities.get(row.index_path)
        if row.error or caps is None:
            out.append(row)
            continue
        check_capabilities(caps)
        row_options = options.for_row(row.budget, row.mode)
        table = (symbols or {}).get(row.index_path)
        plans = tuple(planner.plan_query(row.query, dataclasses.replace(row_options, mode=m), caps, table)
                      for m in sum(run_modes(row_options.mode), ()))
        out.append(dataclasses.replace(row, plans=plans))
    return tuple(out)


def _caps_dict(caps) -> dict[str, bool]:
    out = {k: bool(getattr(caps, k, False)) for k in ("dense", "sparse", "graph", "embedding_rerank", "llm_rerank")}
    if getattr(caps, "history", False):   # named only when present: traces of other indexes stay as they were
        out["history"] = True
    return out
