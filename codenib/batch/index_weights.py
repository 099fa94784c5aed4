"""Localisation weights an index carries: fitted on its own history at index time
(`codenib index --history --fit-weights`), stored as `history/localise_weights.json` and
listed in the manifest (`history_fit`), and read back for the index's sessions. The file
and its checksum are the edge; the fit itself is `codenib.model.history_fit`.

Precedence at query time: weights given to the job (`--localise-weights`), else the index's
fitted weights, else the packaged ones.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Callable

from codenib.core import artifact
from codenib.core.errors import IndexFormatError
from codenib.model.localise import FEATURES, LocaliseWeights

FITTED_PATH = f"{artifact.HISTORY_DIR}/localise_weights.json"
#: The manifest key of the fitted weights.
MANIFEST_KEY = "history_fit"


def fit_into(folder: Path, log: Callable[[str], None]) -> dict:
    """Fit the weights of the (complete, staged) index in `folder` on its history, write
    `FITTED_PATH`, and return the manifest entry. The prior is the packaged weights with the
    plan's own history weights."""
    from codenib.batch.weights import default_weights
    from codenib.index.loaded import load_index
    from codenib.model import history_evidence, history_fit

    t0 = time.perf_counter()
    index = load_index(folder, dense=False, verify=False)
    history = index.history
    prior = default_weights()
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


def index_weights(index) -> LocaliseWeights | None:
    """The fitted weights a loaded index carries (None: built without `--fit-weights`, or the
    fit kept the prior). The file was checked against the manifest when the index was loaded
    with verification; its content is checked here.

    Raises:
        IndexFormatError: a listed weights file that is missing or malformed.
    """
    entry = index.manifest.get(MANIFEST_KEY)
    if not isinstance(entry, dict) or not entry.get("fitted"):
        return None
    path = Path(index.path) / FITTED_PATH
    fix = "rebuild the index with `codenib index REPO --history --fit-weights`"
    if FITTED_PATH not in (index.manifest.get("artifacts") or {}):
        raise IndexFormatError("the manifest names fitted weights but does not list their file", path=str(path),
                               fix=fix)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"unreadable fitted weights: {exc}", path=str(path), fix=fix) from exc
    values, hist = data.get("weights"), data.get("history") or {}
    if not isinstance(values, dict) or set(values) - set(FEATURES) or not isinstance(hist, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in [*values.values(), *hist.values()]):
        raise IndexFormatError("the fitted weights are not {feature: number} objects", path=str(path), fix=fix)
    return LocaliseWeights({k: float(v) for k, v in values.items()},
                           source=f"index:{FITTED_PATH} v{data.get('version')} ({data.get('examples')} commits to "
                                  f"{str(data.get('head'))[:12]})",
                           history=tuple(sorted((k, float(v)) for k, v in hist.items())))


__all__ = ["FITTED_PATH", "MANIFEST_KEY", "fit_into", "index_weights"]
