"""Where and how to ask the LLM (`LLMConfig`) and the HTTP client of its OpenAI-compatible
chat-completions endpoint (vLLM, llama.cpp, Ollama).

The config holds no secret; the API key reaches the client from the environment variable the
config names (`CODENIB_LLM_API_KEY` or `CODENIB_LLM_API_KEY_<NAME>`, no other), is sent only
to the configured endpoint (no proxy, no redirect) and only over https or to this machine,
and no repr or error contains it.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import ssl
import threading
import time
import weakref
from dataclasses import dataclass, fields
from typing import Any, Mapping
from urllib.parse import urlsplit

import httpx

from codenib import __version__
from codenib.core.errors import BadInputError, RerankError
from codenib.core.hosts import is_loopback
from codenib.engines.llm.prompts import MalformedAnswerError, excerpt, min_prompt_tokens

#: The two ways of asking the model.
MODES = ("listwise", "pointwise")
#: Default variable holding the API key; local servers (vLLM, llama.cpp, Ollama) need none.
DEFAULT_API_KEY_ENV = "CODENIB_LLM_API_KEY"
#: The variables `api_key_env` may name: the default or the default plus a suffix (one per
#: provider). Any other variable (a cloud secret, RAY_AUTH_TOKEN) could be sent to whatever
#: endpoint a shared job spec names.
API_KEY_ENV_PATTERN = re.compile(r"CODENIB_LLM_API_KEY(_[A-Z0-9]+)*")
#: Largest response body read; a ranking answer is a few KiB, so more is a broken server.
MAX_RESPONSE_BYTES = 4 << 20


class RequestFailedError(RerankError):
    """A request that failed after its retries (recorded, never raised out of `rerank`)."""


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to ask the model. Holds no secret: the key comes from `api_key_env`.

    `endpoint` is the base URL (``http://127.0.0.1:8000/v1``); requests go to
    ``{endpoint}/chat/completions``. Only the first `top_n` candidates are reranked; the
    rest keep their order below them.
    """

    endpoint: str
    model: str
    mode: str = "listwise"
    window: int = 20
    stride: int = 10
    top_n: int = 50
    max_prompt_tokens: int = 6144
    max_output_tokens: int = 512
    temperature: float = 0.0
    timeout_s: float = 30.0
    retries: int = 2
    backoff_s: float = 0.5
    concurrency: int = 4
    api_key_env: str = DEFAULT_API_KEY_ENV

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoint", _check_endpoint(self.endpoint))
        _check(isinstance(self.model, str) and self.model.strip() != "", "model", self.model,
               "a non-empty model name", "set model to the name the server serves (e.g. its --model)")
        _check(self.mode in MODES, "mode", self.mode, "listwise or pointwise", "set mode to listwise or pointwise")
        _check(_is_int(self.window) and self.window >= 2, "window", self.window, "an integer >= 2",
               "set window to 2 or more (20 is the usual listwise window)")
        # Overlapping windows let a good candidate climb from the bottom window to the top.
        _check(_is_int(self.stride) and 1 <= self.stride < self.window, "stride", self.stride,
               f"an integer from 1 to window - 1 ({self.window - 1})",
               "set stride below window so that windows overlap (window / 2 is usual)")
        _check(_is_int(self.top_n) and self.top_n >= 1, "top_n", self.top_n, "an integer >= 1",
               "set top_n to how many of the first candidates to rerank")
        _check(_is_int(self.max_output_tokens) and self.max_output_tokens >= 1, "max_output_tokens",
               self.max_output_tokens, "an integer >= 1", "set max_output_tokens to 512 or more")
        _check(_is_number(self.temperature) and 0.0 <= self.temperature <= 2.0, "temperature",
               self.temperature, "a number from 0 to 2", "set temperature to 0 for reproducible rankings")
        _check(_is_number(self.timeout_s) and self.timeout_s > 0, "timeout_s", self.timeout_s,
               "a number of seconds > 0", "set timeout_s to e.g. 30")
        _check(_is_int(self.retries) and self.retries >= 0, "retries", self.retries, "an integer >= 0",
               "set retries to e.g. 2")
        _check(_is_number(self.backoff_s) and self.backoff_s >= 0, "backoff_s", self.backoff_s,
               "a number of seconds >= 0", "set backoff_s to e.g. 0.5")
        _check(_is_int(self.concurrency) and self.concurrency >= 1, "concurrency", self.concurrency,
               "an integer >= 1", "set concurrency to how many requests the server takes at once")
        _check(isinstance(self.api_key_env, str) and API_KEY_ENV_PATTERN.fullmatch(self.api_key_env) is not None,
               "api_key_env", self.api_key_env, f"{DEFAULT_API_KEY_ENV} or {DEFAULT_API_KEY_ENV}_<NAME> "
               "(NAME: capitals, digits, _)", f"set api_key_env to {DEFAULT_API_KEY_ENV} or e.g. "
               f"{DEFAULT_API_KEY_ENV}_PROVIDER, and export the key there")
        floor = min_prompt_tokens(self.window if self.mode == "listwise" else 1)
        _check(_is_int(self.max_prompt_tokens) and self.max_prompt_tokens >= floor, "max_prompt_tokens",
               self.max_prompt_tokens, f"an integer >= {floor} for this mode and window",
               f"raise max_prompt_tokens to at least {floor} or lower window")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LLMConfig":
        """A config from a job spec or JSON mapping (an API key in it is refused)."""
        if not isinstance(data, Mapping):
            raise BadInputError(f"the LLM reranker config must be a mapping, got {type(data).__name__}",
                                fix="give endpoint, model and optional settings as key: value pairs")
        names = {f.name for f in fields(cls)}
        secret_keys = sorted(k for k in data if isinstance(k, str) and k.lower() in ("api_key", "key", "token"))
        if secret_keys:
            raise BadInputError(f"the LLM reranker config holds {secret_keys[0]!r}; keys do not belong in configs",
                                fix=f"remove it and export the key in the variable named by api_key_env "
                                    f"(default {DEFAULT_API_KEY_ENV})")
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise BadInputError(f"unknown LLM reranker setting(s) {unknown}",
                                fix=f"use only {sorted(names)}")
        missing = [k for k in ("endpoint", "model") if k not in data]
        if missing:
            raise BadInputError(f"the LLM reranker config lacks {missing}",
                                fix="set endpoint (e.g. http://127.0.0.1:8000/v1) and model")
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        """Plain settings (the key's variable name, never the key)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def check_key_route(self, environ: Mapping[str, str] | None = None) -> None:
        """Refuse, before any work, a key that the client would refuse to send (`check_route`):
        a command checks this up front instead of writing a folder of error rows.

        Raises:
            BadInputError: the key in `api_key_env` is malformed, or would go over plain http
                to another machine.
        """
        check_route(self, api_key(self, environ))


def api_key(config: LLMConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The key in `config.api_key_env` (None when unset or blank).

    Raises:
        BadInputError: it holds whitespace or control characters (an HTTP client could quote
            the bad header value in its error, so it is refused here, unquoted).
    """
    environ = os.environ if environ is None else environ
    key = (environ.get(config.api_key_env) or "").strip() or None
    if key is not None and re.search(r"[\s\x00-\x1f\x7f]", key):
        raise BadInputError(f"the API key in ${config.api_key_env} contains whitespace or control characters",
                            fix=f"export {config.api_key_env} with the key alone")
    return key


def check_route(config: LLMConfig, key: str | None) -> None:
    """A key goes only over https or to this machine (loopback), never in clear text across
    a network; host names are not resolved (see `codenib.core.hosts`).

    Raises:
        BadInputError: a key with a plain-http endpoint on another machine.
    """
    parts = urlsplit(config.endpoint)
    if key and parts.scheme != "https" and not is_loopback(parts.hostname or ""):
        raise BadInputError(f"the API key in ${config.api_key_env} would go in clear text over http to "
                            f"{parts.hostname} (LLM reranker endpoint {config.endpoint})",
                            fix=f"use an https endpoint, or a server on 127.0.0.1, or "
                                f"unset {config.api_key_env} for a server that needs no key")


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str
    finish_reason: str | None


class ChatClient:
    """POSTs chat completions with a per-attempt deadline, retries and bounded concurrency.

    The transport is `httpx` with ``trust_env=False`` (no proxy, certificate file or netrc
    from the environment) and ``follow_redirects=False`` (a 3xx is an error, never followed),
    so the key goes to the configured endpoint and nowhere else; and a key goes only over
    https or to this machine (loopback), never in clear text across a network. At most
    `concurrency` requests are in flight (a semaphore, and a pool of as many connections).

    Raises:
        BadInputError: a key with a plain-http endpoint on another machine.
    """

    def __init__(self, config: LLMConfig, api_key: str | None):
        check_route(config, api_key)
        self.url = f"{config.endpoint}/chat/completions"
        self._config = config
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": f"codenib/{__version__}"}
        self._auth = bool(api_key)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._http = httpx.Client(
            headers=headers, trust_env=False, follow_redirects=False,
            # The system's trust store, as the standard library uses (httpx defaults to certifi).
            verify=ssl.create_default_context(),
            timeout=httpx.Timeout(float(config.timeout_s)),
            limits=httpx.Limits(max_connections=config.concurrency,
                                max_keepalive_connections=config.concurrency))
        # A client dropped without close() still releases its pooled sockets.
        self._finalizer = weakref.finalize(self, self._http.close)

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, auth={'bearer' if self._auth else 'none'})"

    def close(self) -> None:
        """Close the pooled connections (a later `chat` is an error)."""
        self._finalizer()

    def chat(self, messages: list[dict[str, str]]) -> ChatReply:
        """One completion; retries timeouts, connection errors, 408/429 and 5xx."""
        c = self._config
        body = json.dumps({"model": c.model, "messages": messages, "temperature": c.temperature,
                           "max_tokens": c.max_output_tokens, "stream": False, "n": 1}).encode()
        attempts = c.retries + 1
        problem = ""
        for attempt in range(attempts):
            if attempt:
                # Jitter spreads the retries of many concurrent requests after a shared outage.
                time.sleep(c.backoff_s * 2 ** (attempt - 1) * (1 + 0.25 * random.random()))
            try:
                with self._slots:
                    status, raw = self._post(body)
            except (TimeoutError, httpx.TimeoutException):
                problem = f"timed out after {c.timeout_s:g} s"
                continue
            except (OSError, httpx.TransportError, _TooLarge) as exc:
                problem = f"connection failed ({type(exc).__name__}: {exc})"
                continue
            except Exception as exc:  # noqa: BLE001 - a failed request is recorded, never raised
                raise RequestFailedError(f"request to {self.url} failed ({type(exc).__name__}: {exc})") from None
            if status == 200:
                return _decode(raw)
            problem = f"HTTP {status}: {excerpt(raw.decode('utf-8', 'replace'))}"
            if not (status >= 500 or status in (408, 429)):
                raise RequestFailedError(f"{problem} from {self.url} (not retried)")
        raise RequestFailedError(f"{problem} from {self.url} after {attempts} attempt(s)")

    def _post(self, body: bytes) -> tuple[int, bytes]:
        timeout = float(self._config.timeout_s)
        deadline = time.monotonic() + timeout
        # Each connect, write and read waits at most timeout_s, and the attempt's deadline is
        # checked after every read of the body (iter_bytes() without a size yields each read
        # as it arrives), so a server that trickles its answer is cut within one read of it.
        with self._http.stream("POST", self.url, content=body, timeout=httpx.Timeout(timeout)) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                if time.monotonic() > deadline:
                    raise TimeoutError
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise _TooLarge(f"response larger than {MAX_RESPONSE_BYTES} bytes")
                chunks.append(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError
            return resp.status_code, b"".join(chunks)


class _TooLarge(Exception):
    """A response body beyond MAX_RESPONSE_BYTES (a broken server; retried like a failed connection)."""


# --- private helpers --------------------------------------------------------------------

def _decode(raw: bytes) -> ChatReply:
    try:
        doc = json.loads(raw)
        choice = doc["choices"][0]
        content = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise MalformedAnswerError(f"malformed response, not a chat completion: "
                                   f"{excerpt(raw.decode('utf-8', 'replace'))}") from None
    if not isinstance(content, str):
        raise MalformedAnswerError("malformed response, choices[0].message.content is not text")
    reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    return ChatReply(content, reason if isinstance(reason, str) else None)


def _check_endpoint(endpoint: Any) -> str:
    fix = "give the server's base URL, e.g. http://127.0.0.1:8000/v1 (CodeNib appends /chat/completions)"
    if not isinstance(endpoint, str):
        raise BadInputError(f"endpoint must be a URL string, got {type(endpoint).__name__}", fix=fix)
    try:
        parts = urlsplit(endpoint.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise BadInputError("endpoint is not a valid URL", fix=fix) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInputError(f"endpoint must be an http(s) URL with a host, got {endpoint!r}", fix=fix)
    if parts.username is not None or parts.password is not None:
        # Never echo it: the user part may be a credential.
        raise BadInputError("endpoint holds credentials (user:password@)",
                            fix="remove them and export the key in the variable named by api_key_env")
    if parts.query or parts.fragment:
        raise BadInputError(f"endpoint must not have a query or fragment, got {endpoint!r}", fix=fix)
    base = endpoint.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        raise BadInputError(f"endpoint {endpoint!r} already ends in /chat/completions", fix=fix)
    return base


def _check(ok: bool, name: str, value: Any, expected: str, fix: str) -> None:
    if not ok:
        raise BadInputError(f"LLM reranker {name} must be {expected}, got {value!r}", fix=fix)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
