"""One class per retrieval plan (PyTerrier style: one transformer per operator).

Each plan says how the planner parametrizes it (`parametrize`: everything the executor
runs, search texts and depths and fusion weights included), what it falls back to when
the index or budget cannot run it (`degrade`), which engines and look-ups it needs
(`needs`), and how a query's branch results become its ranking (`assemble`). The
registry, keyed by plan name, replaces string switches in the planner and the executor.

Adding a plan: write a `RetrievalPlan` subclass here, decorate it with `@register`, and
give `RetrievalPlanner._choose` a line that picks it.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from codenib.core.errors import BadInputError
from codenib.model import localise, localise_inputs
from codenib.model.history import cochange, evidence as history_evidence, fit as history_fit
from codenib.model.parts import PlanInput, PlanParts, fuse
from codenib.model.planspec import BudgetPreset, GraphExpansionPlan, RetrievalPathPlan, Search
from codenib.model.reports.report import read_report
from codenib.model.signals import QuerySignals
from codenib.model.traversal import WalkSpec, ranked_walk
from codenib.ops.retrieve import Candidates, dedup

#: What a plan may need: the BM25 branch, the dense branch, graph walks, exact symbol look-up.
NEEDS = ("sparse", "dense", "graph", "symbols")

#: Weight of the exact-symbol run when a hybrid query names identifiers.
SYMBOL_RUN_WEIGHT = 0.5
#: Long reports: (sparse, dense) fusion weights. BM25 sees only the report's title and code
#: keywords (prose and boilerplate would swamp it), so dense leads.
LONG_QUERY_WEIGHTS = (0.5, 1.0)
#: Weight of the "dense ranking within the files the report names" run.
FILE_PRIOR_WEIGHT = 1.0
#: A question's direction as the walk reads it: incoming edges are "callers", outgoing
#: edges "callees", whatever the relation.
WALK_DIRECTIONS = {"incoming": "callers", "outgoing": "callees", None: "both"}
#: Relations whose answers call the target by name, so name-matched BM25 hits can stand in
#: for calls the precise graph missed (untyped receivers).
NAME_MATCH_RELATIONS = frozenset({"calls", "uses", "depends", "references", "raises", "instantiates"})
#: A long report's dense query keeps its opening words plus its code keywords: the encoder
#: truncates at ~256 word pieces, and the opening (title, first sentences) carries the intent.
DENSE_HEAD_WORDS = 96
#: Dense candidates fetched for a long report, so the file prior has nodes to filter.
LONG_QUERY_DENSE_K = 400
#: Results of a bug report whose feature contributions the trace shows.
TRACE_TOP = 10


class RetrievalPlan(ABC):
    """A plan kind. Subclasses set `name` (and `mode` when a fixed mode runs them) and implement
    `parametrize`, `needs` and `assemble`; `degrade` and `searches` have defaults."""

    name: ClassVar[str]
    #: The fixed `--mode` that runs this plan (None: only the planner's choice reaches it).
    mode: ClassVar[str | None] = None
    #: Whether the budget's default reranker applies when none is asked for. Exact-name and
    #: call-graph answers are already precise; a similarity reranker would only reorder them
    #: by wording.
    budget_rerank: ClassVar[bool] = True

    @abstractmethod
    def parametrize(self, s: QuerySignals, preset: BudgetPreset,
                    hybrid_weights: tuple[float, float]) -> RetrievalPathPlan:
        """The plan's parameters for this query and budget (the reranker is set afterwards)."""

    def degrade(self, preset: BudgetPreset, caps: Any) -> tuple[str, str] | None:
        """(fallback plan, reason) when the capabilities or budget cannot run this plan."""
        return None

    def with_capabilities(self, plan: RetrievalPathPlan, caps: Any, reasons: list[str]) -> RetrievalPathPlan:
        """`plan` with the optional evidence the index offers (capabilities such as `history`)
        added; the reason is appended to `reasons`. By default: unchanged."""
        return plan

    @abstractmethod
    def needs(self, plan: RetrievalPathPlan) -> frozenset[str]:
        """Which of NEEDS executing `plan` requires."""

    @abstractmethod
    def assemble(self, q: PlanInput, parts: PlanParts) -> Candidates:
        """The query's ranking from its branch results."""

    def searches(self, query: str, s: QuerySignals, plan: RetrievalPathPlan) -> RetrievalPathPlan:
        """`plan` with the searches it makes for `query` (its cleaned text): by default the
        branches it needs, a long report's BM25 text cut to its title and code keywords and
        its dense text to its opening. Their raw results reach `assemble` as `q.runs`, and
        the first BM25 run also as `q.sparse`."""
        needs = self.needs(plan)
        sparse = (Search("sparse", _sparse_text(query, s)),) if "sparse" in needs else ()
        # A long report's file prior filters the dense ranking, so it reaches deeper.
        dense = (Search("dense", _dense_text(query, s), LONG_QUERY_DENSE_K if s.long_text else 0)
                 if "dense" in needs else None)
        mention = (plan.graph is not None and plan.graph.direction in ("callers", "both")
                   and plan.graph.relation in NAME_MATCH_RELATIONS)
        return dataclasses.replace(plan, sparse_searches=sparse, dense_search=dense, mention_search=mention)


PLAN_REGISTRY: dict[str, RetrievalPlan] = {}


def register(cls: type[RetrievalPlan]) -> type[RetrievalPlan]:
    """Class decorator: add a plan to the registry under its name (registration order is
    the order of PLANS and MODES)."""
    if cls.name in PLAN_REGISTRY:
        raise ValueError(f"plan {cls.name!r} is registered twice")
    PLAN_REGISTRY[cls.name] = cls()
    return cls


def plan_class(name: str) -> RetrievalPlan:
    """The registered plan called `name`. Raises BadInputError listing the valid names."""
    try:
        return PLAN_REGISTRY[name]
    except KeyError:
        raise BadInputError(f"unknown plan {name!r}", fix=f"use one of: {', '.join(PLAN_REGISTRY)}") from None


@register
class FastLexical(RetrievalPlan):
    """Exact names, low latency: symbol matches first, then BM25; no rerank."""

    name = "fast_lexical"
    mode = "sparse"
    budget_rerank = False

    def parametrize(self, s, preset, hybrid_weights):
        return RetrievalPathPlan(self.name, preset.k, sparse_weight=1.0, symbol_lookup=True)

    def degrade(self, preset, caps):
        return ("semantic", "fast_lexical -> semantic: the index has no sparse index") if not caps.sparse else None

    def needs(self, plan):
        return frozenset({"sparse", "symbols"})

    def assemble(self, q, parts):
        symbols = parts.symbol_hits(q.signals, q.detail)
        # Exact-name hits rank above every BM25 hit; BM25 keeps its own scores below.
        top = max((c.score for c in q.sparse), default=0.0)
        lifted = [c.with_score(top + len(symbols) - j) for j, c in enumerate(symbols)]
        return dedup(lifted + list(q.sparse))


@register
class Semantic(RetrievalPlan):
    """Natural-language behaviour queries: the dense branch."""

    name = "semantic"
    mode = "dense"

    def parametrize(self, s, preset, hybrid_weights):
        return RetrievalPathPlan(self.name, preset.k, dense_weight=1.0, prefer_library=_library_first(s))

    def degrade(self, preset, caps):
        return ("fast_lexical", "semantic -> fast_lexical: the index has no dense vectors") if not caps.dense else None

    def needs(self, plan):
        return frozenset({"dense"})

    def assemble(self, q, parts):
        # A dense run that reaches deeper (a long report's: LONG_QUERY_DENSE_K) stays whole.
        deep = q.plan.dense_search is not None and q.plan.dense_search.depth > 0
        return q.dense if deep else q.dense[: q.plan.k]


@register
class HybridFusion(RetrievalPlan):
    """Mixed or uncertain queries: weighted RRF of BM25, dense and exact-symbol runs."""

    name = "hybrid_fusion"
    mode = "hybrid"

    def parametrize(self, s, preset, hybrid_weights):
        sparse_w, dense_w = hybrid_weights
        symbols = bool(s.keywords.symbols())
        # Long reports fuse with their own weights and a file-prior run (see `assemble`).
        fusion = ((("sparse", LONG_QUERY_WEIGHTS[0]), ("dense", LONG_QUERY_WEIGHTS[1]), ("file_prior", FILE_PRIOR_WEIGHT))
                  if s.long_text else (("sparse", sparse_w), ("dense", dense_w)))
        fusion += (("symbols", SYMBOL_RUN_WEIGHT),) if symbols else ()
        return RetrievalPathPlan(self.name, preset.k, sparse_w, dense_w, symbol_lookup=symbols,
                                 prefer_library=_library_first(s), fusion=fusion)

    def degrade(self, preset, caps):
        if caps.dense and caps.sparse:
            return None
        fallback = "semantic" if caps.dense else "fast_lexical"
        return fallback, f"hybrid_fusion -> {fallback}: the index has no {'sparse' if caps.dense else 'dense'} branch"

    def needs(self, plan):
        wanted = {"sparse": plan.sparse_weight > 0, "dense": plan.dense_weight > 0, "symbols": plan.symbol_lookup}
        return frozenset(n for n, on in wanted.items() if on)

    def assemble(self, q, parts):
        runs, weights = [], []
        for name, weight in q.plan.fusion:
            run = _FUSION_RUNS[name](q, parts)
            if run is not None:   # an empty look-up adds no run
                runs.append(run)
                weights.append(weight)
        q.detail["fusion_weights"] = weights
        return fuse(runs, weights)


def _file_prior_run(q: PlanInput, parts: PlanParts) -> Candidates | None:
    # Bug reports name the files that fail (tracebacks, paths): the dense ranking within
    # those files is a run of its own.
    files = parts.mentioned_files(q.signals)
    q.detail["mentioned_files"] = sorted(files)[:20]
    return tuple(c for c in q.dense if c.file in files) if files else None


def _symbol_run(q: PlanInput, parts: PlanParts) -> Candidates | None:
    return parts.symbol_hits(q.signals, q.detail, all_keywords=True) or None


#: The runs a hybrid plan's `fusion` names, each from a query's branch results.
_FUSION_RUNS = {
    "sparse": lambda q, parts: q.sparse,
    "dense": lambda q, parts: q.dense,
    "file_prior": _file_prior_run,
    "symbols": _symbol_run,
}


@register
class StructuralGraph(RetrievalPlan):
    """Graph questions (callers, callees, subclasses, importers, references, overrides,
    impact): the target symbols (or BM25 seeds), a walk over the edges the question names,
    and name-matched neighbours; ranked by position."""

    name = "structural_graph"
    mode = "graph"
    budget_rerank = False

    def parametrize(self, s, preset, hybrid_weights):
        graph = GraphExpansionPlan(direction=WALK_DIRECTIONS[s.direction], edge_types=s.edge_types,
                                   relation=s.relation or "calls", method="ppr" if preset.ppr else "bfs",
                                   hops=2 if preset.ppr else 1)
        return RetrievalPathPlan(self.name, preset.k, sparse_weight=1.0, symbol_lookup=True, graph=graph)

    def degrade(self, preset, caps):
        if not (caps.graph and preset.graph):
            why = "the index has no graph" if not caps.graph else f"budget {preset.name} allows no graph"
            return "fast_lexical", f"structural_graph -> fast_lexical: {why}"
        if not caps.sparse:
            return "semantic", "structural_graph -> semantic: no sparse index for seeds"
        return None

    def needs(self, plan):
        return frozenset({"sparse", "graph", "symbols"})

    def assemble(self, q, parts):
        g, detail, sparse = q.plan.graph, q.detail, q.sparse
        index = parts.index
        targets = list(q.targets)
        detail["targets"] = [index.nodes.node_id[r] for r in targets[:10]]
        if not targets:
            targets = [index.row_of[c.node_id] for c in sparse[: g.seeds]]
            detail["seeded_by"] = "sparse"
        if g.relation == "overrides":
            walked = [(v, 1.0) for v in parts.overrides(targets, g.direction)]
        else:
            walked = ranked_walk(index.graph, targets, [1.0] * len(targets), WalkSpec(g.direction, g.edge_types,
                                 g.hub_degree), g.method, g.hops, g.per_seed, g.total)
        detail["graph_nodes"] = len(walked)
        detail["edge_types"] = list(g.edge_types)
        found = [parts.ctx.node(v, 1.0, "graph") for v, _ in walked]
        mentions = parts.mentions(targets, g.direction, q.mention_rows) if g.relation in NAME_MATCH_RELATIONS else []
        detail["name_matches"] = len(mentions)
        tail = [parts.ctx.node(t, 0.5, "symbol") for t in targets]
        ranked = dedup(found + mentions + tail + list(sparse))
        return tuple(c.with_score(1.0 / (i + 1)) for i, c in enumerate(ranked))


@register
class BugLocalisation(RetrievalPlan):
    """Long bug reports: files first, then nodes within them, from BM25 of the whole text,
    its title and its prose, the code the report mentions (tracebacks, paths, symbols) and
    the graph around those mentions; one fitted linear score (`codenib.model.localise`), test
    code demoted unless the report is about tests.

    The dense run is not fetched and its features weigh 0: leave-one-repository-out over the
    11 dev repositories the packaged MiniLM's node scores lift function Acc@10 (0.531 -> 0.548)
    but drop the worst repository below BM25 at file Acc@5 (docs/bug-reports.md, "Dense
    features"); on the SWE-bench dev set alone they lowered every number. The scorer still
    takes a dense run for encoders that earn it."""

    name = "bug_localisation"

    def parametrize(self, s, preset, hybrid_weights):
        # The signals' weights are the localisation weights (data), not RRF weights.
        return RetrievalPathPlan(self.name, preset.k, sparse_weight=1.0)

    def degrade(self, preset, caps):
        if not caps.sparse:
            return "semantic", "bug_localisation -> semantic: the index has no sparse index"
        return None

    def needs(self, plan):
        return frozenset({"sparse"})

    def with_capabilities(self, plan, caps, reasons):
        # An index built with --history: similar past changes and change-proneness are
        # evidence, each added to the localisation score with its weight (`history.evidence`).
        # An index with weights fitted on its own history weighs the fitted signal itself
        # (`LocaliseWeights.history_weights`), even where the packaged weight is 0.
        fitted = getattr(caps, "fitted_history", False)
        weights = tuple((n, w) for n, w in history_evidence.WEIGHTS
                        if w or (fitted and n == history_fit.HISTORY_SIGNAL))
        if not getattr(caps, "history", False):
            return plan
        if weights:
            reasons.append("history: " + ", ".join(f"{n} (weight {w:g})" for n, w in weights)
                           + " added to the localisation scores"
                           + (" (the index's fitted weights replace these)" if fitted else ""))
            plan = dataclasses.replace(plan, history=weights)
        if cochange.COCHANGE_WEIGHT:
            # The co_changed edges are walked from the best results (`codenib.model.history.cochange`).
            reasons.append(f"history: co_changed walk (weight {cochange.COCHANGE_WEIGHT:g})")
            plan = dataclasses.replace(plan, cochange=cochange.COCHANGE_WEIGHT)
        return plan

    def searches(self, query, s, plan):
        # The report is read once, here; its texts are searched and `assemble` scores it.
        report = read_report(query)
        texts = localise_inputs.sparse_texts(query, report)
        return dataclasses.replace(
            plan, report=report, sparse_searches=tuple(Search(name, text, localise_inputs.SPARSE_DEPTH[name])
                                                       for name, text in texts.items()),
            file_searches=tuple(Search(name, texts[run]) for run, name in localise_inputs.FILE_RUNS.items()),
            history_text=texts["bm25"] if plan.history else "")

    def assemble(self, q, parts):
        index, detail = parts.index, q.detail
        report = q.plan.report
        runs = dict(q.runs or {})
        inputs = localise_inputs.inputs_for(report, runs, index)
        table = localise.features(inputs, index.nodes, index.graph, parts.file_rows())
        weights = parts.localise_weights
        limit = max(q.plan.k, 100)
        # The co_changed walk re-ranks every candidate: rank them all first, and explain the
        # final top after the walk (with history signals, whose shares only `rank_with_history`
        # knows, every candidate is explained first).
        explain = TRACE_TOP
        depth = len(index.nodes.node_id) if q.plan.cochange else limit
        if q.plan.cochange:
            explain = depth if q.history is not None else 0
        if q.history is not None:
            # Weights fitted on the index's own history carry their own history weights.
            history_weights = weights.history_weights(q.plan.history)
            scored = history_evidence.rank_with_history(
                table, weights, q.history, history_weights, index.nodes, index.row_of, parts.file_rows(),
                limit=depth, explain=explain)
            detail["history"] = {name: {"weight": w, "files": len(q.history[name].files),
                                        "nodes": len(q.history[name].nodes)} for name, w in history_weights}
            detail["weights"] = weights.source
        else:
            scored = localise.rank(table, weights, index.nodes.node_id, limit=depth, explain=explain)
        if q.plan.cochange:
            scored, detail["co_change"] = cochange.expand(scored, parts.history(), q.plan.cochange, index.nodes, limit)
            if not explain:
                why = localise.explain(table, weights, [x.row for x in scored[:TRACE_TOP]])
                scored = [dataclasses.replace(x, contributions={**why.get(x.row, {}), **x.contributions})
                          if j < TRACE_TOP else x for j, x in enumerate(scored)]
        detail["runs"] = sorted(k for k, v in runs.items() if v is not None and len(v[0]))
        detail["mentions"] = report.kinds()
        detail["priors"] = [{"file": p.file, "node_id": index.nodes.node_id[p.row] if p.row is not None else None,
                             "kind": p.mention.kind, "text": p.mention.text[:80],
                             "confidence": round(p.confidence, 3)} for p in inputs.priors[:10]]
        detail["literals"] = [{"text": lit.text[:80], "weight": round(lit.weight, 3),
                               "files": sorted({index.nodes.file[r] for r in lit.rows})[:5]}
                              for lit in inputs.literals[:10]]
        detail["about_tests"] = inputs.about_tests
        if inputs.borrowed:     # generated and vendored candidates, ranked as non-library code
            marked = sorted({index.nodes.file[r] for r in table.rows.tolist()} & inputs.borrowed)
            detail["borrowed"] = {f: index.borrowed_files[f] for f in marked[:TRACE_TOP]}
        detail["contributions"] = localise.trace_of(scored, index.nodes, TRACE_TOP)
        if report.truncated:
            detail["truncated_at_chars"] = report.chars
        return tuple(parts.ctx.node(x.row, x.score, "localise") for x in scored)


#: Plan names, in registration order.
PLANS = tuple(PLAN_REGISTRY)
#: The fixed modes and the plan each runs; the one place this table is written.
MODE_PLANS = {p.mode: name for name, p in PLAN_REGISTRY.items() if p.mode}


def _sparse_text(query: str, s: QuerySignals) -> str:
    """A long report's BM25 query: its title line and its code keywords, not the prose."""
    if not s.long_text:
        return query
    title = next((line for line in query.splitlines() if line.strip()), "")
    title = " ".join(title.split()[:DENSE_HEAD_WORDS // 3])
    stems = [p.rsplit("/", 1)[-1].removesuffix(".py") for p in s.keywords.paths]
    return " ".join([title, *s.keywords.symbols(), *stems])


def _dense_text(query: str, s: QuerySignals) -> str:
    if not s.long_text:
        return query
    head = " ".join(query.split()[:DENSE_HEAD_WORDS])
    keys = " ".join(list(s.keywords.symbols())[:24] + list(s.keywords.paths)[:8])
    return f"{head}\n{keys}" if keys else head


def _library_first(s: QuerySignals) -> bool:
    # Behaviour questions are about the implementation: tests go below library code,
    # unless the query asks about tests.
    return not s.about_tests
