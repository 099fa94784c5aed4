"""scripts/locfit.py: labels by each set's function key, and leave-one-group-out fitting."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

from codenib.model import localise

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str):
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module(name)


IDS = ["src/a.rs", "src/a.rs::Opts.parse", "src/a.rs::run", "src/b.rs", "src/b.rs::parse"]


def _table(signal: int) -> localise.FeatureTable:
    """Five candidates; one feature column (`f_title`) high only on row `signal` and its file."""
    X = np.zeros((len(IDS), len(localise.FEATURES)))
    col = localise.FEATURES.index("f_title")
    X[signal, col] = 1.0
    X[0 if signal < 3 else 3, col] = 1.0
    return localise.FeatureTable(rows=np.arange(len(IDS)), X=X)


def test_labels_follow_the_sets_function_key():
    locfit, devsets = _load("locfit"), _load("devsets")
    table = _table(1)
    gold_files, gold_funcs = {"q": {"src/a.rs"}}, {"q": {"src/a.rs::parse"}}
    exact = locfit.labels("q", table, IDS, gold_files, gold_funcs)
    by_name = locfit.labels("q", table, IDS, gold_files, gold_funcs, devsets.file_and_name)
    # Exact ids: `Opts.parse` is not `parse`; by file and last name it is (and b.rs::parse is not).
    assert exact.tolist() == [1, 0, 0, 0, 0]
    assert by_name.tolist() == [1, 1, 0, 0, 0]


def test_leave_one_group_out_fits_without_the_held_out_group():
    locfit, devsets = _load("locfit"), _load("devsets")
    tables = {f"q{i}": (_table(1 if i % 2 else 4), IDS) for i in range(6)}
    gold_files = {q: {"src/a.rs" if int(q[1]) % 2 else "src/b.rs"} for q in tables}
    gold_funcs = {q: {"src/a.rs::parse" if int(q[1]) % 2 else "src/b.rs::parse"} for q in tables}
    group_of = {q: "g1" if q in ("q0", "q1") else ("g2" if q in ("q2", "q3") else "g3") for q in tables}
    ranks, folds = locfit.loo_rankings(tables, group_of, gold_files, gold_funcs,
                                       key_of=lambda q: devsets.file_and_name)
    assert set(folds) == {"g1", "g2", "g3"} and set(ranks) == set(tables)
    # The title feature marks every gold node in every group: each fold learns it and ranks gold first.
    assert all(w.to_dict()["f_title"] > 0 for w in folds.values())
    assert ranks["q1"][0] in ("src/a.rs", "src/a.rs::Opts.parse") and ranks["q0"][0] in ("src/b.rs", "src/b.rs::parse")


def test_file_node_weights_are_fitted_second_with_the_other_weights_held():
    locfit = _load("locfit")
    col = {f: i for i, f in enumerate(localise.FEATURES)}
    # Per query: the gold file's node and a definition of another file both have f_title 1, the
    # definition is not gold; the gold definition is told by n_title. File evidence then means
    # more on a file node than on a definition: the file-node weight is where that shows.
    tables, gold_files, gold_funcs = {}, {}, {}
    for i in range(8):
        X = np.zeros((len(IDS), len(localise.FEATURES)))
        gold_file, other_def = (0, 4) if i % 2 else (3, 1)
        gold_def = 2 if gold_file == 0 else 4
        X[gold_file, [col["f_title"], col["fnode_title"], col["n_is_file"]]] = 1.0
        X[3 - gold_file, col["n_is_file"]] = 1.0
        X[other_def, col["f_title"]] = 1.0
        X[gold_def, col["n_title"]] = 1.0
        tables[f"q{i}"] = (localise.FeatureTable(rows=np.arange(len(IDS)), X=X), IDS)
        gold_files[f"q{i}"], gold_funcs[f"q{i}"] = {IDS[gold_file]}, {IDS[gold_def]}
    w = locfit.fit(list(tables), tables, gold_files, gold_funcs).to_dict()
    first = locfit.fit(list(tables), tables, gold_files, gold_funcs,
                       drop=locfit.DENSE_FEATURES + localise.FILE_NODE_FEATURES).to_dict()
    # The first stage is the fit without the file-node columns, weight for weight; the second
    # gives the title evidence more weight on file nodes than the shared weight gives it.
    shared = [f for f in localise.FEATURES if f not in localise.FILE_NODE_FEATURES]
    assert [w[f] for f in shared] == [first[f] for f in shared]
    assert all(first[f] == 0.0 for f in localise.FILE_NODE_FEATURES)
    assert w["fnode_title"] > 0.5
    assert all(w[f] == 0.0 for f in localise.FILE_NODE_FEATURES if f != "fnode_title")
