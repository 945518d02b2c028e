"""A real HTTP fake of an OpenAI-compatible server on 127.0.0.1, playing a script.

    with FakeServer([Turn(calls=[Call("read_file", {"path": "a.txt"})]), Turn("done")]) as srv:
        client = connect(Endpoint(srv.base_url, "fake-model"))
        ...
    srv.requests[1].body["messages"]      # what the client sent, parsed
    srv.wait_idle()                       # connections still open once the client let go

Each ``POST /v1/responses`` or ``POST /v1/chat/completions`` plays the next step of the script
in the wire of the path requested:

- a ``Turn`` (``support.render``): a proper reply, as JSON, or, when the request says
  ``"stream": true``, as Server-Sent Events in chunked transfer encoding, one frame a chunk;
- a ``RawReply``: an exact answer (status, body, headers), after ``delay`` seconds;
- a fault of ``support.faults`` (a stall, a cut stream, a reset...): any object with a
  ``play(exchange)`` method, which the server calls with the ``Exchange`` of the request;
- a callable: it gets the parsed request body and returns one of the above.

``GET /v1/models`` lists ``models``. A request for another model gets 404
``{"error": {"message": "model 'X' not found"}}`` without consuming a step. When the script is
exhausted the answer is a 400 (not retried) saying so, so a test sees a failed run, never a
hang. Every request (the ``GET`` too) is recorded in ``requests``. Keep-alive HTTP/1.1;
``stop()`` wakes every waiting step, closes every connection and joins the handler threads.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol, Self, TypeAlias

from support.httpd import Exchange, RecordedRequest, TrackingServer
from support.render import (
    CREATED,
    MODEL,
    Call,
    JsonDict,
    Turn,
    chat_sse,
    compact_json,
    parse_object,
    pieces,
    render_chat,
    render_responses,
    responses_sse,
)

__all__ = [
    "Call",
    "Exchange",
    "FakeServer",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "Step",
    "Turn",
    "chat_sse",
    "pieces",
    "render_chat",
    "render_responses",
    "responses_sse",
]

ROUTES = ("/v1/chat/completions", "/v1/responses")


class Step(Protocol):
    """A step of the script other than a ``Turn``: it answers the request of ``exchange``."""

    def play(self, exchange: Exchange) -> None: ...


@dataclass(frozen=True)
class RawReply:
    """An exact HTTP answer (content type defaults to application/json), sent after ``delay``
    seconds unless the client hangs up or the server stops first."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def json(
        cls, data: object, status: int = 200, *, delay: float = 0.0, **headers: str
    ) -> RawReply:
        """A reply whose body is ``data`` as JSON (header names with ``_`` get ``-``)."""
        named = {k.replace("_", "-"): v for k, v in headers.items()}
        return cls(status, compact_json(data), named, delay)

    def play(self, exchange: Exchange) -> None:
        if self.delay and exchange.gone(self.delay):
            exchange.close()
            return
        exchange.send(self.status, self.body, self.headers)


Reply: TypeAlias = Turn | Step | Callable[[JsonDict], Turn | Step]


class FakeServer:
    """A scripted OpenAI-compatible server; use as a context manager or ``start``/``stop``."""

    base_url = ""

    def __init__(self, script: Iterable[Reply] = (), *, models: Sequence[str] = (MODEL,)) -> None:
        self.models = tuple(models)
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque(script)
        self._served = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # wakes steps that wait or stall
        self._httpd: TrackingServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def connections(self) -> int:
        """Connections accepted so far (keep-alive reuse shows here)."""
        return 0 if self._httpd is None else self._httpd.accepted

    @property
    def open_connections(self) -> int:
        return 0 if self._httpd is None else self._httpd.open_count()

    @property
    def posts(self) -> int:
        """Model requests seen (POSTs to a wire's path)."""
        return sum(r.method == "POST" and r.path.partition("?")[0] in ROUTES for r in self.requests)

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self._replies)

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def wait_idle(self, timeout: float = 2.0) -> int:
        """Open connections once they are all closed, or ``timeout`` seconds passed."""
        deadline = time.monotonic() + timeout
        while self.open_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.open_connections

    def hang_up(self) -> None:
        """Close every open connection now, as a server's keep-alive timeout does."""
        if self._httpd is not None:
            self._httpd.drop_connections()

    def start(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="FakeServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        """Answer one request (in its handler thread)."""
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request = RecordedRequest(handler.path, parse_object(raw), raw, headers, method)
        with self._lock:
            self.requests.append(request)
        step = self._step(request)
        exchange = Exchange(handler, request, self._stopping, self._ids)
        if isinstance(step, Turn):
            exchange.answer(step)
        else:
            step.play(exchange)

    def _step(self, request: RecordedRequest) -> Turn | Step:
        route = request.path.partition("?")[0]
        if request.method == "GET" and route == "/v1/models":
            listed = [
                {"id": m, "object": "model", "created": CREATED, "owned_by": "fake"}
                for m in self.models
            ]
            return RawReply.json({"object": "list", "data": listed})
        if request.method != "POST" or route not in ROUTES:
            return _error(404, f"FakeServer: no route {request.method} {request.path}")
        body = request.body
        if body is None:
            return _error(400, "FakeServer: the request body is not a JSON object")
        if body.get("model") not in self.models:
            return _error(404, f"model '{body.get('model')}' not found")
        with self._lock:
            if not self._replies:
                return _error(
                    400,
                    f"FakeServer: script exhausted after {self._served} "
                    "replies; the client asked for one more",
                )
            reply = self._replies.popleft()
            self._served += 1
        if isinstance(reply, Turn) or not callable(reply):
            return reply
        try:
            return reply(body)
        except Exception as exc:  # a bug in the test's reply function: show it, no retry
            return _error(400, f"FakeServer: the reply function raised {exc!r}")


def _error(status: int, message: str) -> RawReply:
    return RawReply.json({"error": {"message": message, "type": "fake_server_error"}}, status)


class _Server(TrackingServer):
    """A ``TrackingServer`` that knows its ``FakeServer``."""

    fake: FakeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # each write leaves at once: no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``FakeServer.requests`` instead."""

    def do_GET(self) -> None:
        self.server.fake.serve(self, "GET")

    def do_POST(self) -> None:
        self.server.fake.serve(self, "POST")
