"""`codenib index --history --fit-weights`: the localisation weights of a staged index fitted
on its own history and saved beside it (`codenib.model.weights.FITTED_PATH`), with the
manifest entry that lists them. The fit itself is `codenib.model.history.fit`; reading the
weights back is `codenib.model.weights.load_index_weights`.

Called by the index command once the build is complete (the compiler imports no model code:
`codenib.compiler.build.build_index` takes this as its `finish` step).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from codenib.index.loaded import load_index
from codenib.model.history import evidence as history_evidence, fit as history_fit
from codenib.model.weights import FITTED_PATH, load_packaged_weights


def save_fitted_weights(folder: Path, log: Callable[[str], None]) -> dict:
    """Fit the weights of the (complete, staged) index in `folder` on its history, write
    `FITTED_PATH`, and return the manifest entry. The prior is the packaged weights with the
    plan's own history weights."""
    t0 = time.perf_counter()
    index = load_index(folder, dense=False, verify=False)
    history = index.history
    prior = load_packaged_weights()
    prior_history = dict(history_evidence.WEIGHTS).get(history_fit.HISTORY_SIGNAL, 0.0)
    result = history_fit.fit_history(index, history, prior, prior_history)
    seconds = round(time.perf_counter() - t0, 3)
    entry = {"path": FITTED_PATH, "version": history_fit.FIT_VERSION, "fitted": result.fitted,
             "prior": "packaged", "head": (index.manifest.get("history") or {}).get("head"),
             "examples": result.examples, "commits_considered": result.commits_considered,
             "sample": history_fit.SAMPLE, "prior_c": history_fit.PRIOR_C,
             "train_file_at5": list(result.train_file_at5), "train_node_at10": list(result.train_node_at10),
             "seconds": seconds}
    payload = {"version": history_fit.FIT_VERSION, "fitted": result.fitted, "weights": result.weights.to_dict(),
               "history": {name: w for name, w in result.history}, **{k: v for k, v in entry.items()
                                                                      if k not in ("path", "seconds")},
               "notes": result.notes}
    (folder / FITTED_PATH).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    log(f"history fit: {result.examples} of {result.commits_considered} commits, "
        + ("fitted" if result.fitted else "prior kept: " + str(result.notes.get("reason")))
        + f"; in-sample file hit@5 {result.train_file_at5[0]:.3f} -> {result.train_file_at5[1]:.3f}, "
          f"definition hit@10 {result.train_node_at10[0]:.3f} -> {result.train_node_at10[1]:.3f} ({seconds:.1f}s)")
    return entry


__all__ = ["save_fitted_weights"]
