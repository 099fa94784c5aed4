"""Moved: an index's fitted localisation weights are read by
`codenib.model.weights.load_index_weights` and fitted and saved by
`codenib.model.weights_fit.save_fitted_weights` (`codenib index --history --fit-weights`).

This module keeps the old import path and names working; new code imports from those modules.
"""

from __future__ import annotations

from codenib.model.weights import FITTED_PATH, MANIFEST_KEY
from codenib.model.weights import load_index_weights as index_weights
from codenib.model.weights_fit import save_fitted_weights as fit_into

__all__ = ["FITTED_PATH", "MANIFEST_KEY", "fit_into", "index_weights"]
