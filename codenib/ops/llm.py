"""LLM reranking over an OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp, Ollama).

Two modes:

- ``listwise``: windows of candidates slide from the bottom of the list to the top (the
  RankGPT scheme), and each window is answered with a permutation such as ``[3] > [1] > [2]``;
- ``pointwise``: one request per candidate, answered with a bare 0-10 relevance score.

A failed request never raises: its window (or candidate) keeps its input order and the error
is returned next to the result. The query and candidate code are untrusted: they are quoted in
delimited blocks, text inside them that looks like a delimiter or an answer is defused, and
answers are parsed strictly against the identifiers of the window.

The HTTP client, prompts and limits are built on the first `rerank` call, by the `connect`
the reranker was given (`codenib.engines.llm.connect`: it reads the API key from the
environment variable the config names); no repr, log line or error contains the key.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from codenib.core.errors import BadInputError, RerankError
from codenib.engines.llm.client import ChatClient, LLMConfig
from codenib.engines.llm.connect import connect as connect_endpoint
from codenib.engines.llm.prompts import (CHARS_PER_TOKEN, LISTWISE_SYSTEM, POINTWISE_SYSTEM, listwise_user,
                                     parse_listwise, parse_pointwise, pointwise_user, prompt_messages)
from codenib.ops.retrieve import Candidates, QueriedNode

_log = logging.getLogger(__name__)

#: Source of every candidate an `LLMReranker` returns.
SOURCE = "rerank:llm"
#: Pointwise score of a candidate whose answer is unusable: the middle of the 0-10 scale.
NEUTRAL_SCORE = 5.0


class LLMReranker:
    """Reranks candidate lists with an LLM; safe to share between threads.

    Nothing is connected or read from the environment until the first `rerank`. A reranker
    pickles as its config alone (for Ray actors); the copy builds its own client.
    """

    def __init__(self, config: LLMConfig, connect: Callable[[LLMConfig], tuple[ChatClient, str | None]] =
                 connect_endpoint):
        """`connect`: makes the client and returns it with its API key, on the first rerank."""
        if not isinstance(config, LLMConfig):
            raise BadInputError(f"LLMReranker needs an LLMConfig, got {type(config).__name__}",
                                fix="build one with LLMConfig(...) or LLMConfig.from_dict(...)")
        self.config = config
        self.connect = connect
        self._ctx: _Context | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return (f"LLMReranker(endpoint={c.endpoint!r}, model={c.model!r}, mode={c.mode!r}, "
                f"built={self._ctx is not None})")

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "connect": self.connect}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], state["connect"])

    def rerank(self, query: str, cands: Sequence[QueriedNode],
               texts: Sequence[str | None]) -> tuple[Candidates, list[str]]:
        """Reorder `cands` (texts[i] is the code of cands[i]); returns them and the errors.

        Scores become 1/rank. A window or candidate whose request fails keeps its input order,
        and one error string per failure is returned; only bad arguments raise.
        """
        cands = tuple(cands)
        _check_query_inputs(query, cands, texts)
        ctx = self._context()
        if self.config.mode == "listwise":
            return self._listwise(ctx, query, cands, texts)
        jobs = [(query, cands[i], texts[i]) for i in range(min(len(cands), self.config.top_n))]
        outcomes = _run_bounded(self.config.concurrency, jobs, lambda job: self._score(ctx, *job))
        return _pointwise_result(cands, outcomes)

    def rerank_many(self, queries: Sequence[str], cand_lists: Sequence[Sequence[QueriedNode]],
                    text_lists: Sequence[Sequence[str | None]]) -> list[tuple[Candidates, list[str]]]:
        """`rerank` for many queries, at most `concurrency` requests at a time; input order kept."""
        if not (len(queries) == len(cand_lists) == len(text_lists)):
            raise BadInputError(f"{len(queries)} queries, {len(cand_lists)} candidate lists and "
                                f"{len(text_lists)} text lists",
                                fix="give one candidate list and one text list per query")
        cand_lists = [tuple(c) for c in cand_lists]
        for q, c, t in zip(queries, cand_lists, text_lists):
            _check_query_inputs(q, c, t)
        if not queries:
            return []
        ctx = self._context()
        workers = self.config.concurrency
        if self.config.mode == "listwise":
            jobs = list(zip(queries, cand_lists, text_lists))
            return _run_bounded(workers, jobs, lambda job: self._listwise(ctx, *job))
        # One flat pool over every (query, candidate): nested pools could wait on each other.
        top = [min(len(c), self.config.top_n) for c in cand_lists]
        jobs = [(q, c[i], t[i]) for q, c, t, n in zip(queries, cand_lists, text_lists, top) for i in range(n)]
        outcomes = _run_bounded(workers, jobs, lambda job: self._score(ctx, *job))
        results, at = [], 0
        for c, n in zip(cand_lists, top):
            results.append(_pointwise_result(c, outcomes[at:at + n]))
            at += n
        return results

    # -- private -------------------------------------------------------------------------

    def _context(self) -> "_Context":
        with self._lock:
            if self._ctx is None:
                self._ctx = _Context.build(self.config, self.connect)
            return self._ctx

    def _listwise(self, ctx: "_Context", query: str, cands: Candidates,
                  texts: Sequence[str | None]) -> tuple[Candidates, list[str]]:
        order = list(range(len(cands)))
        errors: list[str] = []
        windows = listwise_windows(min(len(cands), self.config.top_n), self.config.window, self.config.stride)
        for k, (start, end) in enumerate(windows, start=1):
            idx = order[start:end]
            try:
                perm = self._rank_window(ctx, query, [cands[i] for i in idx], [texts[i] for i in idx])
            except RerankError as exc:
                errors.append(ctx.record(f"listwise window {k}/{len(windows)} (ranks {start + 1}-{end}): {exc}"))
                continue
            order[start:end] = [idx[p] for p in perm]
        return _rank_scored(cands, order), errors

    def _rank_window(self, ctx: "_Context", query: str, nodes: list[QueriedNode],
                     texts: list[str | None]) -> list[int]:
        messages = ctx.messages(LISTWISE_SYSTEM, listwise_user, query, nodes, texts)
        reply = ctx.client.chat(messages)
        return parse_listwise(reply.content, len(nodes), reply.finish_reason)

    def _score(self, ctx: "_Context", query: str, node: QueriedNode,
               text: str | None) -> tuple[float | None, str | None]:
        try:
            messages = ctx.messages(POINTWISE_SYSTEM, pointwise_user, query, [node], [text])
            reply = ctx.client.chat(messages)
            return parse_pointwise(reply.content, reply.finish_reason), None
        except RerankError as exc:
            return None, ctx.record(f"pointwise {node.node_id}: {exc}")


def listwise_windows(n: int, window: int, stride: int) -> list[tuple[int, int]]:
    """Half-open [start, end) windows over n items, bottom first, moving up by `stride`.

    The last window starts at 0, so the top items are ranked too. With stride < window (as
    `LLMConfig` requires) adjacent windows overlap, so a candidate can climb from the bottom
    window to the top one, and no window holds fewer than two items.
    """
    out: list[tuple[int, int]] = []
    end = n
    while end >= 2:
        start = max(0, end - window)
        out.append((start, end))
        if start == 0:
            break
        end -= stride
    return out


# --- private helpers --------------------------------------------------------------------

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass
class _Context:
    """What the first `rerank` builds: the client, the prompt limits and the secret to redact."""

    config: LLMConfig
    client: ChatClient
    budget_chars: int
    secret: str | None = field(default=None, repr=False)

    @classmethod
    def build(cls, config: LLMConfig, connect) -> "_Context":
        client, key = connect(config)
        return cls(config, client, config.max_prompt_tokens * CHARS_PER_TOKEN, key)

    def record(self, error: str) -> str:
        """An error string safe to keep: the key is redacted (a server may echo it back)."""
        if self.secret:
            error = error.replace(self.secret, "[redacted]")
        _log.debug("LLM rerank: %s", error)
        return error

    def messages(self, system: str, render: Callable[..., str], query: str, nodes: Sequence[QueriedNode],
                 texts: Sequence[str | None]) -> list[dict[str, str]]:
        """System and user messages for `nodes`, every text cut to fit the prompt budget."""
        return prompt_messages(system, render, query, nodes, texts, self.budget_chars)


def _pointwise_result(cands: Candidates, outcomes: Sequence[tuple[float | None, str | None]]
                      ) -> tuple[Candidates, list[str]]:
    # A failed candidate sits at the neutral score; ties keep the input order.
    keyed = [(-(s if s is not None else NEUTRAL_SCORE), i) for i, (s, _) in enumerate(outcomes)]
    order = [i for _, i in sorted(keyed)] + list(range(len(outcomes), len(cands)))
    return _rank_scored(cands, order), [e for _, e in outcomes if e is not None]


def _rank_scored(cands: Candidates, order: Sequence[int]) -> Candidates:
    return tuple(cands[i].with_score(1.0 / rank, SOURCE) for rank, i in enumerate(order, start=1))


def _run_bounded(workers: int, jobs: Sequence[_T], fn: Callable[[_T], _R]) -> list[_R]:
    """fn over jobs on at most `workers` threads, results in job order."""
    if len(jobs) <= 1 or workers == 1:
        return [fn(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix="codenib-llm") as pool:
        return list(pool.map(fn, jobs))


def _check_query_inputs(query: Any, cands: Candidates, texts: Any) -> None:
    if not isinstance(query, str):
        raise BadInputError(f"the query must be a string, got {type(query).__name__}", fix="pass the query text")
    if not isinstance(texts, Sequence) or isinstance(texts, str) or len(texts) != len(cands):
        got = len(texts) if isinstance(texts, Sequence) else type(texts).__name__
        raise BadInputError(f"{len(cands)} candidates but {got} texts",
                            fix="give one text per candidate (LoadedIndex.texts()[ctx.row(node_id)])")
    bad = next((i for i, t in enumerate(texts) if t is not None and not isinstance(t, str)), None)
    if bad is not None:
        raise BadInputError(f"text {bad} is a {type(texts[bad]).__name__}, not a string",
                            fix="give each candidate's code as a string")
    bad = next((i for i, c in enumerate(cands) if not isinstance(c, QueriedNode)), None)
    if bad is not None:
        raise BadInputError(f"candidate {bad} is a {type(cands[bad]).__name__}, not a QueriedNode",
                            fix="pass candidates from codenib.ops.retrieve")
