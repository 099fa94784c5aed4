"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 and a free port.

Each request is recorded and answered by a behaviour: a function from the recorded request
to a `Reply`. Behaviours queued with `push` answer one request each, in order; after them
the default behaviour answers. Use the `llm_server` fixture, or `with FakeChatServer() as s`.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

#: The path the client posts to under the endpoint http://127.0.0.1:PORT/v1.
CHAT_PATH = "/v1/chat/completions"

#: A candidate block of the prompts of codenib.ops.llm (id, tag, content).
BLOCK = re.compile(r'<candidate id="(\d+)" tag="([0-9a-f]+)">\n(.*?)\n</candidate tag="\2">', re.S)
#: Hidden relevance a test writes into a candidate's text, read by the ranking behaviours.
MARKER = re.compile(r"relevance=(\d+)")


@dataclass(frozen=True)
class Reply:
    """What the server answers: a chat completion, or `status` with `raw` as the body."""

    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    delay_s: float = 0.0
    raw: bytes | None = None


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None

    @property
    def system(self) -> str:
        return self._message("system")

    @property
    def user(self) -> str:
        return self._message("user")

    def blocks(self) -> list[tuple[int, str]]:
        """(identifier, content) of every candidate block of the user message."""
        return [(int(m.group(1)), m.group(3)) for m in BLOCK.finditer(self.user)]

    def _message(self, role: str) -> str:
        for m in (self.body or {}).get("messages", []):
            if m.get("role") == role:
                return m.get("content", "")
        return ""


Behaviour = Callable[[RecordedRequest], Reply]


class FakeChatServer:
    """ThreadingHTTPServer in a daemon thread; records requests and the peak of concurrent ones."""

    def __init__(self, default: Behaviour | None = None):
        self.default: Behaviour = default or reverse_order
        self.requests: list[RecordedRequest] = []
        self.peak_in_flight = 0
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *behaviours: Behaviour) -> None:
        """Answer the next requests with these behaviours, one each, before the default."""
        with self._lock:
            self._queue.extend(behaviours)

    def start(self) -> "FakeChatServer":
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.handle_error = lambda request, address: None  # clients that time out hang up
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes slow behaviours
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeChatServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default


@pytest.fixture
def llm_server():
    """A running `FakeChatServer` that reverses every listwise window by default."""
    with FakeChatServer() as server:
        yield server


# -- behaviours ---------------------------------------------------------------------------

def reverse_order(req: RecordedRequest) -> Reply:
    """Listwise: the window's identifiers, last first."""
    ids = [i for i, _ in req.blocks()]
    return Reply(" > ".join(f"[{i}]" for i in reversed(ids)))


def by_marker(req: RecordedRequest) -> Reply:
    """Listwise: identifiers by the hidden `relevance=N` of each block, highest first."""
    blocks = req.blocks()
    ranked = sorted(blocks, key=lambda b: (-_relevance(b[1]), b[0]))
    return Reply(" > ".join(f"[{i}]" for i, _ in ranked))


def score_by_marker(req: RecordedRequest) -> Reply:
    """Pointwise: the hidden `relevance=N` of the only block, as a bare number."""
    return Reply(str(_relevance(req.blocks()[0][1])))


def answer(content: str, finish_reason: str = "stop") -> Behaviour:
    """A fixed answer."""
    return lambda req: Reply(content, finish_reason)


def slow(delay_s: float, then: Behaviour = reverse_order) -> Behaviour:
    """`then`, sent after `delay_s` seconds."""
    def behaviour(req: RecordedRequest) -> Reply:
        r = then(req)
        return Reply(r.content, r.finish_reason, r.status, delay_s, r.raw)
    return behaviour


def http_error(status: int, body: str = '{"error": "boom"}') -> Behaviour:
    """An HTTP error status with `body`."""
    return lambda req: Reply(status=status, raw=body.encode())


def echo_authorization(status: int = 401) -> Behaviour:
    """A careless server that quotes the request's Authorization header in its error body."""
    return lambda req: Reply(status=status, raw=f"bad credentials: {req.headers.get('Authorization')}".encode())


def raw_body(body: bytes) -> Behaviour:
    """HTTP 200 with a body that is sent as is (not necessarily JSON)."""
    return lambda req: Reply(raw=body)


def _relevance(text: str) -> int:
    m = MARKER.search(text)
    return int(m.group(1)) if m else 0


class _Handler(BaseHTTPRequestHandler):
    fake: FakeChatServer

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
        fake = self.fake
        with fake._lock:
            fake._in_flight += 1
            fake.peak_in_flight = max(fake.peak_in_flight, fake._in_flight)
        self._counted = True
        try:
            self._answer(fake)
        except (ConnectionError, TimeoutError):
            pass  # the client gave up first
        finally:
            self._leave(fake)

    def _leave(self, fake: FakeChatServer) -> None:
        """The request stops counting as in flight (once): before its answer goes out, since a
        client that has its answer may send the next request before this thread runs on, and
        counting it still would report one request more than the client had open."""
        if self._counted:
            self._counted = False
            with fake._lock:
                fake._in_flight -= 1

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
        pass

    def _answer(self, fake: FakeChatServer) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        req = RecordedRequest(self.path, dict(self.headers.items()), body)
        with fake._lock:
            fake.requests.append(req)
        if self.path != CHAT_PATH:
            return self._send(404, b'{"error": "not found"}')
        reply = fake._next()(req)
        if reply.delay_s and fake._stopping.wait(reply.delay_s):
            return
        if reply.raw is not None:
            return self._send(reply.status, reply.raw)
        doc = {"id": "chatcmpl-test", "object": "chat.completion", "model": (body or {}).get("model"),
               "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                            "message": {"role": "assistant", "content": reply.content}}]}
        self._send(reply.status, json.dumps(doc).encode())

    def _send(self, status: int, data: bytes) -> None:
        self._leave(self.fake)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
