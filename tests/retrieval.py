"""Plan and execute queries in-process on a loaded index, as `codenib query` does (tests)."""

from __future__ import annotations

import dataclasses

from codenib.model.session import RetrievalSession
from codenib.model.planner import RetrievalPlanner, plan_options
class Retrieval:
    """A session over `index` with one run's options (budget, mode, reranker)."""

    def __init__(self, index, retrieval_mode: str = "auto", budget: str = "balanced", rerank: str | None = None,
                 planner: RetrievalPlanner | None = None, llm=None, localise_weights=None):
        """`localise_weights`: a `LocaliseWeights` (None: the packaged ones)."""
        self.options = plan_options(budget, retrieval_mode, rerank)
        session = RetrievalSession.of(index, reranker=llm)
        self.session = dataclasses.replace(session, planner=planner or session.planner,
                                           weights=localise_weights or session.weights)
        self.session.check()

    def plan(self, texts):
        return self.session.plan(texts, self.options)

    def run(self, texts, k=None):
        return self.session.run(texts, self.options, k)

    def search(self, text, k=None):
        return self.run([text], k)[0]
