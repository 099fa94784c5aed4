"""Bug-report localisation weights read from files, at the edge (the model layer reads no
file): a `--localise-weights` JSON file, or the packaged fitted weights."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

from codenib.core.errors import BadInputError
from codenib.model.localise import FEATURES, LocaliseWeights


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


def packaged_provenance() -> str:
    """What the packaged weights were fitted on, as their file says (`fitted_on`)."""
    try:
        text = resources.files("codenib").joinpath("data/localise_weights.json").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return "hand-set (no packaged weights file)"
    return str(json.loads(text).get("fitted_on", "not recorded"))


@lru_cache(maxsize=1)
def default_weights() -> LocaliseWeights:
    """The packaged fitted weights (hand-set ones when the file is absent); read once."""
    try:
        text = resources.files("codenib").joinpath("data/localise_weights.json").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return LocaliseWeights()
    return LocaliseWeights(json.loads(text)["weights"])
