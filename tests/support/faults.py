"""A fault-injecting fake OpenAI-compatible server on 127.0.0.1 (RELIABILITY groups D and E).

    with FaultServer([error_status(503), Turn("hi")]) as srv:
        client = connect(Endpoint(srv.base_url, "fake-model", wire="chat"), config)
        ...
    srv.posts                # model requests seen
    srv.wait_idle()          # connections still open once the client let go (E15: 0)

``POST /v1/chat/completions`` and ``POST /v1/responses`` play the next step of the script in
the wire of the path; a request body with ``"stream": true`` gets Server-Sent Events (chunked
transfer encoding, as real servers send them). ``GET /v1/models`` lists the models; a request
for another model gets a 404 naming it, without consuming a step. An exhausted script answers
400 (not retried), so a test sees a failed run, never a hang. Steps:

- ``Turn`` (tests/support/fake.py) or ``Normal(turn, pieces, usage_chunk)``: a proper reply,
  streamed as ``chat.completion.chunk`` frames or ``response.*`` events when asked;
- ``Body(data, status, content_type, headers)``: an exact answer (429 + Retry-After, 5xx,
  HTML, a malformed JSON body, an in-band error...: see the factories below);
- ``Stall(seconds, headers)``: hold the connection before the first byte (or after the
  headers), until the time passes, the client hangs up or the server stops; then close;
- ``Cut(turn, frames, then)``: the first ``frames`` SSE frames of a reply (half the body when
  not streamed), then ``"stall"``, ``"close"`` (no ``[DONE]``) or ``"reset"``;
- ``Reset()``: SO_LINGER 0 and close: the client reads ECONNRESET;
- ``Events(*frames)``: SSE frames as written (malformed JSON, unknown ``event:`` lines...);
- ``Split(data, cuts)``: raw bytes (an SSE recording: ``sse_recording``) written in pieces;
- ``Drip(seconds, every, frame)``: keep-alive comments and nothing else, for ``seconds``;
- ``Edited(turn, edit)``: a non-streamed reply whose JSON ``edit`` rewrites first;
- a callable ``(Recorded) -> step``, to answer from what the client sent.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal, TypeAlias

from support.fake import (
    JsonDict,
    ServerThread,
    TrackingServer,
    Turn,
    _encode,
    _parse,
    _render_chat,
    _render_responses,
)

__all__ = [
    "Body",
    "Cut",
    "Drip",
    "Edited",
    "Events",
    "FaultServer",
    "Normal",
    "Recorded",
    "Reset",
    "Split",
    "Stall",
    "Step",
    "data",
    "error_status",
    "html_page",
    "inband_error",
    "sse_recording",
]

WireName: TypeAlias = Literal["chat", "responses"]
MODEL = "fake-model"


@dataclass(frozen=True)
class Normal:
    """A proper reply; streamed, text and arguments come in ``pieces`` deltas each."""

    turn: Turn
    pieces: int = 3
    usage_chunk: bool = True
    """Chat streams end with a ``choices: []`` usage chunk before ``[DONE]``."""


@dataclass(frozen=True)
class Body:
    """An exact, complete answer with a Content-Length, streamed request or not."""

    data: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Stall:
    """Nothing for ``seconds`` (after a 200 and SSE headers when ``headers``), then close."""

    seconds: float = 30.0
    headers: bool = False


@dataclass(frozen=True)
class Cut:
    """A reply broken off after ``frames`` SSE frames (negative: all but the last ones).

    Not streamed: half the JSON body. ``chunked=False`` streams without chunked encoding
    (the body ends when the connection closes), so ``close`` then looks like a clean end.
    """

    turn: Turn
    frames: int = -1
    then: Literal["stall", "close", "reset"] = "close"
    seconds: float = 30.0
    chunked: bool = True


@dataclass(frozen=True)
class Reset:
    """Read the request, then reset the connection (SO_LINGER 0) before any byte."""


@dataclass(frozen=True)
class Events:
    """SSE frames written as given, each followed by a blank line, in its own chunk."""

    frames: tuple[str, ...]

    def __init__(self, *frames: str) -> None:
        object.__setattr__(self, "frames", frames)


@dataclass(frozen=True)
class Split:
    """``data`` as an SSE body, written in pieces cut at the offsets ``cuts``."""

    data: bytes
    cuts: tuple[int, ...] = ()


@dataclass(frozen=True)
class Drip:
    """SSE headers, then ``frame`` (a keep-alive comment by default) every ``every`` seconds
    for ``seconds``, never an event that counts; then close."""

    seconds: float = 30.0
    every: float = 0.1
    frame: str = ": keep-alive"


@dataclass(frozen=True)
class Edited:
    """A non-streamed reply to ``turn`` whose JSON object ``edit`` returns changed."""

    turn: Turn
    edit: Callable[[JsonDict], Any]


@dataclass(frozen=True)
class Recorded:
    """One request the server saw. ``body`` is the parsed JSON object (None if not one)."""

    method: str
    path: str
    body: JsonDict | None

    @property
    def wire(self) -> WireName:
        return "responses" if self.path.endswith("/responses") else "chat"

    @property
    def stream(self) -> bool:
        return bool(self.body and self.body.get("stream") is True)


Fault: TypeAlias = Normal | Body | Stall | Cut | Reset | Events | Split | Drip | Edited
Step: TypeAlias = Turn | Fault | Callable[[Recorded], "Turn | Fault"]


# --- factories for common faults -----------------------------------------------------------


def data(value: object) -> str:
    """An SSE ``data:`` line holding ``value`` as JSON."""
    return "data: " + _encode(value).decode()


def error_status(status: int, message: str = "fault", retry_after: str | None = None) -> Body:
    """An OpenAI-style error answer, with ``Retry-After`` when given."""
    headers = () if retry_after is None else (("retry-after", retry_after),)
    return Body(_encode({"error": {"message": message, "type": "fault"}}), status, headers=headers)


def html_page(status: int = 200) -> Body:
    """A proxy's error page."""
    page = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1>nginx</body></html>"
    return Body(page, status, "text/html; charset=utf-8")


def inband_error(message: str = "boom") -> Body:
    """``{"error": {"message": ...}}`` with status 200."""
    return Body(_encode({"error": {"message": message}}))


# --- rendering proper replies --------------------------------------------------------------


def _pieces(text: str, n: int) -> list[str]:
    """``text`` in ``n`` nearly equal non-empty pieces (fewer when it is shorter)."""
    if not text:
        return []
    n = max(1, min(n, len(text)))
    size, extra = divmod(len(text), n)
    bounds = list(itertools.accumulate(size + (i < extra) for i in range(n)))
    return [text[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]


def _render(turn: Turn, wire: WireName, size: int, ids: itertools.count[int]) -> JsonDict:
    render = _render_chat if wire == "chat" else _render_responses
    return render(turn, MODEL, size, ids)


def _frame(value: object) -> bytes:
    return b"data: " + _encode(value) + b"\n\n"


def _chat_frames(full: JsonDict, pieces: int, usage_chunk: bool) -> list[bytes]:
    base = {k: full[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = full["choices"][0]
    message = choice["message"]

    def chunk(delta: JsonDict, finish: str | None = None) -> bytes:
        return _frame({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [
        chunk({"reasoning_content": p})
        for p in _pieces(message.get("reasoning_content") or "", pieces)
    ]
    frames += [chunk({"content": p}) for p in _pieces(message.get("content") or "", pieces)]
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        head = {"index": index, "id": call.get("id"), "type": "function"}
        frames.append(
            chunk(
                {"tool_calls": [{**head, "function": {"name": function["name"], "arguments": ""}}]}
            )
        )
        for k, piece in enumerate(_pieces(function["arguments"], pieces)):
            entry: JsonDict = {"index": index, "function": {"arguments": piece}}
            if k == 0:
                entry["id"] = None  # vLLM: the id is null after a call's first chunk
            frames.append(chunk({"tool_calls": [entry]}))
    frames.append(chunk({}, choice["finish_reason"]))
    if usage_chunk:
        frames.append(_frame({**base, "choices": [], "usage": full["usage"]}))
    return [*frames, b"data: [DONE]\n\n"]


class _Events:
    """Responses stream events with running sequence numbers."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self._numbers = itertools.count()

    def add(self, kind: str, **fields: Any) -> None:
        payload = _encode({"type": kind, "sequence_number": next(self._numbers), **fields})
        self.frames.append(f"event: {kind}\ndata: ".encode() + payload + b"\n\n")


def _responses_frames(full: JsonDict, pieces: int) -> list[bytes]:
    events = _Events()
    started = {**full, "status": "in_progress", "output": [], "usage": None}
    events.add("response.created", response=started)
    events.add("response.in_progress", response=started)
    for index, item in enumerate(full["output"]):
        _item_events(events, index, item, pieces)
    final = "response.incomplete" if full.get("status") == "incomplete" else "response.completed"
    events.add(final, response=full)
    return events.frames


def _item_events(events: _Events, index: int, item: JsonDict, pieces: int) -> None:
    ids = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        added = {**item, "arguments": "", "status": "in_progress"}
        events.add("response.output_item.added", output_index=index, item=added)
        for piece in _pieces(item["arguments"], pieces):
            events.add("response.function_call_arguments.delta", **ids, delta=piece)
        events.add("response.function_call_arguments.done", **ids, arguments=item["arguments"])
    else:
        added = {**item, "content": []}
        if "status" in item:
            added["status"] = "in_progress"
        events.add("response.output_item.added", output_index=index, item=added)
        kind = "output_text" if item["type"] == "message" else "reasoning_text"
        for part_index, part in enumerate(item.get("content") or []):
            where = {**ids, "content_index": part_index}
            events.add("response.content_part.added", **where, part={**part, "text": ""})
            for piece in _pieces(part["text"], pieces):
                events.add(f"response.{kind}.delta", **where, delta=piece)
            events.add(f"response.{kind}.done", **where, text=part["text"])
            events.add("response.content_part.done", **where, part=part)
    events.add("response.output_item.done", output_index=index, item=item)


def _stream_frames(
    normal: Normal, wire: WireName, size: int, ids: itertools.count[int]
) -> list[bytes]:
    full = _render(normal.turn, wire, size, ids)
    if wire == "chat":
        return _chat_frames(full, normal.pieces, normal.usage_chunk)
    return _responses_frames(full, normal.pieces)


def sse_recording(turn: Turn | Normal, wire: WireName) -> bytes:
    """The SSE body of a proper streamed reply (for ``Split``): ids start at 1."""
    normal = turn if isinstance(turn, Normal) else Normal(turn)
    return b"".join(_stream_frames(normal, wire, 400, itertools.count(1)))


# --- the connection side of one request ----------------------------------------------------


class _Conn:
    """What steps do to the connection of the request being answered."""

    def __init__(self, handler: _Handler, stopping: threading.Event) -> None:
        self.handler = handler
        self.sock: socket.socket = handler.connection
        self.stopping = stopping

    def head(self, status: int, content_type: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        self.handler.send_response(status)
        self.handler.send_header("content-type", content_type)
        for name, value in headers:
            self.handler.send_header(name, value)
        self.handler.end_headers()
        self.handler.wfile.flush()

    def body(self, body: Body) -> None:
        headers = [*body.headers, ("content-length", str(len(body.data)))]
        self.head(body.status, body.content_type, headers)
        self.write(body.data)

    def stream_head(self, chunked: bool = True) -> None:
        framing = ("transfer-encoding", "chunked") if chunked else ("connection", "close")
        self.head(200, "text/event-stream", [("cache-control", "no-cache"), framing])
        if not chunked:
            self.handler.close_connection = True

    def write(self, data: bytes) -> None:
        self.handler.wfile.write(data)
        self.handler.wfile.flush()

    def chunk(self, data: bytes, chunked: bool = True) -> None:
        if data:
            self.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

    def end(self) -> None:
        self.write(b"0\r\n\r\n")

    def hold(self, seconds: float) -> None:
        """Send nothing until ``seconds`` pass, the client hangs up or the server stops."""
        self.gone(seconds)
        self.handler.close_connection = True

    def gone(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the client hung up or the server stops."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.stopping.is_set():
                return True
            readable, _, _ = select.select([self.sock], [], [], min(left, 0.05))
            if readable and self._hung_up():
                return True
        return self.stopping.is_set()

    def _hung_up(self) -> bool:
        try:
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def close(self) -> None:
        """End the connection here (FIN), whatever was promised."""
        self.handler.close_connection = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a RST, not a FIN."""
        self.handler.close_connection = True
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def stop(self, then: str, seconds: float) -> None:
        {"stall": lambda: self.hold(seconds), "close": self.close, "reset": self.reset}[then]()


# --- the server ----------------------------------------------------------------------------


class FaultServer(ServerThread):
    """A scripted, fault-injecting server; use as a context manager or ``start``/``stop``."""

    def __init__(self, script: Iterable[Step] = (), *, models: Sequence[str] = (MODEL,)) -> None:
        self.models = tuple(models)
        self.requests: list[Recorded] = []
        self._steps: deque[Step] = deque(script)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__()

    @property
    def posts(self) -> int:
        """Model requests seen (POSTs to a wire's path)."""
        return sum(r.method == "POST" and r.path.endswith(_ROUTES) for r in self.requests)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    @property
    def open_connections(self) -> int:
        return 0 if self._httpd is None else self._httpd.open_count()

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

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def make_server(self) -> TrackingServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fault = self
        return httpd

    def serve(self, handler: _Handler, method: str) -> None:
        """Answer one request (in its handler thread)."""
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        request = Recorded(method, handler.path, _parse(raw))
        with self._lock:
            self.requests.append(request)
        conn = _Conn(handler, self._stopping)
        route = handler.path.partition("?")[0]
        if method == "GET" and route == "/v1/models":
            ids = [{"id": m, "object": "model", "owned_by": "fault"} for m in self.models]
            conn.body(Body(_encode({"object": "list", "data": ids})))
        elif method == "POST" and route in ("/v1/chat/completions", "/v1/responses"):
            self._play(conn, request, len(raw))
        else:
            conn.body(error_status(404, f"FaultServer: no route {method} {handler.path}"))

    def _play(self, conn: _Conn, request: Recorded, size: int) -> None:
        model = (request.body or {}).get("model")
        if model not in self.models:
            conn.body(error_status(404, f"model '{model}' not found"))
            return
        with self._lock:
            step = self._steps.popleft() if self._steps else None
        if step is None:
            conn.body(error_status(400, "FaultServer: script exhausted; one request too many"))
            return
        if callable(step):
            step = step(request)
        _PLAYERS[type(step)](self, conn, step, request, size)

    def render(self, turn: Turn, request: Recorded, size: int) -> JsonDict:
        return _render(turn, request.wire, size, self._ids)

    def frames(self, turn: Turn | Normal, request: Recorded, size: int) -> list[bytes]:
        normal = turn if isinstance(turn, Normal) else Normal(turn)
        return _stream_frames(normal, request.wire, size, self._ids)


_ROUTES = ("/chat/completions", "/responses")
_Player: TypeAlias = Callable[[FaultServer, _Conn, Any, Recorded, int], None]


def _play_normal(
    server: FaultServer, conn: _Conn, step: Turn | Normal, r: Recorded, size: int
) -> None:
    if not r.stream:
        turn = step if isinstance(step, Turn) else step.turn
        conn.body(Body(_encode(server.render(turn, r, size))))
        return
    conn.stream_head()
    for frame in server.frames(step, r, size):
        conn.chunk(frame)
    conn.end()


def _play_stall(server: FaultServer, conn: _Conn, step: Stall, r: Recorded, size: int) -> None:
    if step.headers and r.stream:
        conn.stream_head()
    elif step.headers:
        conn.head(200, "application/json", [("content-length", "100")])
    conn.hold(step.seconds)


def _play_cut(server: FaultServer, conn: _Conn, step: Cut, r: Recorded, size: int) -> None:
    if r.stream:
        conn.stream_head(step.chunked)
        for frame in server.frames(step.turn, r, size)[: step.frames]:
            conn.chunk(frame, step.chunked)
    else:
        body = _encode(server.render(step.turn, r, size))
        conn.head(200, "application/json", [("content-length", str(len(body)))])
        conn.write(body[: len(body) // 2])
    conn.stop(step.then, step.seconds)


def _play_events(server: FaultServer, conn: _Conn, step: Events, r: Recorded, size: int) -> None:
    conn.stream_head()
    for frame in step.frames:
        conn.chunk(frame.encode() + b"\n\n")
    conn.end()


def _play_split(server: FaultServer, conn: _Conn, step: Split, r: Recorded, size: int) -> None:
    conn.stream_head()
    bounds = sorted({c for c in step.cuts if 0 < c < len(step.data)})
    for start, end in zip([0, *bounds], [*bounds, len(step.data)], strict=True):
        conn.chunk(step.data[start:end])
        time.sleep(0.002)  # so that the client reads the pieces one by one
    conn.end()


def _play_drip(server: FaultServer, conn: _Conn, step: Drip, r: Recorded, size: int) -> None:
    conn.stream_head()
    deadline = time.monotonic() + step.seconds
    while time.monotonic() < deadline and not conn.gone(step.every):
        conn.chunk(step.frame.encode() + b"\n\n")
    conn.close()


def _play_edited(server: FaultServer, conn: _Conn, step: Edited, r: Recorded, size: int) -> None:
    conn.body(Body(_encode(step.edit(server.render(step.turn, r, size)))))


_PLAYERS: dict[type, _Player] = {
    Turn: _play_normal,
    Normal: _play_normal,
    Body: lambda server, conn, step, r, size: conn.body(step),
    Stall: _play_stall,
    Cut: _play_cut,
    Reset: lambda server, conn, step, r, size: conn.reset(),
    Events: _play_events,
    Split: _play_split,
    Drip: _play_drip,
    Edited: _play_edited,
}


class _Server(TrackingServer):
    """A ``TrackingServer`` (live connections, E15) that knows its ``FaultServer``."""

    fault: FaultServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # each SSE frame leaves at once
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``FaultServer.requests``."""

    def do_GET(self) -> None:
        self.server.fault.serve(self, "GET")

    def do_POST(self) -> None:
        self.server.fault.serve(self, "POST")
