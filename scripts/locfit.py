"""Fitting and in-process scoring of the localisation weights, shared by the dev-set scripts
(`swebench_dev.py`, `localise_loo.py`): one feature table per issue (the plan's own
`localise.feature_table` over the issue's index), labels from the gold, a per-query balanced
logistic fit, and rankings by `localise.rank` (what the bug_localisation plan scores).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import numpy as np

from codenib.eval import metrics
from codenib.model import localise
from codenib.model.history.fit import logistic_with_offset

#: L2 strength of the logistic fit (inverse: larger C, weaker regularisation); chosen by
#: cross-validation over 0.01-100 on the SWE-bench dev set (C = 1 and 10 tied within one query).
FIT_C = 10.0
#: Dense features are left out of the fit (see swebench_dev.py: with MiniLM they lowered every
#: cross-validated number, and the bug_localisation plan does not fetch the dense run).
DENSE_FEATURES = ("f_dense", "n_dense")
#: qid -> (feature table, node ids of its index).
Tables = dict[str, tuple]


def feature_tables(queries: Iterable[dict], idx_root: Path, dense: bool) -> Tables:
    """Each query's feature table over its own index (`idx_root/<query's index>`)."""
    from codenib.index.loaded import load_index

    tables = {}
    for q in queries:
        index = load_index(idx_root / q["index"], dense=dense)
        dense_search = partial(_dense_search, index) if index.dense is not None else None
        table = localise.feature_table(q["query"], index, index.sparse.search, dense_search)
        tables[q["qid"]] = (table, index.nodes.node_id)
    return tables


def _dense_search(index, texts, k):
    return index.dense.search(index.encode_queries(list(texts)), k)


def labels(qid: str, table, node_ids, gold_files, gold_funcs,
           key: Callable[[str], str] = metrics.plain_node_id) -> np.ndarray:
    """1 for each candidate that is gold: a file node by path, a definition by `key` of its id
    (the set's own function match: exact for SWE-bench, file and last name for Multi-SWE)."""
    out = []
    for r in table.rows.tolist():
        nid = node_ids[r]
        if metrics.ID_SEP in nid:
            out.append(1 if key(nid) in gold_funcs.get(qid, ()) else 0)
        else:
            out.append(1 if nid in gold_files.get(qid, ()) else 0)
    return np.array(out)


def fit(qids: Iterable[str], tables: Tables, gold_files, gold_funcs, drop: tuple[str, ...] = DENSE_FEATURES,
        key_of: Callable[[str], Callable[[str], str]] | None = None, c: float = FIT_C,
        also_staged: tuple[str, ...] = ()) -> localise.LocaliseWeights:
    """Pointwise logistic regression over candidate features, each query's positives and
    negatives weighing the same (so long candidate lists do not dominate), in two stages: every
    feature but the file-node ones (`localise.FILE_NODE_FEATURES`), then those with the first
    stage's scores held as an offset (`history.fit.logistic_with_offset`), so the definitions'
    weights are the first stage's. `key_of(qid)`: that query's function key (default: exact node ids);
    `also_staged`: more columns fitted in the second stage (a variant's file-node evidence)."""
    from sklearn.linear_model import LogisticRegression

    staged = set(localise.FILE_NODE_FEATURES + also_staged) - set(drop)
    keep = np.array([f not in drop and f not in staged for f in localise.FEATURES])
    data = training_rows(qids, tables, gold_files, gold_funcs, key_of)
    X = np.vstack([x for x, _, _ in data])
    y = np.concatenate([y for _, y, _ in data])
    sw = np.concatenate([w for _, _, w in data])
    model = LogisticRegression(C=c, max_iter=5000).fit(X[:, keep], y, sample_weight=sw)
    coef = np.zeros(len(localise.FEATURES))
    coef[keep] = model.coef_[0]
    if staged:
        cols = np.array([f in staged for f in localise.FEATURES])
        coef[cols] = logistic_with_offset(X[:, cols], X @ coef, y, sw, c)[0]
    return localise.LocaliseWeights({f: round(float(v), 4) for f, v in zip(localise.FEATURES, coef)})


def training_rows(qids, tables: Tables, gold_files, gold_funcs, key_of) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(features, labels, sample weights) of each query with both positives and negatives."""
    out = []
    for q in qids:
        table, ids = tables[q]
        key = key_of(q) if key_of else metrics.plain_node_id
        y = labels(q, table, ids, gold_files, gold_funcs, key)
        if not y.sum() or y.sum() == len(y):
            continue
        out.append((table.X, y, np.where(y == 1, 1.0 / y.sum(), 1.0 / (len(y) - y.sum()))))
    return out


def rank(tables: Tables, qids: Iterable[str], weights: localise.LocaliseWeights, k: int = 100) -> dict[str, list[str]]:
    """Each query's top-k node ids under `weights` (the plan's scoring, in process)."""
    out = {}
    for q in qids:
        table, ids = tables[q]
        out[q] = [ids[s.row] for s in localise.rank(table, weights, ids, k)]
    return out


def loo_rankings(tables: Tables, group_of: dict[str, str], gold_files, gold_funcs,
                 drop: tuple[str, ...] = DENSE_FEATURES, key_of=None, c: float = FIT_C,
                 ) -> tuple[dict[str, list[str]], dict[str, localise.LocaliseWeights]]:
    """Leave-one-group-out: each group's queries ranked by weights fitted on the other groups'
    queries; the rankings and the weights of each fold."""
    out, folds = {}, {}
    for g in sorted(set(group_of.values())):
        folds[g] = fit([q for q in tables if group_of[q] != g], tables, gold_files, gold_funcs, drop, key_of, c)
        out.update(rank(tables, [q for q in tables if group_of[q] == g], folds[g]))
    return out, folds


def write_weights(path: Path, weights: localise.LocaliseWeights, fitted_on: str, c: float = FIT_C) -> None:
    """The packaged weights file's layout (written whole, then moved into place)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"fitted_on": fitted_on,
                               "fitted": datetime.date.today().isoformat(),
                               "method": f"logistic regression, per-query balanced, L2 C={c}; "
                                         "file-node weights fitted second, the others held",
                               "weights": weights.to_dict()}, indent=2) + "\n")
    tmp.replace(path)
