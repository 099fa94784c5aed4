"""What plan assembly reads and shares: one query's branch results (`PlanInput`), the
index look-ups plans make (`PlanParts`), and the fusion step the named pipelines share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from codenib.model.planspec import RetrievalPathPlan
from codenib.model.signals import QuerySignals
from codenib.ops.retrieve import (
    Candidates,
    QueriedNode,
    RetrieveContext,
    nodes_by_file_rank,
    rrf_fuse,
    rrf_fuse_files,
)

if TYPE_CHECKING:
    import numpy as np

    from codenib.index.loaded import LoadedIndex

_CALL_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
#: Target rows a graph question seeds from at most (a name with hundreds of definitions).
MAX_TARGET_ROWS = 20
#: Inheritance levels an override search climbs or descends.
OVERRIDE_DEPTH = 3


@dataclass(frozen=True)
class PlanInput:
    """One query's material for `assemble`: its plan and what the batch's engine round
    returned for it. `detail` is the trace's detail dict, where assembly records why."""

    query: str
    signals: QuerySignals
    plan: RetrievalPathPlan
    sparse: Candidates = ()
    dense: Candidates = ()
    targets: tuple[int, ...] = ()              # rows of the target symbol (graph plans)
    mention_rows: np.ndarray | None = None     # BM25 rows for the target's name (callers)
    detail: dict[str, Any] | None = None
    runs: dict[str, tuple] | None = None       # named raw (rows, scores) runs (`RetrievalPlan.searches`)
    history: dict[str, Any] | None = None      # history signal -> `Evidence` (the plan's `history`)


class PlanParts:
    """The index look-ups plans assemble from: exact symbols, named files, name-matched
    neighbours and the code graph. Holds no per-query state."""

    def __init__(self, index: LoadedIndex, ctx: RetrieveContext | None = None, localise_weights=None,
                 history=None):
        self.index = index
        self.ctx = ctx or RetrieveContext(index)
        self.localise_weights = localise_weights   # `LocaliseWeights` of bug-report plans (read at the edge)
        self._file_rows: dict[str, int] | None = None
        self._history = None
        if history is not None:   # a `History` (loaded at the edge, by the session)
            from codenib.model.history.evidence import EvidenceCache

            self._history = EvidenceCache(history)

    def history_evidence(self, signals, text: str) -> dict[str, Any]:
        """The evidence of each (signal, weight) a plan carries, for its text.

        Raises:
            BadInputError: the plan asks for history but the executor was given none.
        """
        if self._history is None:
            from codenib.core.errors import BadInputError

            raise BadInputError("the plan asks for history evidence but the index's history was not loaded",
                                path=str(self.index.path), fix="load the index's history with the session")
        return {name: self._history.get(name, text) for name, _ in signals}

    def history(self):
        """The index's `History` (None when the executor was given none)."""
        return None if self._history is None else self._history.history

    def file_rows(self) -> dict[str, int]:
        """File path -> row of its file node (built on first use)."""
        if self._file_rows is None:
            from codenib.model.localise_inputs import file_rows_of

            self._file_rows = file_rows_of(self.index.nodes)
        return self._file_rows

    def targets(self, s: QuerySignals) -> list[int]:
        """Rows of the symbols a query targets (empty when it names none that exists), at most
        MAX_TARGET_ROWS. Import questions are about files: a symbol stands for its file."""
        rows: list[int] = []
        for name in s.targets or ((s.target,) if s.target else ()):
            for m in self.index.symbols.lookup(name):
                row = m.row
                if s.relation == "imports" and self.index.nodes.kind[row] != "file":
                    row = self.file_rows().get(self.index.nodes.file[row], row)
                if row not in rows:
                    rows.append(row)
        return rows[:MAX_TARGET_ROWS]

    def overrides(self, targets: Sequence[int], direction: str) -> list[int]:
        """Methods that override the target methods (callers: in subclasses) or that they
        override (callees: in base classes), nearest classes first. A class target stands
        for all of its methods."""
        nodes, graph = self.index.nodes, self.index.graph
        out: list[int] = []
        for t in targets:
            if nodes.kind[t] == "class":
                cls, names = t, {nodes.name[m] for m, _ in graph.successors_idx(t, ["contains"])
                                 if nodes.kind[m] == "method"}
            else:
                owners = [c for c, _ in graph.predecessors_idx(t, ["contains"]) if nodes.kind[c] == "class"]
                if not owners:
                    continue
                cls, names = owners[0], {nodes.name[t]}
            step = graph.predecessors_idx if direction in ("callers", "both") else graph.successors_idx
            seen, frontier = {cls}, [cls]
            for _ in range(OVERRIDE_DEPTH):
                nxt = []
                for c in frontier:
                    for k, _ in sorted(step(c, ["inherits"])):
                        if k not in seen:
                            seen.add(k)
                            nxt.append(k)
                for k in nxt:
                    out.extend(m for m, _ in sorted(graph.successors_idx(k, ["contains"]))
                               if nodes.name[m] in names and m not in out and m != t)
                frontier = nxt
        return out

    def symbol_hits(self, s: QuerySignals, detail: dict, all_keywords: bool = False) -> Candidates:
        """Exact-name matches of the target (or of every symbol keyword), in look-up order."""
        names = list(s.keywords.symbols()) if all_keywords else ([s.target] if s.target else [])
        rows: list[int] = []
        for name in names:
            for m in self.index.symbols.lookup(name):
                if m.row not in rows:
                    rows.append(m.row)
        detail["symbol_hits"] = len(rows)
        return tuple(self.ctx.node(r, 1.0, "symbol") for r in rows)

    def mentioned_files(self, s: QuerySignals) -> set[str]:
        """Indexed files matching the paths a query names."""
        files: set[str] = set()
        for path in s.keywords.paths:
            files.update(self.index.symbols.files_matching(path))
        return files

    def mentions(self, targets: Sequence[int], direction: str, mention_rows) -> list[QueriedNode]:
        """Name-matched neighbours the precise graph may have missed (untyped receivers).

        Callers: BM25 hits for the target's name (`mention_rows`, searched with the batch)
        whose body calls that name. Callees: names the target's body calls, looked up.
        """
        if not targets:
            return []
        texts = self.index.texts()
        names = {self.index.nodes.name[t] for t in targets}
        target_ids = set(targets)
        out: list[QueriedNode] = []
        if direction in ("callers", "both") and mention_rows is not None:
            pattern = re.compile(r"(?<![\w])(?:\.)?(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\s*\(")
            for r in mention_rows.tolist():
                if r < 0 or r in target_ids or self.index.nodes.kind[r] == "file":
                    continue
                body = texts[r].split("\n", 2)[-1]  # skip the header and the def line
                if pattern.search(body):
                    out.append(self.ctx.node(r, 0.5, "name_match"))
        if direction in ("callees", "both"):
            for t in targets:
                body = texts[t].split("\n", 2)[-1]
                for name in dict.fromkeys(_CALL_NAME.findall(body)):
                    for m in self.index.symbols.lookup(name)[:3]:
                        if m.row not in target_ids and m.level in ("name", "qualname"):
                            out.append(self.ctx.node(m.row, 0.5, "name_match"))
        return out


def fuse(runs: Sequence[Sequence[QueriedNode]], weights: Sequence[float] | None = None,
         limit: int | None = None, by_file: bool = False) -> Candidates:
    """Weighted RRF of candidate runs: node by node, or (`by_file`) files first, then the
    nodes of each file by their best rank in the runs."""
    if by_file:
        return nodes_by_file_rank(rrf_fuse_files(runs, weights), runs, limit=limit)
    return rrf_fuse(runs, weights, limit=limit)
