"""Moved: the retrieval session is `codenib.model.session` (answering a query needs no Ray).

This module keeps the old import path working; new code imports from `codenib.model.session`
and `codenib.model.weights`.
"""

from __future__ import annotations

from codenib.model.session import RetrievalSession, llm_reranker
from codenib.model.weights import load_localise_weights as localise_weights

__all__ = ["RetrievalSession", "llm_reranker", "localise_weights"]
