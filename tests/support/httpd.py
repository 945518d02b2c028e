"""The HTTP side of the fake server: what it recorded, what a step can do to the connection of
the request it answers (``Exchange``), and a server that tracks its live connections."""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from support.render import MODEL, JsonDict, Turn, WireName, compact_json, render, stream_frames

__all__ = ["Exchange", "RecordedRequest", "TrackingServer"]


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received. ``body`` is the parsed JSON object (None if not one);
    header names are lower-case."""

    path: str
    body: JsonDict | None
    raw: bytes
    headers: dict[str, str]
    method: str = "POST"

    @property
    def wire(self) -> WireName:
        return "responses" if self.path.partition("?")[0].endswith("/responses") else "chat"

    @property
    def stream(self) -> bool:
        return bool(self.body and self.body.get("stream") is True)


class Exchange:
    """One request being answered: ``request``, and what a step can do to its connection
    (send a head or a body, stream chunks, hold, close, reset)."""

    def __init__(
        self,
        handler: BaseHTTPRequestHandler,
        request: RecordedRequest,
        stopping: threading.Event,
        ids: itertools.count[int],
    ) -> None:
        self.request = request
        self._handler = handler
        self._sock: socket.socket = handler.connection
        self._stopping = stopping
        self._ids = ids

    def render(self, turn: Turn) -> JsonDict:
        """``turn`` as the JSON reply of the request's wire (ids from the server's counter)."""
        model = str((self.request.body or {}).get("model", MODEL))
        return render(turn, self.request.wire, model, len(self.request.raw), self._ids)

    def frames(self, turn: Turn, n: int = 3, usage_chunk: bool = True) -> list[bytes]:
        """``turn`` as the SSE frames of the request's wire."""
        return stream_frames(self.render(turn), self.request.wire, n, usage_chunk)

    def answer(self, turn: Turn, n: int = 3, usage_chunk: bool = True) -> None:
        """The proper reply: JSON, or SSE frames in chunks when the request streams."""
        if not self.request.stream:
            self.send(200, compact_json(self.render(turn)))
            return
        self.stream_head()
        for frame in self.frames(turn, n, usage_chunk):
            self.chunk(frame)
        self.end()

    def send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """A complete answer with a Content-Length (content type JSON unless ``headers``
        name one)."""
        headers = dict(headers or {})
        if not any(name.lower() == "content-type" for name in headers):
            headers["content-type"] = "application/json"
        self.head(status, {**headers, "content-length": str(len(body))})
        self.write(body)

    def head(self, status: int, headers: Mapping[str, str]) -> None:
        self._handler.send_response(status)
        for name, value in headers.items():
            self._handler.send_header(name, value)
        self._handler.end_headers()
        self._handler.wfile.flush()

    def stream_head(self, chunked: bool = True) -> None:
        """A 200 with SSE headers; without ``chunked`` the body ends when the connection does."""
        framing = {"transfer-encoding": "chunked"} if chunked else {"connection": "close"}
        self.head(
            200, {"content-type": "text/event-stream", "cache-control": "no-cache", **framing}
        )
        if not chunked:
            self._handler.close_connection = True

    def write(self, data: bytes) -> None:
        self._handler.wfile.write(data)
        self._handler.wfile.flush()

    def chunk(self, data: bytes, chunked: bool = True) -> None:
        if data:
            self.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

    def end(self) -> None:
        """The last chunk of a chunked body."""
        self.write(b"0\r\n\r\n")

    def hold(self, seconds: float) -> None:
        """Send nothing until ``seconds`` pass, the client hangs up or the server stops; then
        close the connection."""
        self.gone(seconds)
        self._handler.close_connection = True

    def gone(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the client hung up or the server stops."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self._stopping.is_set():
                return True
            readable, _, _ = select.select([self._sock], [], [], min(left, 0.05))
            if readable and self._hung_up():
                return True
        return self._stopping.is_set()

    def _hung_up(self) -> bool:
        try:
            return self._sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def close(self) -> None:
        """End the connection here (FIN), whatever was promised."""
        self._handler.close_connection = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)

    def reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a RST, not a FIN."""
        self._handler.close_connection = True
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._sock.close()

    def stop(self, then: Literal["stall", "close", "reset"], seconds: float) -> None:
        {"stall": lambda: self.hold(seconds), "close": self.close, "reset": self.reset}[then]()


class TrackingServer(ThreadingHTTPServer):
    """A threading HTTP server that tracks live connections: it can count them and end them
    all at once (``stop`` ends keep-alive handlers without waiting for their clients)."""

    daemon_threads = False  # so server_close() joins the handler threads

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self.accepted = 0  # connections accepted so far (keep-alive reuse shows here)

    def open_count(self) -> int:
        with self._connections_lock:
            return len(self._connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:  # in the accept thread: no connection escapes tracking
            self._connections.add(request)
            self.accepted += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._connections_lock:
            live = list(self._connections)
        for connection in live:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)  # the handler then closes it

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients that went away (timeouts, resets); loud about the rest."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)
