"""The planner's data: budgets, capabilities, plans and traces (frozen, so Ray ships them).

A leaf module: the plan classes (`codenib.model.plans`) build these, the planner
(`codenib.model.planner`) chooses among the plan classes, and both import from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

from codenib.model.reports.report import BugReport
from codenib.model.signals import QuerySignals


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

    direction: str                         # callers (in-edges) | callees (out-edges) | both
    edge_types: tuple[str, ...] = ("calls",)
    relation: str = "calls"                # what the question asks about (`intent.RELATIONS`)
    method: str = "bfs"                    # bfs | ppr
    hops: int = 1
    seeds: int = 5                         # BM25 seeds when the target symbol is not found
    per_seed: int = 50
    total: int = 100
    hub_degree: int = 200                  # do not expand through nodes of higher degree


@dataclass(frozen=True, slots=True)
class Search:
    """One engine search a plan makes: a named text and its depth. 0 is the executor's fetch
    depth, max(plan k, results kept); a named BM25 run is cut to its own depth, a dense run
    reaches at least the fetch depth."""

    name: str
    text: str
    depth: int = 0


@dataclass(frozen=True, slots=True)
class RetrievalPathPlan:
    """What to run for one query; executed by `codenib.model.executor`, which decides
    nothing: the searches, the fusion runs and weights and the parsed report are here.

    `to_dict` (the trace's `detail.plan`) writes the declarative fields only: the execution
    fields (`EXECUTION`) restate the query text (search texts, the parsed report)."""

    plan: str
    k: int
    sparse_weight: float = 0.0
    dense_weight: float = 0.0
    symbol_lookup: bool = False
    graph: GraphExpansionPlan | None = None
    rerank: str = "none"
    rerank_top: int = 0
    prefer_library: bool = False           # demote test code below library code
    sparse_searches: tuple[Search, ...] = ()   # BM25 searches; the first is the sparse branch
    dense_search: Search | None = None         # the dense branch's search
    file_searches: tuple[Search, ...] = ()     # BM25 over whole files, every file ranked (bug_localisation)
    fusion: tuple[tuple[str, float], ...] = ()  # (run, weight) fused by RRF, in order (hybrid)
    mention_search: bool = False               # BM25 of the targets' names (name-matched callers)
    report: BugReport | None = None            # the parsed bug report (bug_localisation)
    history: tuple[tuple[str, float], ...] = ()  # (history signal, weight) added to the ranking
    history_text: str = ""                     # the text the query-dependent history signals search
    cochange: float = 0.0                      # weight of the co_changed walk from the best results (0: none)

    #: Fields the executor reads that the trace does not record.
    EXECUTION = ("sparse_searches", "dense_search", "file_searches", "fusion", "mention_search", "report", "history_text")

    def to_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in self.EXECUTION}
        if not self.history:   # an index without history writes the trace it always wrote
            del values["history"]
        if not self.cochange:
            del values["cochange"]
        return {k: asdict(v) if is_dataclass(v) else v for k, v in values.items()}


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """A run's planning options, checked once at the edge (`planner.plan_options`): the
    budget as its preset, the mode (auto, a fixed mode, or all) and the forced reranker."""

    budget: BudgetPreset
    mode: str = "auto"
    rerank: str | None = None

    def for_row(self, budget: str | None, mode: str | None) -> PlanOptions:
        """These options with a query row's own budget and mode (checked when the row was read)."""
        return PlanOptions(BUDGETS[budget] if budget else self.budget, mode or self.mode, self.rerank)


@dataclass(frozen=True)
class PlannerCapabilities:
    """The capability flags the planner reads (a `Capabilities` from the index layer fits)."""

    dense: bool = True
    sparse: bool = True
    graph: bool = True
    embedding_rerank: bool = True
    llm_rerank: bool = False
    history: bool = False
    fitted_history: bool = False


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
        # Fresh dicts: executing a plan adds to the trace's `detail`, and the same planned
        # query may be executed (and its trace written) more than once.
        return {"signals": dict(self.signals), "budget": self.budget, "capabilities": dict(self.capabilities),
                "mode": self.mode, "intended": self.intended, "plan": self.plan,
                "reasons": list(self.reasons), "detail": dict(self.detail)}


@dataclass(frozen=True)
class QueryPlan:
    """One query planned: what the driver (or `codenib query`) ships with the query and a
    pipeline executes. `error` is set, and `plan` is None, when the query cannot run."""

    mode: str
    signals: QuerySignals | None = None
    plan: RetrievalPathPlan | None = None
    trace: PlannerTrace | None = None
    error: str | None = None
