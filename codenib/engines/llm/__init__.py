"""The LLM endpoint: where and how to ask it and its HTTP client (`client`), the connection
with the API key read from the environment (`connect`), and the reranker's prompts and the
parsing of its answers (`prompts`)."""

from codenib.engines.llm.client import ChatClient, ChatReply, LLMConfig, RequestFailedError
from codenib.engines.llm.connect import connect
from codenib.engines.llm.prompts import MalformedAnswerError

__all__ = ["ChatClient", "ChatReply", "LLMConfig", "MalformedAnswerError", "RequestFailedError", "connect"]
