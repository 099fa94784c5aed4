"""`RetrievalPlanner`: query signals x budget x capabilities -> a declarative `RetrievalPathPlan`.

Deterministic and cheap: no model, no LLM, no I/O. The same inputs always give the same
plan, and the trace says why (including every degradation forced by a missing capability).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from codenib.errors import BadInputError
from codenib.ops.transform import QuerySignals

PLANS = ("fast_lexical", "semantic", "hybrid_fusion", "structural_graph")
MODES = ("auto", "sparse", "dense", "hybrid", "graph")
#: A fixed mode runs one plan and bypasses the planner's choice.
MODE_PLANS = {"sparse": "fast_lexical", "dense": "semantic", "hybrid": "hybrid_fusion",
              "graph": "structural_graph"}
RERANKERS = ("none", "embedding", "llm")

#: Signal thresholds: a query is structural / lexical / semantic from these scores up.
STRUCTURAL_MIN = 0.5
LEXICAL_MIN = 0.6
SEMANTIC_MIN = 0.5


@dataclass(frozen=True, slots=True)
class BudgetPreset:
    """How much work a query may cost."""

    name: str
    k: int                 # candidates retrieved per branch
    rerank_top: int        # candidates a reranker may reorder (0: no rerank)
    graph: bool            # graph expansion allowed
    llm: bool              # LLM rerank allowed
    ppr: bool              # personalized PageRank instead of BFS for graph plans


BUDGETS: dict[str, BudgetPreset] = {
    "fast": BudgetPreset("fast", k=32, rerank_top=0, graph=False, llm=False, ppr=False),
    "balanced": BudgetPreset("balanced", k=100, rerank_top=50, graph=True, llm=False, ppr=False),
    "thorough": BudgetPreset("thorough", k=128, rerank_top=80, graph=True, llm=True, ppr=True),
}


@dataclass(frozen=True, slots=True)
class GraphExpansionPlan:
    """How a structural plan walks the code graph from its seeds."""

    direction: str                         # callers | callees | both
    edge_types: tuple[str, ...] = ("calls",)
    method: str = "bfs"                    # bfs | ppr
    hops: int = 1
    seeds: int = 5                         # BM25 seeds when the target symbol is not found
    per_seed: int = 50
    total: int = 100
    hub_degree: int = 200                  # do not expand through nodes of higher degree


@dataclass(frozen=True, slots=True)
class RetrievalPathPlan:
    """What to run for one query; executed by `codenib.model.pipelines`."""

    plan: str
    k: int
    sparse_weight: float = 0.0
    dense_weight: float = 0.0
    symbol_lookup: bool = False
    graph: GraphExpansionPlan | None = None
    rerank: str = "none"
    rerank_top: int = 0
    prefer_library: bool = False           # demote test code below library code

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PlannerCapabilities:
    """The capability flags the planner reads (a `Capabilities` from the index layer fits)."""

    dense: bool = True
    sparse: bool = True
    graph: bool = True
    embedding_rerank: bool = True
    llm_rerank: bool = False


@dataclass(frozen=True)
class PlannerTrace:
    """Why a plan was chosen: inputs, the first choice, degradations, the final plan."""

    signals: dict[str, Any]
    budget: str
    capabilities: dict[str, bool]
    mode: str
    intended: str
    plan: str
    reasons: tuple[str, ...] = field(default_factory=tuple)
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"signals": self.signals, "budget": self.budget, "capabilities": self.capabilities,
                "mode": self.mode, "intended": self.intended, "plan": self.plan,
                "reasons": list(self.reasons), "detail": self.detail}


class RetrievalPlanner:
    """Maps (signals, budget, capabilities, mode) to a plan. Deterministic; never calls an LLM."""

    def __init__(self, hybrid_weights: tuple[float, float] = (1.0, 1.0)):
        self.hybrid_weights = hybrid_weights   # (sparse, dense) RRF weights

    def plan(self, signals: QuerySignals, budget: str = "balanced", capabilities: Any = None,
             mode: str = "auto", rerank: str | None = None) -> tuple[RetrievalPathPlan, PlannerTrace]:
        """Choose and parametrize a plan.

        Args:
            rerank: none | embedding | llm to force a reranker (None: the budget decides).

        Raises:
            BadInputError: unknown budget, mode or reranker, or an index with no sparse,
                dense or graph capability at all.
        """
        preset = _preset(budget)
        if mode not in MODES:
            raise BadInputError(f"unknown mode {mode!r}", fix=f"use one of: {', '.join(MODES)}")
        if rerank is not None and rerank not in RERANKERS:
            raise BadInputError(f"unknown reranker {rerank!r}", fix=f"use one of: {', '.join(RERANKERS)}")
        caps = capabilities or PlannerCapabilities()
        if not (caps.sparse or caps.dense):
            raise BadInputError("the index has neither a sparse nor a dense index",
                                fix="rebuild it with `codenib index`")
        reasons: list[str] = []
        intended = MODE_PLANS[mode] if mode != "auto" else self._choose(signals, reasons)
        plan_name = self._degrade(intended, signals, preset, caps, reasons)
        plan = self._parametrize(plan_name, signals, preset, caps, rerank, reasons)
        trace = PlannerTrace(signals.to_dict(), preset.name, _caps_dict(caps), mode, intended,
                             plan.plan, tuple(reasons))
        return plan, trace

    # -- choice ------------------------------------------------------------------------------

    def _choose(self, s: QuerySignals, reasons: list[str]) -> str:
        if s.structural >= STRUCTURAL_MIN and s.target:
            reasons.append(f"structural signal {s.structural} with target {s.target!r} ({s.direction})")
            return "structural_graph"
        if s.lexical >= LEXICAL_MIN and s.target:
            reasons.append(f"lexical signal {s.lexical}: exact-name look-up of {s.target!r}")
            return "fast_lexical"
        if s.long_text:
            reasons.append("long report: identifiers, paths and prose fused from both branches")
            return "hybrid_fusion"
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

    def _degrade(self, plan: str, s: QuerySignals, preset: BudgetPreset, caps, reasons: list[str]) -> str:
        if plan == "structural_graph" and not (caps.graph and preset.graph):
            why = "the index has no graph" if not caps.graph else f"budget {preset.name} allows no graph"
            reasons.append(f"structural_graph -> fast_lexical: {why}")
            plan = "fast_lexical"
        if plan == "structural_graph" and not caps.sparse:
            reasons.append("structural_graph -> semantic: no sparse index for seeds")
            plan = "semantic"
        if plan == "hybrid_fusion" and not (caps.dense and caps.sparse):
            fallback = "semantic" if caps.dense else "fast_lexical"
            reasons.append(f"hybrid_fusion -> {fallback}: the index has no "
                           f"{'sparse' if caps.dense else 'dense'} branch")
            plan = fallback
        if plan == "semantic" and not caps.dense:
            reasons.append("semantic -> fast_lexical: the index has no dense vectors")
            plan = "fast_lexical"
        if plan == "fast_lexical" and not caps.sparse:
            reasons.append("fast_lexical -> semantic: the index has no sparse index")
            plan = "semantic"
        return plan

    def _parametrize(self, plan: str, s: QuerySignals, preset: BudgetPreset, caps, rerank: str | None,
                     reasons: list[str]) -> RetrievalPathPlan:
        k = preset.k
        graph = None
        sparse_w = dense_w = 0.0
        symbol = False
        if plan == "fast_lexical":
            sparse_w, symbol = 1.0, True
        elif plan == "semantic":
            dense_w = 1.0
        elif plan == "hybrid_fusion":
            sparse_w, dense_w = self.hybrid_weights
            symbol = bool(s.keywords.symbols())
        elif plan == "structural_graph":
            sparse_w, symbol = 1.0, True
            graph = GraphExpansionPlan(direction=s.direction or "both",
                                       method="ppr" if preset.ppr else "bfs",
                                       hops=2 if preset.ppr else 1)
        chosen = self._reranker(plan, preset, caps, rerank, reasons)
        top = preset.rerank_top if chosen != "none" else 0
        if chosen != "none" and top == 0:
            top = min(50, k)
        # Behaviour questions are about the implementation: tests go below library code,
        # unless the query asks about tests.
        prefer_library = plan in ("semantic", "hybrid_fusion") and not s.about_tests
        return RetrievalPathPlan(plan, k, sparse_w, dense_w, symbol, graph, chosen, top, prefer_library)

    def _reranker(self, plan: str, preset: BudgetPreset, caps, rerank: str | None, reasons: list[str]) -> str:
        if rerank is None:
            # Exact-name and call-graph answers are already precise; a similarity reranker
            # would only reorder them by wording. The budget's default reranker is the LLM
            # where allowed and configured, otherwise none.
            if plan in ("fast_lexical", "structural_graph") or preset.rerank_top == 0:
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
