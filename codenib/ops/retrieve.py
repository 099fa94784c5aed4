"""Candidate records, normalization of engine output, dedup and weighted RRF fusion.

Ops are pure functions `(candidates, params, context) -> candidates`: they never mutate
their input, never load resources (those arrive in `RetrieveContext`), and break ties by
node id so that every result is deterministic.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from codenib.core.errors import BadInputError
from codenib.core.types import file_of

if TYPE_CHECKING:  # the index layer is below ops; imported only for types
    from codenib.index.loaded import LoadedIndex

#: Reciprocal-rank constant: 60 is the value of the original RRF paper and of ranx/Pyserini.
RRF_K = 60


@dataclass(frozen=True, slots=True)
class QueriedNode:
    """One retrieved candidate: a node with a score from one source."""

    node_id: str
    file: str
    kind: str
    name: str
    start_line: int
    end_line: int
    score: float
    source: str                     # sparse | dense | graph | fusion | rerank:<name> | ...
    content: str | None = None

    def with_score(self, score: float, source: str | None = None) -> "QueriedNode":
        return dataclasses.replace(self, score=float(score), source=source or self.source)


Candidates = tuple[QueriedNode, ...]


@dataclass(frozen=True)
class RetrieveContext:
    """Resources an op may read: the loaded index (nodes, sparse, dense, graph)."""

    index: "LoadedIndex"

    def node(self, row: int, score: float, source: str) -> QueriedNode:
        """The candidate for nodes row `row`."""
        n = self.index.nodes
        return QueriedNode(n.node_id[row], n.file[row], n.kind[row], n.name[row],
                           n.start_line[row], n.end_line[row], float(score), source)

    def row(self, node_id: str) -> int | None:
        return self.index.row_of.get(node_id)


def to_queried_nodes(rows: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray,
                     source: str, ctx: RetrieveContext) -> Candidates:
    """Normalize one query's engine output (row indices + scores; -1 = padding) to candidates.

    Rows come back in the engine's order; padding and unknown rows are dropped.
    """
    n = len(ctx.index.nodes)
    out = []
    for r, s in zip(np.asarray(rows).tolist(), np.asarray(scores).tolist()):
        if 0 <= r < n:
            out.append(ctx.node(r, s, source))
    return tuple(out)


def from_node_ids(node_ids: Iterable[str], scores: Iterable[float], source: str,
                  ctx: RetrieveContext) -> Candidates:
    """Candidates for known node ids (unknown ids are dropped: another snapshot's nodes)."""
    out = []
    for nid, s in zip(node_ids, scores):
        r = ctx.row(nid)
        if r is not None:
            out.append(ctx.node(r, s, source))
    return tuple(out)


def dedup_key(node: QueriedNode) -> str:
    """Stable identity of a candidate: its node id (relative path + qualified name)."""
    return node.node_id


def dedup(cands: Sequence[QueriedNode]) -> Candidates:
    """Keep the first-ranked copy of each node; carry over content a later copy has."""
    first: dict[str, int] = {}
    out: list[QueriedNode] = []
    for c in cands:
        key = dedup_key(c)
        if key not in first:
            first[key] = len(out)
            out.append(c)
        elif out[first[key]].content is None and c.content is not None:
            out[first[key]] = dataclasses.replace(out[first[key]], content=c.content)
    return tuple(out)


def sort_candidates(cands: Iterable[QueriedNode]) -> Candidates:
    """Score descending, ties by node id."""
    return tuple(sorted(cands, key=lambda c: (-c.score, c.node_id)))


def rrf_fuse(runs: Sequence[Sequence[QueriedNode]], weights: Sequence[float] | None = None,
             k: int = RRF_K, limit: int | None = None, source: str = "fusion") -> Candidates:
    """Weighted reciprocal-rank fusion at node level: score = sum_i w_i / (k + rank_i).

    Each run is deduplicated first (its best rank counts). Ties break by node id, so the
    result does not depend on the order of equal-weight runs.
    """
    weights = _weights(runs, weights)
    parts: dict[str, list[float]] = {}
    best: dict[str, QueriedNode] = {}
    for run, w in zip(runs, weights):
        for rank, c in enumerate(dedup(run), start=1):
            key = dedup_key(c)
            parts.setdefault(key, []).append(w / (k + rank))
            held = best.get(key)
            if held is None or _content_key(c) < _content_key(held):
                best[key] = c
    # fsum is exact, so the fused score does not depend on the order of the runs.
    scores = {key: math.fsum(p) for key, p in parts.items()}
    fused = sort_candidates(best[key].with_score(s, source) for key, s in scores.items())
    return fused[:limit] if limit is not None else fused


@dataclass(frozen=True, slots=True)
class FileCandidate:
    """A file ranked by file-level fusion, with the best node each branch offered for it."""

    file: str
    score: float
    nodes: tuple[QueriedNode, ...]


def rrf_fuse_files(runs: Sequence[Sequence[QueriedNode]], weights: Sequence[float] | None = None,
                   k: int = RRF_K, limit: int | None = None) -> tuple[FileCandidate, ...]:
    """Weighted RRF over files: each run contributes at most once per file, at the rank of
    its first node in that file. Files come from the relative path inside node ids, so runs
    from indexes built in different checkouts fuse correctly."""
    weights = _weights(runs, weights)
    parts: dict[str, list[float]] = {}
    members: dict[str, list[QueriedNode]] = {}
    for run, w in zip(runs, weights):
        seen: set[str] = set()
        rank = 0
        for c in dedup(run):
            f = file_of(c.node_id)
            if f in seen:
                continue
            seen.add(f)
            rank += 1
            parts.setdefault(f, []).append(w / (k + rank))
            members.setdefault(f, []).append(c)
    scores = {f: math.fsum(p) for f, p in parts.items()}
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    out = tuple(FileCandidate(f, s, tuple(sorted(members[f], key=_member_key))) for f, s in ranked)
    return out[:limit] if limit is not None else out


def nodes_by_file_rank(files: Sequence[FileCandidate], node_runs: Sequence[Sequence[QueriedNode]],
                       limit: int | None = None) -> Candidates:
    """Nodes ordered by their file's fused rank, then by their best rank in `node_runs`.

    Scores are 1/position, so the output is sorted by score like every other op's.
    """
    best: dict[str, tuple[int, QueriedNode]] = {}
    for run in node_runs:
        for rank, c in enumerate(dedup(run)):
            if c.node_id not in best or rank < best[c.node_id][0]:
                best[c.node_id] = (rank, c)
    by_file: dict[str, list[tuple[int, str, QueriedNode]]] = {}
    for nid, (rank, c) in best.items():
        by_file.setdefault(file_of(nid), []).append((rank, nid, c))
    ordered = [c for fc in files for _, _, c in sorted(by_file.get(fc.file, ()), key=lambda t: t[:2])]
    if limit is not None:
        ordered = ordered[:limit]
    return tuple(c.with_score(1.0 / (i + 1), "fusion:file") for i, c in enumerate(ordered))


def _content_key(c: QueriedNode) -> tuple[int, str]:
    """Which copy of a node fusion keeps: one with content first, then the smallest content."""
    return (c.content is None, c.content or "")


def _member_key(c: QueriedNode) -> tuple:
    return (c.node_id, -c.score, c.source, c.content or "")


def _weights(runs: Sequence, weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(runs)
    if len(weights) != len(runs):
        raise BadInputError(f"{len(weights)} fusion weights for {len(runs)} runs",
                            fix="give one weight per run")
    if any(w < 0 for w in weights):
        raise BadInputError(f"negative fusion weight in {list(weights)}", fix="use weights >= 0")
    return [float(w) for w in weights]
