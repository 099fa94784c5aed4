"""The plan executor: it runs planned queries with one batched call per engine.

`PlanExecutor` executes planned queries (`execute`): a plan (`RetrievalPathPlan`) says
what to search, how deep, what to fuse and with which weights, so the executor decides
nothing and knows no planner (the `executor` import contract); each plan's assembly is its
class in `codenib.model.plans`. `Engines` is the engine calls it makes, `LocalEngines` makes
them in this process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

from codenib.core.errors import BadInputError, CodeNibError
from codenib.core.querytext import clean_query_text
from codenib.index.loaded import LoadedIndex
from codenib.model.parts import PlanInput, PlanParts
from codenib.model.plans import plan_class
from codenib.model.planspec import QueryPlan
from codenib.model.signals import QuerySignals
from codenib.ops.filter import demote_tests
from codenib.ops.rerank import EmbeddingRerankParams, RerankContext, embedding_rerank_batch
from codenib.ops.retrieve import Candidates, QueriedNode, RetrieveContext, to_queried_nodes

#: BM25 hits scanned for name-matched callers of a structural query's target.
MENTION_CANDIDATES = 200
#: Failures of one query's rerank named in its plans row (pointwise mode fails per candidate:
#: up to top_n alike messages); the trace keeps them all.
RERANK_ERRORS_SHOWN = 3


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
    #: The reranker failed for this query (all of it or some windows): the candidates are kept,
    #: in their order before the rerank where it could not reorder them; the batch job records
    #: this in the query's plans row, `codenib query` warns.
    rerank_error: str | None = None


class PlanExecutor:
    """Executes planned queries over one index's resources: its engines (in this process or
    on actors) and, for bug reports, the localisation weights (`LocaliseWeights`, loaded at
    the edge). Plans come from the planner (`codenib.model.planner`), with the queries."""

    def __init__(self, index: LoadedIndex, engines: Engines, localise_weights, history=None):
        self.index = index
        self.engines = engines
        self.ctx = RetrieveContext(index)
        # A resource, not a strategy: an index without vectors has no dense branch to call.
        self.dense = index.capabilities().dense
        self.parts = PlanParts(index, self.ctx, localise_weights, history)

    def execute(self, queries: Sequence[str], plans: Sequence[QueryPlan], k: int | None = None) -> list[QueryResult]:
        """Retrieve for a batch of planned queries (`plans[i]` is query i's plan, made by the
        driver or by `plan`); a failing query becomes an error result.

        Each query's text is cleaned first (`codenib.core.querytext`: no text can crash an engine);
        a query that needed it records what changed in its trace under ``query_text``.
        """
        cleaned = [clean_query_text(q) for q in queries]
        queries = [c.text for c in cleaned]
        n = len(queries)
        signals: list[QuerySignals | None] = [p.signals for p in plans]
        errors: list[str | None] = [p.error for p in plans]
        live = [i for i in range(n) if errors[i] is None and plans[i].plan is not None]
        planned = {i: plans[i].plan for i in live}
        traces: list[dict[str, Any]] = [plans[i].trace.to_dict() if i in planned else {} for i in range(n)]
        for i, c in enumerate(cleaned):
            if c.changed:
                traces[i]["query_text"] = c.changes()
        k_out = {i: k or planned[i].k for i in live}
        k_fetch = {i: max(planned[i].k, k_out[i]) for i in live}
        engine_ms: dict[int, float] = {i: 0.0 for i in live}
        needs = {i: plan_class(planned[i].plan).needs(planned[i]) for i in live}

        targets = {i: self.parts.targets(signals[i]) for i in live if "graph" in needs[i]}
        sparse_hits, dense_hits, mention_rows, runs = self._branches(live, planned, k_fetch, targets, engine_ms)
        results: list[list[QueriedNode] | None] = [None] * n
        for i in live:
            t0 = time.perf_counter()
            try:
                # History signals the plan carries (computed on the session's `History`).
                history = (self.parts.history_evidence(planned[i].history, planned[i].history_text)
                           if planned[i].history else None)
                q = PlanInput(queries[i], signals[i], planned[i], sparse_hits.get(i, ()), dense_hits.get(i, ()),
                              tuple(targets.get(i, ())), mention_rows.get(i), traces[i].setdefault("detail", {}),
                              runs.get(i), history)
                cands = plan_class(planned[i].plan).assemble(q, self.parts)
                if planned[i].prefer_library:
                    cands = demote_tests(cands)
                results[i] = list(cands)
            except CodeNibError as exc:
                errors[i] = str(exc)
            engine_ms[i] += (time.perf_counter() - t0) * 1000
        rerank_errors = self._rerank(queries, live, planned, results, traces, engine_ms)

        out: list[QueryResult] = []
        for i, q in enumerate(queries):
            cands = tuple(results[i][:k_out[i]]) if results[i] is not None and errors[i] is None else ()
            plan_name = planned[i].plan if i in planned else "none"
            if i in planned:
                traces[i].setdefault("detail", {})["plan"] = planned[i].to_dict()
            out.append(QueryResult(q, cands, plan_name, traces[i], round(engine_ms.get(i, 0.0), 3),
                                   errors[i], signals[i].to_dict() if signals[i] else {},
                                   rerank_errors.get(i) if errors[i] is None else None))
        return out

    # -- engines (one batched call each) ---------------------------------------------------

    def _branches(self, live, plans, k_fetch, targets, engine_ms):
        """One batched engine round for the whole batch: each plan's BM25 searches (and the
        name searches of call-graph queries), and its dense search."""
        sparse_want = [i for i in live if plans[i].sparse_searches]
        dense_want = [i for i in live if plans[i].dense_search is not None] if self.dense else []
        mention_want = [i for i in sorted(targets) if targets[i] and plans[i].mention_search]
        slots = [(i, s.name, s.depth or k_fetch[i])
                 for i in sparse_want for s in plans[i].sparse_searches]
        sparse_texts = [s.text for i in sparse_want for s in plans[i].sparse_searches]
        sparse_texts += [" ".join(sorted({self.index.nodes.name[t] for t in targets[i]})) for i in mention_want]
        dense_texts = [plans[i].dense_search.text for i in dense_want]
        depth = {i: max(k_fetch[i], plans[i].dense_search.depth) for i in dense_want}
        sparse_k = max([max(k_fetch[i], d) for i, _, d in slots] + [MENTION_CANDIDATES] * bool(mention_want), default=0)
        t0 = time.perf_counter()
        sparse_res, dense_res = self.engines.branch_search(sparse_texts, sparse_k, dense_texts,
                                                           max(depth.values(), default=0))
        users = set(sparse_want) | set(dense_want) | set(mention_want)
        share = (time.perf_counter() - t0) * 1000 / max(len(users), 1)
        for i in users:
            engine_ms[i] += share
        sparse_hits, dense_hits, mention_rows = {}, {}, {}
        # Named runs reach `assemble` raw (bug reports score them); their plans search only BM25.
        runs = {i: {} for i in sparse_want if plans[i].report is not None}
        if sparse_res is not None:
            rows, scores = sparse_res
            for j, (i, name, d) in enumerate(slots):
                if i in runs:
                    runs[i][name] = (rows[j][:d], scores[j][:d])
                if i not in sparse_hits:   # a query's first BM25 run is its sparse branch
                    sparse_hits[i] = to_queried_nodes(rows[j][:k_fetch[i]], scores[j][:k_fetch[i]], "sparse", self.ctx)
            for j, i in enumerate(mention_want, start=len(slots)):
                mention_rows[i] = rows[j][:MENTION_CANDIDATES]
        # Whole-file BM25 runs in this process: a few thousand documents at most per index.
        file_slots = [(i, s) for i in runs for s in plans[i].file_searches]
        if file_slots and self.index.file_sparse is not None:
            t0 = time.perf_counter()
            files = self.index.file_sparse
            rows, scores = files.search([s.text for _, s in file_slots], files.sparse.num_docs)
            for j, (i, s) in enumerate(file_slots):
                runs[i][s.name] = (rows[j], scores[j])
            share = (time.perf_counter() - t0) * 1000 / len({i for i, _ in file_slots})
            for i in {i for i, _ in file_slots}:
                engine_ms[i] += share
        if dense_res is not None:
            rows, scores = dense_res
            for j, i in enumerate(dense_want):
                dense_hits[i] = to_queried_nodes(rows[j][:depth[i]], scores[j][:depth[i]], "dense", self.ctx)
                if i in runs:
                    runs[i]["dense"] = (rows[j][:depth[i]], scores[j][:depth[i]])
        return sparse_hits, dense_hits, mention_rows, runs

    # -- reranking -------------------------------------------------------------------------

    def _rerank(self, queries, live, plans, results, traces, engine_ms) -> dict[int, str]:
        """Rerank the queries whose plans ask for it, in place; returns query -> what failed."""
        failed: dict[int, str] = {}
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
            try:
                outs = self.engines.rerank_llm([queries[i] for i in llm], cand_lists, text_lists)
            except CodeNibError as exc:     # the whole request: every list keeps its ranking
                outs = [(cands, [f"the LLM rerank failed: {exc}"]) for cands in cand_lists]
            share = (time.perf_counter() - t0) * 1000 / len(llm)
            for i, (head, errs), before in zip(llm, outs, cand_lists):
                engine_ms[i] += share
                if errs:
                    traces[i].setdefault("detail", {})["rerank_errors"] = errs
                    more = f"; and {len(errs) - RERANK_ERRORS_SHOWN} more" if len(errs) > RERANK_ERRORS_SHOWN else ""
                    failed[i] = "llm rerank: " + "; ".join(errs[:RERANK_ERRORS_SHOWN]) + more
                    if [c.node_id for c in head] == [c.node_id for c in before]:
                        continue    # nothing was reordered: the ranking keeps its own scores
                merged = list(head) + results[i][plans[i].rerank_top:]
                # The tail kept its old scores; 1/position keeps the whole list sorted.
                results[i] = [c.with_score(1.0 / (j + 1)) for j, c in enumerate(merged)]
        return failed


def rerank_context(index: LoadedIndex) -> RerankContext:
    """Embedding-rerank resources of an index: its encoder and persisted vectors."""
    return RerankContext(
        encode_queries=index.encode_queries,
        encode_documents=lambda texts: index.encoder().encode_documents(list(texts)),
        texts=index.texts(),
        row_of=index.row_of,
        vectors=index.dense.vectors if index.dense is not None else None,
    )
