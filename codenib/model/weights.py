"""Bug-report localisation weights as files hold them: a `--localise-weights` JSON file, the
weights an index fitted on its own history (`codenib index --history --fit-weights`, stored as
`history/localise_weights.json` and listed in its manifest under `history_fit`), and the
packaged fitted weights (`codenib/data/localise_weights.json`).

The model layer's only file reading: every function here that touches a file is a `load_*`
one; the scorer (`codenib.model.localise`) takes the `LocaliseWeights` they return. The fit
that writes an index's weights is `codenib.model.weights_fit`.

Precedence at query time (`load_localise_weights`): weights given to the job
(`--localise-weights`), else the index's fitted weights, else the packaged ones.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from codenib.core import artifact
from codenib.core.errors import BadInputError, IndexFormatError
from codenib.model.localise import FEATURES, LocaliseWeights

#: Where an index keeps the weights fitted on its history (relative to the index folder).
FITTED_PATH = f"{artifact.HISTORY_DIR}/localise_weights.json"
#: The manifest key of the fitted weights.
MANIFEST_KEY = "history_fit"
#: The packaged weights, inside the `codenib` package.
_PACKAGED = "data/localise_weights.json"


def load_weights(path: str) -> LocaliseWeights:
    """Weights from a JSON file (`{"weights": {feature: value}}`, as `scripts/swebench_dev.py
    --fit` writes). Raises BadInputError naming the file, the field and the fix."""

    fix = 'write {"weights": {"f_bm25": 1.0, ...}} with feature names from codenib.model.localise.FEATURES'
    try:
        data = json.loads(open(path, encoding="utf-8").read())
    except OSError as exc:
        raise BadInputError(f"cannot read the localisation weights: {exc.strerror}", path=path,
                            fix="pass an existing JSON file to --localise-weights") from exc
    except ValueError as exc:
        raise BadInputError(f"the localisation weights are not JSON: {exc}", path=path, fix=fix) from exc
    values = data.get("weights") if isinstance(data, dict) else None
    if not isinstance(values, dict):
        raise BadInputError("no `weights` object in the localisation weights", path=path, fix=fix)
    unknown = sorted(set(values) - set(FEATURES))
    if unknown:
        raise BadInputError(f"unknown feature(s) {', '.join(unknown)} in `weights`", path=path,
                            fix=f"use only: {', '.join(FEATURES)}")
    bad = sorted(k for k, v in values.items() if not isinstance(v, (int, float)) or isinstance(v, bool)
                 or not math.isfinite(v))
    if bad:
        raise BadInputError(f"`weights.{bad[0]}` is not a finite number", path=path, fix=fix)
    return LocaliseWeights({k: float(v) for k, v in values.items()}, source=f"file:{path}")


def _packaged() -> dict[str, Any] | None:
    try:
        return json.loads(resources.files("codenib").joinpath(_PACKAGED).read_text(encoding="utf-8"))
    except (FileNotFoundError, ModuleNotFoundError):
        return None


def load_packaged_provenance() -> str:
    """What the packaged weights were fitted on, as their file says (`fitted_on`)."""
    data = _packaged()
    if data is None:
        return "hand-set (no packaged weights file)"
    return str(data.get("fitted_on", "not recorded"))


@lru_cache(maxsize=1)
def load_packaged_weights() -> LocaliseWeights:
    """The packaged fitted weights (hand-set ones when the file is absent); read once."""
    data = _packaged()
    return LocaliseWeights() if data is None else LocaliseWeights(data["weights"])


def load_index_weights(index) -> LocaliseWeights | None:
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


def load_localise_weights(values: tuple[tuple[str, float], ...] | None = None, index=None) -> LocaliseWeights:
    """The weights a query against `index` is ranked with, as `codenib query` and `codenib run`
    choose them: checked weight values (`RunOptions.weights`, `--localise-weights`) when given,
    else the weights `index` fitted on its own history, else the packaged ones.

    Raises:
        IndexFormatError: the index lists fitted weights that are missing or malformed.
    """
    if values is not None:
        return LocaliseWeights(dict(values), source="given")
    fitted = load_index_weights(index) if index is not None else None
    return fitted if fitted is not None else load_packaged_weights()


__all__ = ["FITTED_PATH", "MANIFEST_KEY", "load_index_weights", "load_localise_weights", "load_packaged_provenance",
           "load_packaged_weights", "load_weights"]
