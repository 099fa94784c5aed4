"""Ray actors that hold loaded index parts: sparse (BM25), dense (vectors + query encoder),
rerank (embedding model or LLM client) and graph (nodes, code graph, planner and assembly).

Each actor loads an index once and keeps a bounded LRU of loaded indexes, so jobs over
many repositories reuse what is loaded. The driver verifies every index's checksums before
the job starts, so actors load without hashing the artifacts again. Methods are pure functions of their arguments, so
Ray may retry them on a restarted actor (`max_task_retries`) without changing any result.
"""

from __future__ import annotations

from typing import Any, Sequence

import ray

from codenib.batch.query_rows import Shard
from codenib.batch.rerank_shard import rerank_shard
from codenib.batch.worker import IndexCache, ShardOptions, cache_stats, failed_shard, process_shard
from codenib.core.errors import CodeNibError

#: Actor restarts and per-call retries after a crash (a killed worker, an OOM kill).
MAX_RESTARTS = 3
MAX_TASK_RETRIES = 3


class SparseActor:
    """BM25 search for any index it is asked about."""

    def __init__(self, max_indexes: int = 4, copies=None, max_bytes: int | None = None):
        from codenib.index.loaded import load_index

        share_cores()
        self.cache = IndexCache(lambda p: load_index(p, dense=False, graph=False, verify=False), max_indexes, copies,
                                max_bytes, ("sparse/", "nodes.parquet"))

    def cache_stats(self) -> dict[str, int]:
        return cache_stats(self.cache)

    def search(self, index_path: str, index_sha: str, queries: Sequence[str], k: int):
        return self.cache.get(index_path, index_sha).sparse.search(list(queries), k)

    def warm(self, index_path: str, index_sha: str) -> str | None:
        """Load an index before its first search; see `warm_up`."""
        return warm_up(lambda: self.cache.get(index_path, index_sha))


class DenseActor:
    """Query encoding and dense search (on the GPU when the actor was given one)."""

    def __init__(self, max_indexes: int = 2, device: str = "auto", copies=None, max_bytes: int | None = None):
        from codenib.index.loaded import load_index

        use_all_cores(device)
        self.device = device
        self.cache = IndexCache(lambda p: load_index(p, sparse=False, graph=False, device=device, verify=False),
                                max_indexes, copies, max_bytes, ("dense/", "nodes.parquet"))

    def cache_stats(self) -> dict[str, int]:
        return cache_stats(self.cache)

    def search(self, index_path: str, index_sha: str, texts: Sequence[str], k: int):
        index = self.cache.get(index_path, index_sha)
        return index.dense.search(index.encode_queries(list(texts)), k)

    def warm(self, index_path: str, index_sha: str) -> str | None:
        """Load an index and its query encoder before the first search; see `warm_up`."""
        return warm_up(lambda: self.cache.get(index_path, index_sha).encoder())


class RerankActor:
    """Embedding reranking with an index's persisted vectors, and LLM reranking: per call for
    the graph actors of `codenib run`, per shard (`run_shard`) for `codenib rerank`."""

    def __init__(self, max_indexes: int = 2, device: str = "auto", llm_config=None,
                 reranker: str = "embedding", top_n: int = 50, copies=None):
        from codenib.index.loaded import load_index

        use_all_cores(device)
        self.reranker, self.top_n = reranker, top_n
        self.cache = IndexCache(lambda p: load_index(p, sparse=False, graph=False, device=device, verify=False),
                                 max_indexes, copies)
        from codenib.model.session import llm_reranker

        self.llm = llm_reranker(llm_config)

    def rerank_embedding(self, index_path: str, index_sha: str, cand_lists, queries, top_n: int):
        from codenib.model.pipelines import rerank_context
        from codenib.ops.rerank import EmbeddingRerankParams, embedding_rerank_batch

        index = self.cache.get(index_path, index_sha)
        return embedding_rerank_batch(cand_lists, list(queries), EmbeddingRerankParams(top_n=top_n),
                                      rerank_context(index))

    def rerank_llm(self, queries, cand_lists, text_lists):
        if self.llm is None:
            raise CodeNibError("no LLM reranker is configured on this job")
        return self.llm.rerank_many(list(queries), list(cand_lists), list(text_lists))

    def run_shard(self, shard):
        """Rerank every list of a `RerankShard` with this actor's reranker and top N."""
        return rerank_shard(shard, self.cache.get(shard.index_path) if shard.index_path else None,
                            self.reranker, self.top_n, self.llm)


class ActorEngines:
    """`Engines` that route each batched engine call to the actor holding that resource."""

    def __init__(self, index_path: str, index_sha: str, sparse, dense, rerank):
        self.index = (index_path, index_sha)
        self.sparse, self.dense, self.rerank = sparse, dense, rerank

    def sparse_search(self, queries, k):
        return ray.get(self.sparse.search.remote(*self.index, list(queries), k))

    def dense_search(self, texts, k):
        return ray.get(self.dense.search.remote(*self.index, list(texts), k))

    def branch_search(self, sparse_queries, sparse_k, dense_texts, dense_k):
        # Both actors work at once: the round costs the slower branch, not the sum.
        s = self.sparse.search.remote(*self.index, list(sparse_queries), sparse_k) if sparse_queries else None
        d = self.dense.search.remote(*self.index, list(dense_texts), dense_k) if dense_texts else None
        return (ray.get(s) if s is not None else None, ray.get(d) if d is not None else None)

    def rerank_embedding(self, cand_lists, queries, top_n):
        return ray.get(self.rerank.rerank_embedding.remote(*self.index, list(cand_lists), list(queries), top_n))

    def rerank_llm(self, queries, cand_lists, text_lists):
        return ray.get(self.rerank.rerank_llm.remote(list(queries), list(cand_lists), list(text_lists)))


class GraphActor:
    """Holds nodes and code graph; runs the planner and assembles each query's results,
    calling the sparse, dense and rerank actors for their batched engine calls."""

    def __init__(self, engine_names: tuple[str | None, str | None, str | None], options: ShardOptions,
                 max_indexes: int = 4, copies=None, max_bytes: int | None = None):
        """`engine_names`: the named sparse, dense and rerank actors (None: not started).

        Names, not handles: Ray cannot restart an actor whose constructor arguments hold
        handles (it logs an error for each), and a name finds a restarted actor too.
        """
        from codenib.model.session import RetrievalSession

        self.engine_names = engine_names
        self._handles: tuple | None = None
        self.options = options
        # Sessions over nodes and graph; their engine calls go to the engine actors.
        self.cache = IndexCache(lambda p: RetrievalSession.load(p, sparse=False, dense=False, verify=False,
                                                                llm_configured=options.llm_configured,
                                                                weights=options.localise_weights),
                                max_indexes, copies, max_bytes, ("nodes.parquet", "edges.parquet"))

    def cache_stats(self) -> dict[str, int]:
        return cache_stats(self.cache)

    def node_id(self) -> str:
        """The Ray node this actor runs on (placement checks and tests)."""
        return ray.get_runtime_context().get_node_id()

    def run_shard(self, shard: Shard):
        if not shard.index_path or all(r.error for r in shard.rows):  # every query carries its own error
            return failed_shard(shard, self.options, "index not found")
        # A load failure raises: the driver retries the shard, and records it as failed
        # (retried on resume) if it keeps failing.
        session = self.cache.get(shard.index_path, shard.index_sha)
        if self._handles is None:
            self._handles = tuple(ray.get_actor(n) if n else None for n in self.engine_names)
        engines = ActorEngines(shard.index_path, shard.index_sha, *self._handles)
        return process_shard(shard, session.with_engines(engines), self.options)


def warm_up(load) -> str | None:
    """Run `load` now, so that it overlaps with the other actors' start-up instead of
    delaying the first shard (the query encoder alone takes ~3 s to load on 2 cores).
    Returns the error instead of raising: nobody waits for a warm-up, and the search that
    needs the index raises the same error where the driver handles it."""
    try:
        load()
    except Exception as exc:  # noqa: BLE001 - reported by the search that needs it
        return f"{type(exc).__name__}: {exc}"
    return None


#: OpenMP threads that wait for work sleep instead of spinning: the encoder (torch) and the
#: BM25 kernel (numba) share their cores with the other actors (auto, 10k queries on 2
#: cores: 32.5 s -> 27.5 s).
OMP_WAIT_POLICY = "PASSIVE"


def share_cores() -> None:
    """Set the OpenMP wait policy of this actor's process (a policy the user set wins).
    Called first in an actor's constructor: OpenMP reads it when torch or numba load it."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)


def use_all_cores(device: str) -> None:
    """Ray caps an actor with a fractional CPU request at one intra-op thread; the encoder
    actors are where CPU time goes, so on the CPU they use every core of their node. torch
    is not imported for this (~2 s): it reads OMP_NUM_THREADS when an index's torch encoder
    first imports it, and the exported backends size their own thread pools."""
    share_cores()
    if device == "cpu":
        import os
        import sys

        threads = os.cpu_count() or 1
        os.environ["OMP_NUM_THREADS"] = str(threads)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(threads)


def remote_classes(num_gpus_dense: float = 0.0) -> dict[str, Any]:
    """The actor classes as Ray remote classes with restart/retry options."""
    common = {"max_restarts": MAX_RESTARTS, "max_task_retries": MAX_TASK_RETRIES}
    return {
        "sparse": ray.remote(num_cpus=0.25, **common)(SparseActor),
        "dense": ray.remote(num_cpus=0.5, num_gpus=num_gpus_dense, **common)(DenseActor),
        "rerank": ray.remote(num_cpus=0.25, num_gpus=num_gpus_dense, **common)(RerankActor),
        "graph": ray.remote(num_cpus=0.5, **common)(GraphActor),
    }
