"""The repository's history as evidence for a bug report: the history signals a plan may ask
for, and the additive prior that adds them to the localisation ranking.

A signal is a score per file and per node (`codenib.index.history.Evidence`) computed from
the index's `History` (a resource the session hands the executor; nothing here loads). Each
signal is scaled to [0, 1] by its best score and added to a candidate's localisation score
with ONE weight per signal, for its file and for itself:

    score(n) = localisation(n) + sum over signals s of w_s * (s.file(file of n) + s.node(n))

so a file's rank moves by its file evidence and a definition's by its own. Nodes a
query-dependent signal names that no localisation run reached join with localisation score
0 (the linear model's score of a node with no feature). The weights were chosen leave-one-
repository-out on the SWE-bench dev set (`scripts/swebench_dev.py --history`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from codenib.index.history import Evidence
from codenib.model.localise import FEATURES, LIBRARY_FIRST, FeatureTable, LocaliseWeights, Scored, library_first


@dataclass(frozen=True)
class HistorySignal:
    """One history signal: how it is computed from a `History` and the report's text, how its
    scores are scaled to [0, 1], and whether it depends on the query (else computed once)."""

    name: str
    compute: Callable[[object, str], Evidence]
    scale: Callable[[float, float], float]
    per_query: bool


def _by_max(v: float, top: float) -> float:
    return v / top


def _log_by_max(v: float, top: float) -> float:
    # Change counts are heavy-tailed: a file changed 300 times is not 30 times the evidence
    # of one changed 10 times.
    return math.log1p(v) / math.log1p(top)


#: The history signals, by the name plans carry (and the trace shows).
SIGNALS: dict[str, HistorySignal] = {s.name: s for s in (
    HistorySignal("similar_changes", lambda h, text: h.similar_changes(text), _by_max, True),
    HistorySignal("change_proneness", lambda h, text: h.change_proneness(), _log_by_max, False),
    HistorySignal("fix_proneness", lambda h, text: h.change_proneness(fix_only=True), _log_by_max, False),
)}

#: The weight of each signal in the `bug_localisation` plan when the index has a history
#: (0 leaves a signal out). Leave-one-repository-out over the 11 dev repositories (160
#: reports; `scripts/dev_history_loo.py`), the joint choice with the co-change walk gave
#: similar changes 0 in 10 folds of 11, and the co-change walk alone
#: (`cochange.COCHANGE_WEIGHT`) did best at both measures (file Acc@5 0.705, function Acc@10
#: 0.593, against 0.696 / 0.556 with similar changes at 0.5, the weight chosen on the 39
#: SWE-bench reports alone). See docs/history.md.
WEIGHTS: tuple[tuple[str, float], ...] = (("similar_changes", 0.0), ("fix_proneness", 0.0))


class EvidenceCache:
    """Computes signals on a `History`; query-free signals once per history."""

    def __init__(self, history):
        self.history = history
        self._fixed: dict[str, Evidence] = {}

    def get(self, name: str, text: str) -> Evidence:
        signal = SIGNALS[name]
        if signal.per_query:
            return signal.compute(self.history, text)
        if name not in self._fixed:
            self._fixed[name] = signal.compute(self.history, text)
        return self._fixed[name]


def scaled(evidence: Evidence, signal: str) -> tuple[dict[str, float], dict[str, float]]:
    """A signal's file and node scores scaled to [0, 1] by their best score."""
    scale = SIGNALS[signal].scale
    out = []
    for scores in (evidence.files, evidence.nodes):
        top = max(scores.values(), default=0.0)
        out.append({k: scale(v, top) for k, v in scores.items()} if top > 0 else {})
    return out[0], out[1]


def prior(evidence: Mapping[str, Evidence], weights: Sequence[tuple[str, float]], nodes, row_of: Mapping[str, int],
          file_rows: Mapping[str, int], rows: Sequence[int]) -> dict[int, dict[str, float]]:
    """Each node's history contributions (row -> {signal: weight * (file + node score)}):
    for the candidate `rows`, and for the nodes and file nodes a query-dependent signal names."""
    parts = [(name, w, *scaled(evidence[name], name)) for name, w in weights if w and name in evidence]
    cand = set(int(r) for r in rows)
    for name, _, files, node_scores in parts:
        if SIGNALS[name].per_query:
            cand |= {file_rows[f] for f in files if f in file_rows}
            cand |= {row_of[n] for n in node_scores if n in row_of}
    out: dict[int, dict[str, float]] = {}
    for r in sorted(cand):
        contrib = {}
        for name, w, files, node_scores in parts:
            v = files.get(nodes.file[r], 0.0) + node_scores.get(nodes.node_id[r], 0.0)
            if v:
                contrib[name] = w * v
        out[r] = contrib
    return out


def rank_with_history(table: FeatureTable, weights: LocaliseWeights, evidence: Mapping[str, Evidence],
                      history_weights: Sequence[tuple[str, float]], nodes, row_of: Mapping[str, int],
                      file_rows: Mapping[str, int], limit: int = 100, explain: int = 0) -> list[Scored]:
    """`localise.rank` with the history prior added: nodes by localisation score plus their
    history contributions (desc), ties by node id; the first `explain` carry every feature's
    and signal's contribution (signals as `history:<name>`)."""
    base = table.scores(weights) if len(table.rows) else np.zeros(0)
    at = {int(r): i for i, r in enumerate(table.rows.tolist())}
    extra = prior(evidence, history_weights, nodes, row_of, file_rows, list(at))
    score = {r: (float(base[at[r]]) if r in at else 0.0) + sum(c.values()) for r, c in extra.items()}
    plain = dict(score)
    if LIBRARY_FIRST and score:
        rows = list(score)
        demoted = table.demoted() if len(table.rows) else np.zeros(0, dtype=bool)
        flags = np.array([bool(demoted[at[r]]) if r in at else False for r in rows])
        score = dict(zip(rows, library_first(np.array([score[r] for r in rows]), flags).tolist()))
    order = sorted(score, key=lambda r: (-score[r], nodes.node_id[r]))[:limit]
    w = weights.vector()
    out = []
    for j, r in enumerate(order):
        contrib: dict[str, float] = {}
        if j < explain:
            if r in at:
                x = table.X[at[r]]
                contrib = {f: round(float(w[c] * x[c]), 4) for c, f in enumerate(FEATURES) if w[c] * x[c] != 0}
            contrib.update({f"history:{k}": round(v, 4) for k, v in extra[r].items()})
            if score[r] != plain[r]:
                contrib["library_first"] = round(score[r] - plain[r], 4)
        out.append(Scored(r, score[r], contrib))
    return out


__all__ = ["EvidenceCache", "HistorySignal", "SIGNALS", "WEIGHTS", "prior", "rank_with_history", "scaled"]
