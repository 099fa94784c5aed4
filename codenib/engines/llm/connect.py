"""Connecting to an LLM endpoint: the API key read from the environment and the HTTP
client made (the LLM reranker of `codenib.ops.llm` is given this and calls it on its first
rerank: ops connect to nothing themselves)."""

from __future__ import annotations

import os
import re

from codenib.engines.llm.client import ChatClient, LLMConfig
from codenib.core.errors import BadInputError


def connect(config: LLMConfig) -> tuple[ChatClient, str | None]:
    """The chat client of `config` and the API key it sends (None: no key), read from the
    environment variable the config names.

    Raises:
        BadInputError: a key with whitespace or control characters, or one that would go
            in clear text to another machine (`ChatClient`).
    """
    key = (os.environ.get(config.api_key_env) or "").strip() or None
    if key is not None and re.search(r"[\s\x00-\x1f\x7f]", key):
        # An HTTP client could quote the bad header value in its error, so refuse it here.
        raise BadInputError(f"the API key in ${config.api_key_env} contains whitespace or control characters",
                            fix=f"export {config.api_key_env} with the key alone")
    return ChatClient(config, key), key
