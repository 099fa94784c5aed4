"""Named retrieval pipelines: they execute plans with one batched call per engine.

`RetrieveRerankPipeline` executes planned queries (`execute`), planning them itself in
`run`; each plan's assembly is its class in `codenib.model.plans`.
`SparseSeededGraphRetrievePipeline` and `DenseGraphExpandRerankPipeline`, the two graph
pipelines of the design, are compositions of the same parts (engines, graph walk, fusion).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

from codenib.errors import BadInputError, CodeNibError
from codenib.index.loaded import LoadedIndex
from codenib.model.parts import PlanInput, PlanParts, fuse
from codenib.model.planner import BUDGETS, QueryPlan, RetrievalPlanner
from codenib.model.plans import NAME_MATCH_RELATIONS, plan_class
from codenib.model.signals import QuerySignals
from codenib.model.traversal import WalkSpec, ranked_walk
from codenib.ops.expand import ExpandParams, expand_graph_neighbors
from codenib.ops.filter import demote_tests
from codenib.ops.rerank import EmbeddingRerankParams, RerankContext, embedding_rerank_batch
from codenib.ops.retrieve import Candidates, QueriedNode, RetrieveContext, to_queried_nodes
from codenib.querytext import clean_query_text

#: A long report's dense query keeps its opening words plus its code keywords: the encoder
#: truncates at ~256 word pieces, and the opening (title, first sentences) carries the intent.
DENSE_HEAD_WORDS = 96
#: Dense candidates fetched for a long report, so the file prior has nodes to filter.
LONG_QUERY_DENSE_K = 400
#: BM25 hits scanned for name-matched callers of a structural query's target.
MENTION_CANDIDATES = 200


class Engines(Protocol):
    """The engine calls a pipeline makes, one batched call per engine.

    `LocalEngines` runs them in this process; the Ray job routes them to actors that hold
    the loaded sparse, dense and rerank resources.
    """

    def sparse_search(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]: ...

    def dense_search(self, texts: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]: ...

    def branch_search(self, sparse_queries: Sequence[str], sparse_k: int, dense_texts: Sequence[str],
                      dense_k: int) -> tuple[tuple | None, tuple | None]:
        """Both branches' batched calls; an implementation may run them concurrently."""
        ...

    def rerank_embedding(self, cand_lists: Sequence[Candidates], queries: Sequence[str],
                         top_n: int) -> list[Candidates]: ...

    def rerank_llm(self, queries: Sequence[str], cand_lists: Sequence[Candidates],
                   text_lists: Sequence[Sequence[str]]) -> list[tuple[Candidates, list[str]]]: ...


class LocalEngines:
    """Engines over a fully loaded index in this process."""

    def __init__(self, index: LoadedIndex, llm=None):
        self.index = index
        self.llm = llm

    def sparse_search(self, queries, k):
        if self.index.sparse is None:
            raise BadInputError("the sparse index was not loaded", path=str(self.index.path))
        return self.index.sparse.search(list(queries), k)

    def dense_search(self, texts, k):
        if self.index.dense is None:
            raise BadInputError("the index has no dense vectors loaded", path=str(self.index.path),
                                fix="rebuild without --no-dense")
        return self.index.dense.search(self.index.encode_queries(list(texts)), k)

    def branch_search(self, sparse_queries, sparse_k, dense_texts, dense_k):
        return (self.sparse_search(sparse_queries, sparse_k) if sparse_queries else None,
                self.dense_search(dense_texts, dense_k) if dense_texts else None)

    def rerank_embedding(self, cand_lists, queries, top_n):
        return embedding_rerank_batch(cand_lists, list(queries), EmbeddingRerankParams(top_n=top_n),
                                      rerank_context(self.index))

    def rerank_llm(self, queries, cand_lists, text_lists):
        if self.llm is None:
            raise BadInputError("no LLM reranker is configured", fix="pass --llm-config")
        return self.llm.rerank_many(list(queries), list(cand_lists), list(text_lists))


@dataclass(frozen=True)
class QueryResult:
    """One query's ranked candidates, the plan that produced them, and its trace."""

    query: str
    candidates: Candidates
    plan: str
    trace: dict[str, Any]
    latency_ms: float
    error: str | None = None
    signals: dict[str, Any] = field(default_factory=dict)


class RetrieveRerankPipeline:
    """Planner-driven retrieval over one loaded index.

    Args:
        retrieval_mode: auto (the planner decides per query) or sparse | dense | hybrid |
            graph (a fixed plan, bypassing the planner's choice).
        budget: fast | balanced | thorough.
        rerank: None (the budget decides), none, embedding or llm.
        llm: an `LLMReranker` (ops.llm) when LLM reranking is configured.
        localise_weights: `LocaliseWeights` for bug reports (None: the packaged fitted ones).
    """

    def __init__(self, index: LoadedIndex, retrieval_mode: str = "auto", budget: str = "balanced",
                 rerank: str | None = None, llm=None, planner: RetrievalPlanner | None = None,
                 engines: Engines | None = None, llm_configured: bool | None = None, localise_weights=None):
        self.index = index
        self.mode = retrieval_mode
        self.budget = budget
        self.rerank = rerank
        self.planner = planner or RetrievalPlanner()
        self.engines = engines or LocalEngines(index, llm)
        self.ctx = RetrieveContext(index)
        llm_on = llm is not None if llm_configured is None else llm_configured
        self.capabilities = index.capabilities(llm_configured=llm_on)
        self.last_selected_plan: str | None = None
        self.last_planner_trace: dict[str, Any] | None = None
        self.parts = PlanParts(index, self.ctx, localise_weights)
        # Validate mode/budget/rerank once, up front.
        self.planner.check(budget, retrieval_mode, rerank, self.capabilities)

    def plan(self, queries: Sequence[str]) -> list[QueryPlan]:
        """Plan every query (its cleaned text, `codenib.querytext`) with this pipeline's mode,
        budget, reranker and capabilities, grounded in the index's symbol table."""
        texts = [clean_query_text(q).text for q in queries]
        return self.planner.plan_queries(texts, self.budget, self.capabilities, self.mode, self.rerank,
                                         self.index.symbols)

    def run(self, queries: Sequence[str], k: int | None = None) -> list[QueryResult]:
        """Plan and retrieve for a batch of queries; a failing query becomes an error result."""
        return self.execute(queries, self.plan(queries), k)

    def execute(self, queries: Sequence[str], plans: Sequence[QueryPlan], k: int | None = None) -> list[QueryResult]:
        """Retrieve for a batch of planned queries (`plans[i]` is query i's plan, made by the
        driver or by `plan`); a failing query becomes an error result.

        Each query's text is cleaned first (`codenib.querytext`: no text can crash an engine);
        a query that needed it records what changed in its trace under ``query_text``.
        """
        cleaned = [clean_query_text(q) for q in queries]
        queries = [c.text for c in cleaned]
        n = len(queries)
        k_out = k or BUDGETS[self.budget].k
        signals: list[QuerySignals | None] = [p.signals for p in plans]
        errors: list[str | None] = [p.error for p in plans]
        live = [i for i in range(n) if errors[i] is None and plans[i].plan is not None]
        planned = {i: plans[i].plan for i in live}
        traces: list[dict[str, Any]] = [plans[i].trace.to_dict() if i in planned else {} for i in range(n)]
        for i, c in enumerate(cleaned):
            if c.changed:
                traces[i]["query_text"] = c.changes()
        k_fetch = {i: max(planned[i].k, k_out) for i in live}
        engine_ms: dict[int, float] = {i: 0.0 for i in live}
        needs = {i: plan_class(planned[i].plan).needs(planned[i]) for i in live}

        targets = {i: self.parts.targets(signals[i]) for i in live if "graph" in needs[i]}
        sparse_hits, dense_hits, mention_rows, runs = self._branches(queries, live, planned, needs, signals,
                                                                     k_fetch, targets, engine_ms)
        results: list[list[QueriedNode] | None] = [None] * n
        for i in live:
            t0 = time.perf_counter()
            try:
                q = PlanInput(queries[i], signals[i], planned[i], sparse_hits.get(i, ()), dense_hits.get(i, ()),
                              tuple(targets.get(i, ())), mention_rows.get(i), traces[i].setdefault("detail", {}),
                              runs.get(i))
                cands = plan_class(planned[i].plan).assemble(q, self.parts)
                if planned[i].prefer_library:
                    cands = demote_tests(cands)
                results[i] = list(cands)
            except CodeNibError as exc:
                errors[i] = str(exc)
            engine_ms[i] += (time.perf_counter() - t0) * 1000
        self._rerank(queries, live, planned, results, traces, engine_ms)

        out: list[QueryResult] = []
        for i, q in enumerate(queries):
            cands = tuple(results[i][:k_out]) if results[i] is not None and errors[i] is None else ()
            plan_name = planned[i].plan if i in planned else "none"
            if i in planned:
                traces[i].setdefault("detail", {})["plan"] = planned[i].to_dict()
            out.append(QueryResult(q, cands, plan_name, traces[i], round(engine_ms.get(i, 0.0), 3),
                                   errors[i], signals[i].to_dict() if signals[i] else {}))
        if out:
            self.last_selected_plan = out[-1].plan
            self.last_planner_trace = out[-1].trace
        return out

    def search(self, query: str, k: int | None = None) -> QueryResult:
        """One query (a batch of one)."""
        return self.run([query], k)[0]

    # -- engines (one batched call each) ---------------------------------------------------

    def _branches(self, queries, live, plans, needs, signals, k_fetch, targets, engine_ms):
        """One batched engine round for the whole batch: BM25 for plans that need it (plus
        the name searches of call-graph queries), dense for plans that need it."""
        sparse_want = [i for i in live if "sparse" in needs[i]]
        dense_want = [i for i in live if "dense" in needs[i]] if self.capabilities.dense else []
        mention_want = [i for i in sorted(targets) if targets[i] and plans[i].graph.direction in ("callers", "both")
                        and plans[i].graph.relation in NAME_MATCH_RELATIONS]
        # Plans with their own search texts (bug reports: whole text, title, prose) name them.
        own = {i: plan_class(plans[i].plan).searches(queries[i], signals[i]) for i in set(sparse_want) | set(dense_want)}
        named = {i: own[i][0] if own.get(i) else {"sparse": (_sparse_text(queries[i], signals[i]), k_fetch[i])}
                 for i in sparse_want}
        slots = [(i, name, depth_) for i in sparse_want for name, (_, depth_) in named[i].items()]
        sparse_texts = [named[i][name][0] for i, name, _ in slots]
        sparse_texts += [" ".join(sorted({self.index.nodes.name[t] for t in targets[i]})) for i in mention_want]
        dense_texts = [own[i][1] if own.get(i) and own[i][1] is not None else _dense_text(queries[i], signals[i])
                       for i in dense_want]
        # A long report's file prior filters the dense ranking, so it reaches deeper.
        depth = {i: max(k_fetch[i], LONG_QUERY_DENSE_K) if signals[i].long_text else k_fetch[i] for i in dense_want}
        sparse_k = max([max(k_fetch[i], d) for i, _, d in slots] + [MENTION_CANDIDATES] * bool(mention_want), default=0)
        t0 = time.perf_counter()
        sparse_res, dense_res = self.engines.branch_search(sparse_texts, sparse_k, dense_texts,
                                                           max(depth.values(), default=0))
        users = set(sparse_want) | set(dense_want) | set(mention_want)
        share = (time.perf_counter() - t0) * 1000 / max(len(users), 1)
        for i in users:
            engine_ms[i] += share
        sparse_hits, dense_hits, mention_rows, runs = {}, {}, {}, {i: {} for i in own if own[i]}
        if sparse_res is not None:
            rows, scores = sparse_res
            for j, (i, name, d) in enumerate(slots):
                if i in runs:
                    runs[i][name] = (rows[j][:d], scores[j][:d])
                if i not in sparse_hits:   # a query's first BM25 run is its sparse branch
                    sparse_hits[i] = to_queried_nodes(rows[j][:k_fetch[i]], scores[j][:k_fetch[i]], "sparse", self.ctx)
            for j, i in enumerate(mention_want, start=len(slots)):
                mention_rows[i] = rows[j][:MENTION_CANDIDATES]
        if dense_res is not None:
            rows, scores = dense_res
            for j, i in enumerate(dense_want):
                dense_hits[i] = to_queried_nodes(rows[j][:depth[i]], scores[j][:depth[i]], "dense", self.ctx)
                if i in runs:
                    runs[i]["dense"] = (rows[j][:depth[i]], scores[j][:depth[i]])
        return sparse_hits, dense_hits, mention_rows, runs

    # -- reranking -------------------------------------------------------------------------

    def _rerank(self, queries, live, plans, results, traces, engine_ms) -> None:
        emb = [i for i in live if results[i] is not None and plans[i].rerank == "embedding"]
        if emb:
            t0 = time.perf_counter()
            top = max(plans[i].rerank_top for i in emb)
            reranked = self.engines.rerank_embedding([tuple(results[i]) for i in emb], [queries[i] for i in emb], top)
            share = (time.perf_counter() - t0) * 1000 / len(emb)
            for i, r in zip(emb, reranked):
                results[i] = list(r)
                engine_ms[i] += share
        llm = [i for i in live if results[i] is not None and plans[i].rerank == "llm"]
        if llm:
            t0 = time.perf_counter()
            texts = self.index.texts()
            cand_lists = [tuple(results[i][: plans[i].rerank_top]) for i in llm]
            text_lists = [[texts[self.index.row_of[c.node_id]] for c in cl] for cl in cand_lists]
            outs = self.engines.rerank_llm([queries[i] for i in llm], cand_lists, text_lists)
            share = (time.perf_counter() - t0) * 1000 / len(llm)
            for i, (head, errs) in zip(llm, outs):
                merged = list(head) + results[i][plans[i].rerank_top:]
                # The tail kept its old scores; 1/position keeps the whole list sorted.
                results[i] = [c.with_score(1.0 / (j + 1)) for j, c in enumerate(merged)]
                if errs:
                    traces[i].setdefault("detail", {})["rerank_errors"] = errs
                engine_ms[i] += share


class SparseSeededGraphRetrievePipeline:
    """BM25 seeds, then k-hop BFS or personalized PageRank over typed, weighted edges, fused
    with the seeds by RRF."""

    def __init__(self, index: LoadedIndex, method: str = "bfs", hops: int = 2, seeds: int = 5,
                 direction: str = "both", edge_types: Sequence[str] = ("calls", "references", "inherits"),
                 hub_degree: int = 200, per_seed: int = 20, total: int = 100, engines: Engines | None = None):
        if method not in ("bfs", "ppr"):
            raise BadInputError(f"unknown traversal {method!r}", fix="use bfs or ppr")
        self.index = index
        self.ctx = RetrieveContext(index)
        self.engines = engines or LocalEngines(index)
        self.method, self.hops, self.seeds = method, hops, seeds
        self.spec = WalkSpec(direction, tuple(edge_types), hub_degree)
        self.per_seed, self.total = per_seed, total

    def run(self, queries: Sequence[str], k: int = 100) -> list[Candidates]:
        rows, scores = self.engines.sparse_search([clean_query_text(q).text for q in queries], max(k, self.seeds))
        out = []
        for r, s in zip(rows, scores):
            seeds = to_queried_nodes(r, s, "sparse", self.ctx)
            seed_rows = [self.index.row_of[c.node_id] for c in seeds[: self.seeds]]
            # Earlier seeds weigh more in PageRank; BFS visits them in rank order.
            walked = ranked_walk(self.index.graph, seed_rows, [1.0 / (i + 1) for i in range(len(seed_rows))],
                                 self.spec, self.method, self.hops, self.per_seed, self.total, keep_seeds=True)
            graph_run = tuple(self.ctx.node(v, w, f"graph:{self.method}") for v, w in walked)
            out.append(fuse([seeds, graph_run], limit=k))
        return out


class DenseGraphExpandRerankPipeline:
    """Dense seeds, one-hop expansion over dependency edges, optional file-level RRF and rerank."""

    def __init__(self, index: LoadedIndex, expand: ExpandParams = ExpandParams(per_seed=3, total=30),
                 seeds: int = 10, file_fusion: bool = True, rerank_top: int = 0, engines: Engines | None = None):
        if index.dense is None:
            raise BadInputError("this pipeline needs dense vectors", path=str(index.path),
                                fix="rebuild the index without --no-dense")
        self.index = index
        self.ctx = RetrieveContext(index)
        self.engines = engines or LocalEngines(index)
        self.expand, self.seeds, self.file_fusion, self.rerank_top = expand, seeds, file_fusion, rerank_top

    def run(self, queries: Sequence[str], k: int = 100) -> list[Candidates]:
        queries = [clean_query_text(q).text for q in queries]
        rows, scores = self.engines.dense_search(queries, k)
        out: list[Candidates] = []
        for r, s in zip(rows, scores):
            sem = to_queried_nodes(r, s, "dense", self.ctx)
            expanded = expand_graph_neighbors(sem[: self.seeds], self.expand, self.ctx)
            graph_run = tuple(c for c in expanded if c.source.startswith("graph"))
            out.append(fuse([sem, graph_run], limit=k, by_file=self.file_fusion))
        if self.rerank_top:
            out = self.engines.rerank_embedding(out, list(queries), self.rerank_top)
        return out


def rerank_context(index: LoadedIndex) -> RerankContext:
    """Embedding-rerank resources of an index: its encoder and persisted vectors."""
    return RerankContext(
        encode_queries=index.encode_queries,
        encode_documents=lambda texts: index.encoder().encode_documents(list(texts)),
        texts=index.texts(),
        row_of=index.row_of,
        vectors=index.dense.vectors if index.dense is not None else None,
    )


def _sparse_text(query: str, s: QuerySignals | None) -> str:
    """A long report's BM25 query: its title line and its code keywords, not the prose."""
    if s is None or not s.long_text:
        return query
    title = next((line for line in query.splitlines() if line.strip()), "")
    title = " ".join(title.split()[:DENSE_HEAD_WORDS // 3])
    stems = [p.rsplit("/", 1)[-1].removesuffix(".py") for p in s.keywords.paths]
    return " ".join([title, *s.keywords.symbols(), *stems])


def _dense_text(query: str, s: QuerySignals | None) -> str:
    if s is None or not s.long_text:
        return query
    head = " ".join(query.split()[:DENSE_HEAD_WORDS])
    keys = " ".join(list(s.keywords.symbols())[:24] + list(s.keywords.paths)[:8])
    return f"{head}\n{keys}" if keys else head


