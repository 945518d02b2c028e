"""Faults the fake server can play as steps of its script (RELIABILITY groups D and E).

    with FakeServer([error_status(503), Stall(30), Turn("hi")]) as srv:
        client = connect(Endpoint(srv.base_url, "fake-model", wire="chat"), config)
        ...
    srv.posts                # model requests seen
    srv.wait_idle()          # connections still open once the client let go (E15: 0)

Each step is played on the ``Exchange`` of the request it answers (``support.fake``), in the
wire of the request's path, streamed when the request says ``"stream": true``:

- ``Normal(turn, pieces, usage_chunk)``: a proper reply, text and arguments in ``pieces``;
- ``Stall(seconds, headers)``: hold the connection before the first byte (or after the
  headers), until the time passes, the client hangs up or the server stops; then close;
- ``Cut(turn, frames, then)``: the first ``frames`` SSE frames of a reply (half the body when
  not streamed), then ``"stall"``, ``"close"`` (no ``[DONE]``) or ``"reset"``;
- ``Reset()``: SO_LINGER 0 and close: the client reads ECONNRESET;
- ``Events(*frames)``: SSE frames as written (malformed JSON, unknown ``event:`` lines...);
- ``Split(data, cuts)``: raw bytes (an SSE recording: ``sse_recording``) written in pieces;
- ``Drip(seconds, every, frame)``: keep-alive comments and nothing else, for ``seconds``;
- ``Edited(turn, edit)``: a non-streamed reply whose JSON ``edit`` rewrites first;
- exact answers (429 + Retry-After, 5xx, HTML, an in-band error) are ``RawReply`` values:
  see the factories below.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from support.fake import Exchange, RawReply
from support.render import JsonDict, Turn, WireName, compact_json, render, stream_frames

__all__ = [
    "Cut",
    "Drip",
    "Edited",
    "Events",
    "Normal",
    "Reset",
    "Split",
    "Stall",
    "data",
    "error_status",
    "html_page",
    "inband_error",
    "sse_recording",
]


@dataclass(frozen=True)
class Normal:
    """A proper reply; streamed, text and arguments come in ``pieces`` deltas each."""

    turn: Turn
    pieces: int = 3
    usage_chunk: bool = True
    """Chat streams end with a ``choices: []`` usage chunk before ``[DONE]``."""

    def play(self, exchange: Exchange) -> None:
        exchange.answer(self.turn, self.pieces, self.usage_chunk)


@dataclass(frozen=True)
class Stall:
    """Nothing for ``seconds`` (after a 200 and SSE headers when ``headers``), then close."""

    seconds: float = 30.0
    headers: bool = False

    def play(self, exchange: Exchange) -> None:
        if self.headers and exchange.request.stream:
            exchange.stream_head()
        elif self.headers:
            exchange.head(200, {"content-type": "application/json", "content-length": "100"})
        exchange.hold(self.seconds)


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

    def play(self, exchange: Exchange) -> None:
        if exchange.request.stream:
            exchange.stream_head(self.chunked)
            for frame in exchange.frames(self.turn)[: self.frames]:
                exchange.chunk(frame, self.chunked)
        else:
            body = compact_json(exchange.render(self.turn))
            exchange.head(
                200, {"content-type": "application/json", "content-length": str(len(body))}
            )
            exchange.write(body[: len(body) // 2])
        exchange.stop(self.then, self.seconds)


@dataclass(frozen=True)
class Reset:
    """Read the request, then reset the connection (SO_LINGER 0) before any byte."""

    def play(self, exchange: Exchange) -> None:
        exchange.reset()


@dataclass(frozen=True)
class Events:
    """SSE frames written as given, each followed by a blank line, in its own chunk."""

    frames: tuple[str, ...]

    def __init__(self, *frames: str) -> None:
        object.__setattr__(self, "frames", frames)

    def play(self, exchange: Exchange) -> None:
        exchange.stream_head()
        for frame in self.frames:
            exchange.chunk(frame.encode() + b"\n\n")
        exchange.end()


@dataclass(frozen=True)
class Split:
    """``data`` as an SSE body, written in pieces cut at the offsets ``cuts``."""

    data: bytes
    cuts: tuple[int, ...] = ()

    def play(self, exchange: Exchange) -> None:
        exchange.stream_head()
        bounds = sorted({c for c in self.cuts if 0 < c < len(self.data)})
        for start, end in zip([0, *bounds], [*bounds, len(self.data)], strict=True):
            exchange.chunk(self.data[start:end])
            time.sleep(0.002)  # so that the client reads the pieces one by one
        exchange.end()


@dataclass(frozen=True)
class Drip:
    """SSE headers, then ``frame`` (a keep-alive comment by default) every ``every`` seconds
    for ``seconds``, never an event that counts; then close."""

    seconds: float = 30.0
    every: float = 0.1
    frame: str = ": keep-alive"

    def play(self, exchange: Exchange) -> None:
        exchange.stream_head()
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline and not exchange.gone(self.every):
            exchange.chunk(self.frame.encode() + b"\n\n")
        exchange.close()


@dataclass(frozen=True)
class Edited:
    """A non-streamed reply to ``turn`` whose JSON object ``edit`` returns changed."""

    turn: Turn
    edit: Callable[[JsonDict], Any]

    def play(self, exchange: Exchange) -> None:
        exchange.send(200, compact_json(self.edit(exchange.render(self.turn))))


# --- factories for common faults -----------------------------------------------------------


def data(value: object) -> str:
    """An SSE ``data:`` line holding ``value`` as JSON."""
    return "data: " + compact_json(value).decode()


def error_status(status: int, message: str = "fault", retry_after: str | None = None) -> RawReply:
    """An OpenAI-style error answer, with ``Retry-After`` when given."""
    headers = {} if retry_after is None else {"retry-after": retry_after}
    return RawReply(status, compact_json({"error": {"message": message, "type": "fault"}}), headers)


def html_page(status: int = 200) -> RawReply:
    """A proxy's error page."""
    page = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1>nginx</body></html>"
    return RawReply(status, page, {"content-type": "text/html; charset=utf-8"})


def inband_error(message: str = "boom") -> RawReply:
    """``{"error": {"message": ...}}`` with status 200."""
    return RawReply(200, compact_json({"error": {"message": message}}))


def sse_recording(turn: Turn | Normal, wire: WireName) -> bytes:
    """The SSE body of a proper streamed reply (for ``Split``): ids start at 1."""
    normal = turn if isinstance(turn, Normal) else Normal(turn)
    reply = render(normal.turn, wire, ids=itertools.count(1))
    return b"".join(stream_frames(reply, wire, normal.pieces, normal.usage_chunk))
