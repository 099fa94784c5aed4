"""Moved: reading localisation weights is `codenib.model.weights` (its `load_*` functions).

This module keeps the old import path and names working; new code imports from
`codenib.model.weights`.
"""

from __future__ import annotations

from codenib.model.weights import load_packaged_provenance as packaged_provenance
from codenib.model.weights import load_packaged_weights as default_weights
from codenib.model.weights import load_weights

__all__ = ["default_weights", "load_weights", "packaged_provenance"]
