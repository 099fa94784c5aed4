"""Candidate-only reranking: embedding similarity (persisted or online vectors) and LLM.

Rerankers only reorder the candidates they are given; they never retrieve new ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from codenib.core.errors import BadInputError
from codenib.ops.retrieve import Candidates, QueriedNode


@dataclass(frozen=True, slots=True)
class EmbeddingRerankParams:
    """Rerank the top `top_n`; `alpha` weighs similarity against the incoming order."""

    top_n: int = 50
    alpha: float = 1.0

    def __post_init__(self):
        if self.top_n < 0 or not 0.0 <= self.alpha <= 1.0:
            raise BadInputError(f"bad embedding rerank params top_n={self.top_n}, alpha={self.alpha}",
                                fix="use top_n >= 0 and 0 <= alpha <= 1")


@dataclass(frozen=True)
class RerankContext:
    """What an embedding reranker reads.

    `encode_documents` is only called for candidates without a persisted vector, i.e. when
    `vectors` is None (the reranker's model differs from the index's) or a row is unknown.
    """

    encode_queries: Callable[[Sequence[str]], np.ndarray]
    encode_documents: Callable[[Sequence[str]], np.ndarray]
    texts: Sequence[str]                   # indexed text by row
    row_of: Mapping[str, int]
    vectors: np.ndarray | None = None      # persisted vectors by row, same model as the encoder
    extra: dict[str, Any] = field(default_factory=dict)


def embedding_rerank(cands: Sequence[QueriedNode], query: str, params: EmbeddingRerankParams,
                     ctx: RerankContext) -> Candidates:
    """Reorder the top `top_n` candidates by cosine similarity to the query."""
    return embedding_rerank_batch([cands], [query], params, ctx)[0]


def embedding_rerank_batch(cand_lists: Sequence[Sequence[QueriedNode]], queries: Sequence[str],
                           params: EmbeddingRerankParams, ctx: RerankContext) -> list[Candidates]:
    """`embedding_rerank` for many queries with one query-encoding call and one document call."""
    if len(cand_lists) != len(queries):
        raise BadInputError(f"{len(cand_lists)} candidate lists for {len(queries)} queries",
                            fix="pass one candidate list per query")
    heads = [list(c[: params.top_n]) for c in cand_lists]
    if not any(heads):
        return [tuple(c) for c in cand_lists]
    qvecs = ctx.encode_queries(list(queries))
    doc_vecs = _doc_vectors([c for head in heads for c in head], ctx)
    out: list[Candidates] = []
    pos = 0
    for i, cands in enumerate(cand_lists):
        head = heads[i]
        if not head:
            out.append(tuple(cands))
            continue
        # float64 elementwise product and a fixed-length row sum: the same value whatever the
        # number of candidates, so reranked orders are reproducible across batches.
        sims = (doc_vecs[pos:pos + len(head)].astype(np.float64) * qvecs[i].astype(np.float64)).sum(axis=1)
        pos += len(head)
        n = len(head)
        prior = 1.0 - np.arange(n) / max(n, 1)
        score = params.alpha * sims + (1.0 - params.alpha) * prior
        order = sorted(range(n), key=lambda j: (-score[j], head[j].node_id))
        reranked = [head[j].with_score(float(score[j]), "rerank:embedding") for j in order]
        # The tail keeps its order, scored strictly below the reranked head.
        floor = float(min(score)) if n else 0.0
        tail = [c.with_score(floor - 1.0 - t, c.source) for t, c in enumerate(cands[n:])]
        out.append(tuple(reranked + tail))
    return out


def _doc_vectors(cands: list[QueriedNode], ctx: RerankContext) -> np.ndarray:
    rows = [ctx.row_of.get(c.node_id) for c in cands]
    if ctx.vectors is not None and all(r is not None for r in rows):
        return ctx.vectors[np.asarray(rows, dtype=np.int64)]
    texts = [c.content if c.content is not None else (ctx.texts[r] if r is not None else c.name)
             for c, r in zip(cands, rows)]
    if ctx.vectors is None:
        return ctx.encode_documents(texts)
    vecs = np.zeros((len(cands), ctx.vectors.shape[1]), dtype=np.float32)
    missing = [i for i, r in enumerate(rows) if r is None]
    known = [i for i, r in enumerate(rows) if r is not None]
    if known:
        vecs[known] = ctx.vectors[np.asarray([rows[i] for i in known], dtype=np.int64)]
    if missing:
        vecs[missing] = ctx.encode_documents([texts[i] for i in missing])
    return vecs
