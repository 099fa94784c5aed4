"""Named retrieval pipelines: the planner over the plan executor, and the two graph baselines.

`RetrieveRerankPipeline` is the Python entry point: it plans each query
(`codenib.model.planner`) and runs the plan on the one executor (`PlanExecutor`,
`codenib.model.executor`), as `codenib query` does, and keeps the last query's plan and
trace. `SparseSeededGraphRetrievePipeline` and `DenseGraphExpandRerankPipeline`, the two
graph pipelines of the design, are compositions of the same parts (engines, graph walk,
fusion). The executor's names are re-exported here, where callers have always found them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from codenib.core.errors import BadInputError
from codenib.core.querytext import clean_query_text
from codenib.index.graph import CodeGraph
from codenib.index.loaded import Capabilities, LoadedIndex
from codenib.model.executor import (
    MENTION_CANDIDATES,
    Engines,
    LocalEngines,
    PlanExecutor,
    QueryResult,
    rerank_context,
)
from codenib.model.localise import LocaliseWeights
from codenib.model.parts import fuse
from codenib.model.planner import MODES, RetrievalPlanner, check_capabilities, plan_options
from codenib.model.planspec import QueryPlan
from codenib.model.traversal import WalkSpec, ranked_walk
from codenib.model.weights import load_localise_weights
from codenib.ops.expand import ExpandParams, expand_graph_neighbors
from codenib.ops.retrieve import Candidates, RetrieveContext, to_queried_nodes

__all__ = ["MENTION_CANDIDATES", "DenseGraphExpandRerankPipeline", "Engines", "LocalEngines", "PlanExecutor",
           "QueryResult", "RetrieveRerankPipeline", "SparseSeededGraphRetrievePipeline", "rerank_context"]


class RetrieveRerankPipeline:
    """Planner-driven retrieval over one loaded index, ranked as `codenib query` ranks.

    Each query is planned (signals x budget x capabilities -> a `RetrievalPathPlan`, with a
    `GraphExpansionPlan` for structural questions) and run on `PlanExecutor`; after `run`,
    `last_selected_plan` and `last_planner_trace` hold the last query's plan name and trace
    (signals, budget, capabilities, plan, reasons and execution detail).

    Args:
        index: a `LoadedIndex` (`codenib.index.loaded.load_index`).
        retrieval_mode: auto (the planner chooses per query) or sparse | dense | hybrid | graph
            (that mode's plan for every query).
        budget: fast | balanced | thorough.
        k: results per query (None: the plan's, which the budget sets); `run(k=...)` overrides it.
        rerank: None (the budget decides), none, embedding or llm.
        code_graph: the `CodeGraph` structural plans walk, over the index's nodes (None: the
            index's own). Without edges (`load_index(..., graph=False)` and no `code_graph`)
            the planner sees no graph and its trace says why structural questions degrade.
        llm: an LLM reranker (`codenib.model.session.llm_reranker`), for rerank llm.
        localise_weights: the bug-report `LocaliseWeights`. None: the weights `codenib query`
            ranks this index's bug reports with, the ones the index fitted on its history
            (`codenib index --history --fit-weights`) else the packaged ones
            (`codenib.model.weights.load_localise_weights`).
        planner: the `RetrievalPlanner` (default: fusion weights 1:1, as every command's).
        engines: where engine calls go (default: `LocalEngines`, in this process).

    Raises:
        BadInputError: an unknown mode, budget or reranker, k below 1, a `code_graph` over other
            nodes, or an index with neither a sparse nor a dense index.
        IndexFormatError: the index lists fitted weights that are missing or malformed.
    """

    def __init__(self, index: LoadedIndex, retrieval_mode: str = "auto", budget: str = "balanced",
                 k: int | None = None, rerank: str | None = None, code_graph: CodeGraph | None = None,
                 llm: Any = None, localise_weights: LocaliseWeights | None = None,
                 planner: RetrievalPlanner | None = None, engines: Engines | None = None):
        # `plan_options` also accepts `all`, a batch-run mode that runs several plans per query.
        if retrieval_mode not in MODES:
            raise BadInputError(f"unknown retrieval_mode {retrieval_mode!r}", fix=f"use one of: {', '.join(MODES)}")
        self.options = plan_options(budget, retrieval_mode, rerank)
        self.k = _checked_k(k)
        self.index = _with_graph(index, code_graph) if code_graph is not None else index
        self.capabilities = _capabilities(self.index, llm_configured=llm is not None)
        check_capabilities(self.capabilities)
        self.planner = planner or RetrievalPlanner()
        weights = localise_weights if localise_weights is not None else load_localise_weights(None, self.index)
        history = self.index.history if self.capabilities.history else None
        self.executor = PlanExecutor(self.index, engines or LocalEngines(self.index, llm), weights, history)
        self.last_selected_plan: str | None = None
        self.last_planner_trace: dict[str, Any] | None = None

    @property
    def retrieval_mode(self) -> str:
        return self.options.mode

    @property
    def budget(self) -> str:
        return self.options.budget.name

    def plan(self, queries: Sequence[str]) -> list[QueryPlan]:
        """Each query's plan (its cleaned text), grounded in the index's symbol table."""
        return [self.planner.plan_query(clean_query_text(q).text, self.options, self.capabilities,
                                        self.index.symbols) for q in queries]

    def run(self, queries: Sequence[str], k: int | None = None) -> list[QueryResult]:
        """Plan and execute a batch of queries; a failing query becomes an error result."""
        results = self.executor.execute(queries, self.plan(queries), _checked_k(k) or self.k)
        if results:
            self.last_selected_plan = results[-1].plan
            self.last_planner_trace = results[-1].trace
        return results

    def search(self, query: str, k: int | None = None) -> QueryResult:
        """One query's result (`run` of one)."""
        return self.run([query], k)[0]


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


def _checked_k(k: int | None) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise BadInputError(f"k must be a whole number of at least 1, got {k!r}", fix="pass k=10, or None for the plan's")
    return k


def _with_graph(index: LoadedIndex, graph: CodeGraph) -> LoadedIndex:
    """`index` walking `graph`, which must number the same nodes in the same order."""
    if graph is index.graph:
        return index
    if graph.node_ids != index.nodes.node_id:
        raise BadInputError(f"code_graph has {graph.num_nodes} nodes that are not the index's {len(index.nodes)} "
                            "in its order", path=str(index.path),
                            fix="build it from this index (load_index(path).graph) or leave code_graph out")
    return LoadedIndex(index.path, index.manifest, index.nodes, graph, index.sparse, index.dense, index.device)


def _capabilities(index: LoadedIndex, llm_configured: bool) -> Capabilities:
    """The index's capabilities (as a `RetrievalSession` reads them), with no graph when the
    graph it holds has no edges at all: the manifest speaks for the folder, and an index
    loaded with graph=False holds an empty graph, with nothing to walk."""
    caps = index.capabilities(llm_configured=llm_configured)
    return dataclasses.replace(caps, graph=False) if caps.graph and index.graph.num_edges == 0 else caps
