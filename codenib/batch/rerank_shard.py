"""One rerank shard: the ranked lists it holds and reranking them (what a rerank actor runs;
`codenib.batch.rerank` plans the shards and runs the job)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pyarrow as pa

from codenib.core.types import PLANS_SCHEMA, RESULTS_SCHEMA


@dataclass(frozen=True, slots=True)
class RerankItem:
    """One ranked list to rerank: a (qid, plan) of the source run."""

    qid: str
    plan: str
    index: str
    query: str
    node_ids: tuple[str, ...]
    scores: tuple[float, ...]
    run_tag: str
    index_path: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RerankShard:
    shard_id: int
    index_path: str
    rows: tuple[RerankItem, ...]


def rerank_shard(shard: RerankShard, index, reranker: str, top_n: int, llm=None) -> tuple[pa.Table, pa.Table]:
    """Rerank every list of a shard; a failure keeps that list's order and records the error."""
    from codenib.model.pipelines import rerank_context
    from codenib.ops.rerank import EmbeddingRerankParams, embedding_rerank_batch
    from codenib.ops.retrieve import QueriedNode, RetrieveContext

    outputs: list[tuple[RerankItem, list[QueriedNode], str | None, float]] = []
    live = [it for it in shard.rows if it.error is None and index is not None]
    ctx = RetrieveContext(index) if index is not None else None
    cand_lists = [[_candidate(ctx, nid, s) for nid, s in zip(it.node_ids, it.scores)] for it in live]
    t0 = time.perf_counter()
    new_lists: list[tuple[list[QueriedNode], str | None]] = []
    try:
        if reranker == "embedding":
            reranked = embedding_rerank_batch([tuple(c) for c in cand_lists], [it.query for it in live],
                                              EmbeddingRerankParams(top_n=top_n), rerank_context(index))
            new_lists = [(list(r), None) for r in reranked]
        else:
            texts = index.texts()
            heads = [tuple(c[:top_n]) for c in cand_lists]
            text_lists = [[texts[ctx.row(c.node_id)] if ctx.row(c.node_id) is not None else c.name for c in h]
                          for h in heads]
            outs = llm.rerank_many([it.query for it in live], heads, text_lists)
            for (head, errs), cands in zip(outs, cand_lists):
                new_lists.append((list(head) + cands[top_n:], "; ".join(errs) if errs else None))
    except Exception as exc:  # noqa: BLE001 - a failed batch keeps every list's order, recorded
        new_lists = [(c, f"rerank failed: {type(exc).__name__}: {exc}") for c in cand_lists]
    share = (time.perf_counter() - t0) * 1000 / max(len(live), 1)
    for it, (cands, err) in zip(live, new_lists):
        outputs.append((it, cands, err, share))
    for it in shard.rows:
        if it.error is not None or index is None:
            keep = [QueriedNode(n, n.split("::")[0], "", "", 0, 0, s, "source") for n, s in zip(it.node_ids, it.scores)]
            outputs.append((it, keep, it.error or "index not available", 0.0))
    results = {name: [] for name in RESULTS_SCHEMA.names}
    plans = {name: [] for name in PLANS_SCHEMA.names}
    for it, cands, err, ms in sorted(outputs, key=lambda o: (o[0].qid, o[0].plan)):
        # Scores are 1/position: the reranked head and the untouched tail stay one sorted list.
        for rank, c in enumerate(cands, start=1):
            for key, value in (("qid", it.qid), ("rank", rank), ("node_id", c.node_id), ("file", c.node_id.split("::")[0]),
                               ("score", 1.0 / rank), ("plan", it.plan), ("index", it.index), ("run_tag", it.run_tag)):
                results[key].append(value)
        trace = {"rerank": {"reranker": reranker, "top_n": top_n, "candidates": len(cands)}}
        for key, value in (("qid", it.qid), ("plan", it.plan), ("signals", "{}"), ("budget", ""),
                           ("capabilities", "{}"), ("trace", json.dumps(trace, sort_keys=True)),
                           ("latency_ms", ms), ("error", err), ("index", it.index), ("mode", "rerank")):
            plans[key].append(value)
    return pa.table(results, schema=RESULTS_SCHEMA), pa.table(plans, schema=PLANS_SCHEMA)


def _candidate(ctx, node_id: str, score: float):
    from codenib.ops.retrieve import QueriedNode

    row = ctx.row(node_id)
    if row is None:  # a node the index no longer has: kept, reranked by its name only
        return QueriedNode(node_id, node_id.split("::")[0], "", node_id.rsplit(".", 1)[-1], 0, 0, score, "source")
    return ctx.node(row, score, "source")
