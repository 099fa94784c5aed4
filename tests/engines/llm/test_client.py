"""The chat client's transport guarantees (httpx): no proxy from the environment, no redirect
followed, retries on 408/429/5xx only, and a closed client."""

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from codenib.engines.llm.client import ChatClient, LLMConfig, RequestFailedError
from tests.ops.llm_server import http_error, llm_server

__all__ = ["llm_server"]  # the fixture, imported for pytest

MESSAGES = [{"role": "user", "content": "rank these"}]


def config(endpoint, **kw) -> LLMConfig:
    return LLMConfig(**{"endpoint": endpoint, "model": "m", "timeout_s": 5.0, "retries": 0,
                        "backoff_s": 0.01, **kw})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_proxy_variables_of_the_environment_are_ignored(llm_server, monkeypatch):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: a request through it would fail
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    reply = ChatClient(config(llm_server.endpoint), "sk-secret").chat(MESSAGES)
    assert reply.finish_reason == "stop" and len(llm_server.requests) == 1
    assert llm_server.requests[0].headers["Authorization"] == "Bearer sk-secret"


@pytest.fixture
def redirecting(llm_server):
    """A server that answers every POST with 307 to the chat server (which must see nothing)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", f"{llm_server.endpoint}/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_a_redirect_is_not_followed_and_not_retried(redirecting, llm_server):
    client = ChatClient(config(redirecting, retries=2), "sk-secret")
    with pytest.raises(RequestFailedError, match=r"HTTP 307.*not retried"):
        client.chat(MESSAGES)
    assert llm_server.requests == []  # the key never reached the redirect's target


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_408_429_and_5xx_are_retried(llm_server, status):
    llm_server.push(http_error(status), http_error(status))
    reply = ChatClient(config(llm_server.endpoint, retries=2), None).chat(MESSAGES)
    assert reply.finish_reason == "stop" and len(llm_server.requests) == 3


def test_retries_are_bounded(llm_server):
    llm_server.push(*[http_error(429)] * 5)
    with pytest.raises(RequestFailedError, match=r"HTTP 429.*after 2 attempt"):
        ChatClient(config(llm_server.endpoint, retries=1), None).chat(MESSAGES)
    assert len(llm_server.requests) == 2


def test_a_closed_client_sends_nothing(llm_server):
    client = ChatClient(config(llm_server.endpoint), None)
    client.close()
    with pytest.raises(RequestFailedError):
        client.chat(MESSAGES)
    assert llm_server.requests == []


@pytest.fixture
def trickling():
    """A server that sends its headers at once, then one byte of the body every 0.1 s."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass  # the client gave up

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_a_trickling_answer_is_cut_at_the_attempts_deadline(trickling):
    # Every read returns within 0.5 s, but the whole body would take 10 s: the deadline of the
    # attempt (timeout_s), checked between chunks, ends it.
    start = time.monotonic()
    with pytest.raises(RequestFailedError, match=r"timed out after 0.5 s.*1 attempt"):
        ChatClient(config(trickling, timeout_s=0.5), None).chat(MESSAGES)
    assert time.monotonic() - start < 2.0
