"""One retrieval session: what answering queries against one index needs, assembled once.

An index (or the parts of it a Ray actor holds), its capabilities and symbol table, the
engines that search it, the reranker and the localisation weights, with the planner and
the executor over them. The Ray actors, the in-process runner of `codenib run`,
`codenib query` and the Ray Data adapter all build their sessions here
(`RetrievalSession.load`), and the LLM reranker is made in `llm_reranker` alone.

Model level: answering one query needs no Ray (`codenib query` imports nothing of
`codenib.batch`). Files are read only by `RetrievalSession.load` (the index,
`codenib.index.loaded.load_index`) and the weights' loaders (`codenib.model.weights`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

from codenib.core.querytext import clean_query_text
from codenib.index.loaded import LoadedIndex, load_index
from codenib.model.executor import Engines, LocalEngines, PlanExecutor, QueryResult
from codenib.model.localise import LocaliseWeights
from codenib.model.planner import RetrievalPlanner, check_capabilities
from codenib.model.planspec import PlanOptions, QueryPlan
from codenib.model.weights import load_localise_weights


def llm_reranker(config: dict | None):
    """The LLM reranker of an [llm] settings mapping (None: none configured). The one place
    an `LLMReranker` is made; it connects on its first rerank.

    Raises:
        BadInputError: settings that are not a valid LLM configuration.
    """
    if not config:
        return None
    from codenib.engines.llm.client import LLMConfig
    from codenib.engines.llm.connect import connect
    from codenib.ops.llm import LLMReranker

    return LLMReranker(LLMConfig.from_dict(dict(config)), connect)


@dataclass(frozen=True)
class RetrievalSession:
    """One index's retrieval resources and the planner and executor over them.

    `llm_configured` says whether the job has an LLM reranker even when this process holds
    none (a graph actor: the rerank actor holds it); it decides the capabilities plans see.
    """

    index: LoadedIndex
    engines: Engines
    weights: LocaliseWeights
    llm: Any = None
    llm_configured: bool = False
    history: Any = None   # the index's `History` (built with --history), evidence for bug reports
    planner: RetrievalPlanner = dataclasses.field(default_factory=RetrievalPlanner)

    @classmethod
    def load(cls, path: str, *, verify: bool = True, device: str = "auto", llm: dict | None = None,
             llm_configured: bool | None = None, weights: tuple[tuple[str, float], ...] | None = None,
             sparse: bool = True, dense: bool = True, graph: bool = True, engines: Engines | None = None,
             reranker: Any = None) -> RetrievalSession:
        """The session of an index folder: loaded (its checksums verified unless the caller
        verified them already), with in-process engines unless `engines` is given.

        Raises:
            BadInputError, IndexFormatError: an unusable index or reranker configuration.
        """
        index = load_index(path, verify=verify, device=device, sparse=sparse, dense=dense, graph=graph)
        return cls.of(index, llm=llm, llm_configured=llm_configured, weights=weights, engines=engines,
                      reranker=reranker)

    @classmethod
    def of(cls, index: LoadedIndex, *, llm: dict | None = None, llm_configured: bool | None = None,
           weights: tuple[tuple[str, float], ...] | None = None, engines: Engines | None = None,
           reranker: Any = None) -> RetrievalSession:
        """The session of a loaded index (`reranker`: an LLM reranker already made; `weights`:
        checked weight values, None: the index's fitted weights, else the packaged ones)."""
        reranker = reranker if reranker is not None else llm_reranker(llm)
        history = index.history if index.capabilities().history else None
        return cls(index, engines or LocalEngines(index, reranker), load_localise_weights(weights, index), reranker,
                   bool(llm) or reranker is not None if llm_configured is None else llm_configured, history)

    def with_engines(self, engines: Engines) -> RetrievalSession:
        """This session with its engine calls routed elsewhere (a graph actor's: to the
        sparse, dense and rerank actors)."""
        return dataclasses.replace(self, engines=engines)

    @property
    def capabilities(self):
        return self.index.capabilities(llm_configured=self.llm_configured)

    @property
    def symbols(self):
        return self.index.symbols

    def executor(self) -> PlanExecutor:
        """The executor over this session's resources (made once: its look-ups are cached)."""
        return self._executor

    @cached_property
    def _executor(self) -> PlanExecutor:
        return PlanExecutor(self.index, self.engines, self.weights, self.history)

    def check(self) -> None:
        """Raises BadInputError when no plan can run on this index (no sparse, no dense)."""
        check_capabilities(self.capabilities)

    def plan(self, texts: Sequence[str], options: PlanOptions) -> list[QueryPlan]:
        """Plan query texts (cleaned first) with one mode, grounded in the symbol table."""
        caps = self.capabilities
        return [self.planner.plan_query(clean_query_text(t).text, options, caps, self.symbols) for t in texts]

    def run(self, texts: Sequence[str], options: PlanOptions, k: int | None = None) -> list[QueryResult]:
        """Plan and execute query texts in this process."""
        return self.executor().execute(texts, self.plan(texts, options), k)

    def search(self, text: str, options: PlanOptions, k: int | None = None) -> QueryResult:
        return self.run([text], options, k)[0]
