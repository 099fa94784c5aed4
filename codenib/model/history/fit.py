"""Localisation weights adapted to one repository on its own past (`codenib index --history
--fit-weights`).

Every commit is a labelled example: its message is the query, the files and definitions it
changed are the answer. For a bounded sample of recent commits that touched library code
(`SAMPLE`), the message is scored exactly as the `bug_localisation` plan scores a report
(the same BM25 runs, mentions, graph and feature table of `codenib.model.localise`, plus
the history signal the plan adds, `similar_changes`), and the weights are fitted by a
logistic regression whose L2 penalty pulls them towards a prior (the packaged weights):
with few or uninformative commits the result stays at the prior.

Leakage rules:
- a training commit's `similar_changes` evidence comes only from its proper ancestors (never
  from itself nor any later commit), searched among all commit messages with the others
  hidden (`History.similar_changes(exclude=...)`);
- only commits of the index's history are read, and that history holds only ancestors of
  the indexed revision (`codenib.compiler.history`).
The code a message is scored against is the indexed snapshot's (the commit's own fix
included): fitting on each commit's own tree would mean an index per commit.

Pure: the caller hands a loaded index and its `History`; nothing here reads or writes files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from codenib.core.querytext import clean_query_text
from codenib.model.history import evidence as history_evidence
from codenib.model.library_paths import is_nonlib_path
from codenib.model.localise import FEATURES, FeatureTable, LocaliseWeights, features
from codenib.model.localise_inputs import file_rows_of, inputs_for, search_runs, sparse_texts
from codenib.model.reports.report import read_report
from codenib.ops.filter import is_test_path

#: Bumped when what is fitted from the same history changes (sample, features, objective).
FIT_VERSION = 1
#: Commits trained on: the most recent that touched library code. Each costs three BM25
#: searches and a feature table (about 0.1 s on a 40k-node index), so 300 keep the fit under
#: a minute; 300 labelled queries already pin ~20 weights held near the prior, and recent
#: commits describe the code as it is now.
SAMPLE = 300
#: Commits that changed more files than this are refactors, releases or reformatting, not the
#: focused change a bug report leads to.
MAX_FILES = 10
#: With fewer usable commits, no fit: the prior is kept.
MIN_EXAMPLES = 30
#: Prior strength: the penalty is ||w - prior||^2 / (2 C), against a loss in which every
#: commit weighs 2 (its positives 1, its negatives 1). Small C: stay near the prior.
PRIOR_C = 1.0
#: The history signal fitted beside the localisation features (the plan's only non-zero one).
HISTORY_SIGNAL = "similar_changes"
COLUMNS = FEATURES + (f"history:{HISTORY_SIGNAL}",)


@dataclass(frozen=True)
class Example:
    """One training commit: its candidates' features (`COLUMNS`) and labels (1: changed)."""

    commit: str
    rows: np.ndarray      # candidate node rows
    X: np.ndarray
    y: np.ndarray
    is_file: np.ndarray   # the candidate is a file node (file-level scoring)


@dataclass(frozen=True)
class FitResult:
    """The fitted weights, the history weights beside them, and what the fit saw."""

    weights: LocaliseWeights
    history: tuple[tuple[str, float], ...]
    examples: int
    commits_considered: int
    fitted: bool                     # False: too few examples, the prior is returned
    train_file_at5: tuple[float, float] = (0.0, 0.0)   # in-sample file hit@5: prior, fitted
    train_node_at10: tuple[float, float] = (0.0, 0.0)  # in-sample definition hit@10: prior, fitted
    notes: dict = field(default_factory=dict)


def training_commits(history, node_ids: set[str], limit: int = SAMPLE) -> list[int]:
    """Rows of the newest `limit` commits that changed between 1 and `MAX_FILES` files (merges
    change none), at least one of them library code (neither test code nor documentation,
    examples or scripts) that is still a node of the index, with a message."""
    out = []
    for i in range(len(history)):     # newest first
        if len(out) >= limit:
            break
        files = history.files_of[i]
        if not 1 <= len(files) <= MAX_FILES or not history.messages[i].strip():
            continue
        if any(ok and f in node_ids and not is_test_path(f) and not is_nonlib_path(f) for f, ok in files):
            out.append(i)
    return out


def answer_of(history, i: int) -> set[str]:
    """The node ids (files and definitions) commit row `i` changed that exist in the index,
    test code left out (as a bug's gold patch leaves its tests out)."""
    return {n for n, ok in history.files_of[i] + history.nodes_of[i]
            if ok and not is_test_path(n.split("::", 1)[0])}


def example(index, history, i: int, file_rows: dict[str, int] | None = None) -> Example | None:
    """The training example of commit row `i`, scored on `index` as the plan scores a report
    (None: no candidate, or none changed)."""
    nodes = index.nodes
    file_rows = file_rows if file_rows is not None else file_rows_of(nodes)
    text = clean_query_text(history.messages[i]).text
    report = read_report(text)
    runs = search_runs(text, report, index.sparse.search, file_sparse=index.file_sparse)
    table: FeatureTable = features(inputs_for(report, runs, index), nodes, index.graph, file_rows)
    cid = history.ids[i]
    # Leakage: only the commit's proper ancestors may be evidence.
    exclude = frozenset(range(len(history))) - history.ancestors(cid)
    evidence = {HISTORY_SIGNAL: history.similar_changes(sparse_texts(text, report)["bm25"], exclude=exclude)}
    extra = history_evidence.prior(evidence, ((HISTORY_SIGNAL, 1.0),), nodes, index.row_of, file_rows,
                                   table.rows.tolist())
    rows = sorted(extra)
    if not rows:
        return None
    at = {int(r): j for j, r in enumerate(table.rows.tolist())}
    X = np.zeros((len(rows), len(COLUMNS)), dtype=np.float64)
    for j, r in enumerate(rows):
        if r in at:
            X[j, :len(FEATURES)] = table.X[at[r]]
        X[j, -1] = extra[r].get(HISTORY_SIGNAL, 0.0)
    answer = answer_of(history, i)
    y = np.array([1.0 if nodes.node_id[r] in answer else 0.0 for r in rows])
    if not y.any() or y.all():
        return None
    is_file = np.array([nodes.kind[r] == "file" for r in rows])
    return Example(cid, np.array(rows, dtype=np.int64), X, y, is_file)


def fit(examples: Sequence[Example], prior: LocaliseWeights, prior_history: float, c: float = PRIOR_C,
        commits_considered: int | None = None) -> FitResult:
    """Weights adapted from `prior` (and `prior_history`, the weight of the history signal):
    logistic regression with an unpenalised intercept and the penalty ||w - prior||^2 / (2c),
    each commit's positives and negatives weighing 1 each. Deterministic (L-BFGS from the
    prior, examples in the order given)."""
    w0 = np.concatenate([prior.vector(), [prior_history]])
    n = len(examples)
    considered = n if commits_considered is None else commits_considered
    if n < MIN_EXAMPLES:
        return FitResult(prior, ((HISTORY_SIGNAL, prior_history),), n, considered, False,
                         notes={"reason": f"{n} usable commits, fewer than {MIN_EXAMPLES}"})
    X = np.vstack([e.X for e in examples])
    y = np.concatenate([e.y for e in examples])
    sw = np.concatenate([np.where(e.y == 1, 1.0 / e.y.sum(), 1.0 / (len(e.y) - e.y.sum())) for e in examples])

    d, res = logistic_with_offset(X, X @ w0, y, sw, c)
    w = w0 + d
    values = {f: round(float(v), 4) for f, v in zip(FEATURES, w[:len(FEATURES)])}
    history_w = round(float(w[-1]), 4)
    return FitResult(LocaliseWeights(values, source=prior.source), ((HISTORY_SIGNAL, history_w),), n, considered,
                     True, (_hits(examples, w0, 5, True), _hits(examples, w, 5, True)),
                     (_hits(examples, w0, 10, False), _hits(examples, w, 10, False)),
                     notes={"converged": bool(res.success), "iterations": int(res.nit)})


def fit_history(index, history, prior: LocaliseWeights, prior_history: float, limit: int = SAMPLE,
                c: float = PRIOR_C) -> FitResult:
    """Sample the training commits of `history`, score them on `index` and fit (`fit`)."""
    ids = set(index.nodes.node_id)
    rows = training_commits(history, ids, limit)
    file_rows = file_rows_of(index.nodes)
    examples = [e for e in (example(index, history, i, file_rows) for i in rows) if e is not None]
    return fit(examples, prior, prior_history, c, commits_considered=len(rows))


def logistic_with_offset(X: np.ndarray, offset: np.ndarray, y: np.ndarray, sw: np.ndarray, c: float):
    """The weights `d` of a weighted logistic model `offset + b + X @ d`: an unpenalised
    intercept `b`, the penalty ||d||^2 / (2c). Deterministic (L-BFGS from 0).

    Returns:
        (d, scipy's OptimizeResult).
    """
    from scipy.optimize import minimize

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = theta[1:]
        z = offset + theta[0] + X @ d
        p = 0.5 * (1.0 + np.tanh(0.5 * z))     # the logistic function, without overflow
        loss = float(np.sum(sw * (np.logaddexp(0.0, z) - y * z)) + d @ d / (2.0 * c))
        g = sw * (p - y)
        return loss, np.concatenate([[g.sum()], X.T @ g + d / c])

    res = minimize(objective, np.zeros(X.shape[1] + 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 500, "gtol": 1e-8})
    return res.x[1:], res


def _hits(examples: Sequence[Example], w: np.ndarray, k: int, files: bool) -> float:
    """Share of examples with a changed file (definition) among the top `k` files
    (definitions) by score."""
    hit = 0
    for e in examples:
        keep = e.is_file if files else ~e.is_file
        if not e.y[keep].any():
            continue
        s = e.X[keep] @ w
        top = np.argsort(-s, kind="stable")[:k]
        hit += bool(e.y[keep][top].any())
    usable = sum(1 for e in examples if e.y[(e.is_file if files else ~e.is_file)].any())
    return round(hit / usable, 4) if usable else 0.0


__all__ = ["COLUMNS", "Example", "FIT_VERSION", "FitResult", "HISTORY_SIGNAL", "MAX_FILES", "MIN_EXAMPLES",
           "PRIOR_C", "SAMPLE", "answer_of", "example", "fit", "fit_history", "training_commits"]
