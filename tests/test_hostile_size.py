"""Issue 14, item 4: what a server sends cannot take unbounded memory or time.

``ClientConfig.max_response_bytes`` (16 MiB by default) bounds, counted after decompression
as the bytes arrive: a plain body, one SSE line or event, and what a stream gathers. Past
it the request fails ``response_too_large`` (not retried), naming the limit and the option
that raises it, and reading stops there. Before: a 2 MB gzip body inflating to 2 GB took
4.2 GB and succeeded, a 600 MB plain reply took 3.7 GB and became the answer, one 32 MB
SSE line took 15 s (the parser re-scanned its buffer), a gzip-compressed stream spun.
"""

from __future__ import annotations

import functools
import json
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelClient, ModelRequest, Wire, connect
from minipi.ai.sse import LineTooLong, SSEParser
from minipi.errors import ModelError, ModelHTTPError, ModelProtocolError
from support.cli import json_lines
from support.fake import Exchange, FakeServer, RawReply, Step, Turn
from support.faults import sse_recording
from support.rel import ask_cli

pytestmark = pytest.mark.reliability

MiB = 1024 * 1024
SMALL = ClientConfig(max_response_bytes=1 * MiB, max_retries=2, backoff_base=0.01)


def _reply(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"id": "c1", "object": "chat.completion", "choices": [choice]}).encode()


@functools.cache
def gzip_bomb(megabytes: int) -> bytes:
    """Gzip of ``megabytes`` MiB of spaces, then a proper chat reply: valid JSON once
    inflated whole (JSON allows leading whitespace), so reading it all "succeeds"."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * MiB
    parts = [packer.compress(block) for _ in range(megabytes)]
    return b"".join([*parts, packer.compress(_reply("inflated")), packer.flush()])


@dataclass(frozen=True)
class Bomb:
    """``gzip_bomb(megabytes)`` as a plain reply (made when played: not at collection)."""

    megabytes: int

    def play(self, exchange: Exchange) -> None:
        exchange.send(200, gzip_bomb(self.megabytes), {"content-encoding": "gzip"})


@dataclass(frozen=True)
class Flood:
    """A 200 whose body is ``megabytes`` MiB: a chat reply whose content is that long, sent
    with a content length (``chunked``: in chunked encoding, ``sse``: as one stream event),
    compressed with gzip when ``gzip``."""

    megabytes: int
    sse: bool = False
    gzip: bool = False

    def play(self, exchange: Exchange) -> None:
        kind = "text/event-stream" if self.sse else "application/json"
        headers = {"content-type": kind, "transfer-encoding": "chunked"}
        if self.gzip:
            headers["content-encoding"] = "gzip"
        exchange.head(200, headers)
        packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS) if self.gzip else None
        prefix = b"data: " if self.sse else b""
        head, tail = prefix + _reply("").split(b'"content": ""')[0] + b'"content": "', b'"}'
        pieces = [head, *[b"a" * MiB] * self.megabytes, tail, b"\n\n"]
        try:
            for piece in pieces:
                data = packer.compress(piece) if packer else piece
                exchange.chunk(data)
            if packer:
                exchange.chunk(packer.flush())
            exchange.end()
        except OSError:  # the client stopped reading: what it should do
            exchange.close()


@dataclass(frozen=True)
class ManyDeltas:
    """A chat stream of ``megabytes`` MiB of text, in deltas of 64 KiB each."""

    megabytes: int

    def play(self, exchange: Exchange) -> None:
        exchange.stream_head()
        piece = "b" * (64 * 1024)
        frame = {"id": "c1", "object": "chat.completion.chunk"}
        try:
            count = self.megabytes * 16
            for n in range(count + 1):
                delta, end = ({"content": piece}, None) if n < count else ({}, "stop")
                choice = {"index": 0, "delta": delta, "finish_reason": end}
                exchange.chunk(b"data: " + json.dumps({**frame, "choices": [choice]}).encode())
                exchange.chunk(b"\n\n")
            exchange.chunk(b"data: [DONE]\n\n")
            exchange.end()
        except OSError:
            exchange.close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def ask(client: ModelClient) -> str:
    response = client.create(ModelRequest([Message("user", "hi")]))
    return "".join(getattr(item, "text", "") for item in response.items)


def failure(
    server: FakeServer, config: ClientConfig = SMALL, wire: Wire = "chat"
) -> tuple[ModelError, float]:
    started = time.monotonic()
    client = connect(Endpoint(server.base_url, "fake-model", wire=wire), config)
    with closing(client), pytest.raises(ModelError) as caught:
        ask(client)
    return caught.value, time.monotonic() - started


def assert_too_large(error: ModelError, limit: str = "1 MiB") -> None:
    assert error.code == "response_too_large"
    assert f"larger than {limit}" in error.message
    assert "--max-response-mb" in error.message
    assert "max_response_bytes" in error.message


# --- plain replies ---------------------------------------------------------------------------


@pytest.mark.parametrize("fault", [Flood(50), Flood(50, gzip=True)], ids=["plain", "gzip-flood"])
def test_a_flood_is_cut_at_the_limit_not_read_to_its_end(server: FakeServer, fault: Flood) -> None:
    server.add(fault)
    error, seconds = failure(server)
    assert_too_large(error)
    assert seconds < 2
    assert server.posts == 1  # not retried: it would come again


def test_a_gzip_bomb_is_cut_after_the_limit_of_inflated_bytes(server: FakeServer) -> None:
    assert len(gzip_bomb(100)) < MiB  # 100 MiB inflated from ~0.1 MB
    server.add(Bomb(100))
    tracemalloc.start()
    try:
        error, seconds = failure(server, replace(SMALL, max_response_bytes=16 * MiB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_too_large(error, "16 MiB")
    assert seconds < 3
    assert peak < 40 * MiB  # the limit and one piece, not the 100 MiB inflated


def test_a_small_gzip_reply_is_still_read(server: FakeServer) -> None:
    server.add(RawReply(200, gzip_bomb(1), {"content-encoding": "gzip"}))
    config = replace(SMALL, max_response_bytes=2 * MiB)  # 1 MiB of spaces, then the reply
    with closing(connect(Endpoint(server.base_url, "fake-model"), config)) as client:
        assert ask(client) == "inflated"


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS], ids=["zlib", "raw"])
def test_deflate_bodies_of_both_kinds_are_read(server: FakeServer, wbits: int) -> None:
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = packer.compress(_reply("deflated")) + packer.flush()
    server.add(RawReply(200, body, {"content-encoding": "deflate"}))
    with closing(connect(Endpoint(server.base_url, "fake-model"), SMALL)) as client:
        assert ask(client) == "deflated"


def test_an_encoding_minipi_did_not_ask_for_is_refused(server: FakeServer) -> None:
    server.add(RawReply(200, b"\x1b\x00\x00", {"content-encoding": "br"}))
    error, _ = failure(server)
    assert isinstance(error, ModelProtocolError)
    assert "'br', which minipi did not ask for" in error.message
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


def test_a_huge_error_page_is_read_only_for_its_message(server: FakeServer) -> None:
    server.add(RawReply(400, b'{"error": {"message": "' + b"x" * (40 * MiB) + b'"}}'))
    error, seconds = failure(server)
    assert isinstance(error, ModelHTTPError)
    assert error.code == "bad_request"
    assert seconds < 2
    assert len(error.message) < 1000


def test_a_deeply_nested_reply_is_refused_at_the_decoder(server: FakeServer) -> None:
    """Hundreds of levels parse in Python, and crashed a later ``json.dumps`` (the session's:
    ``test_hostile_crash`` runs the CLI case of 968 levels)."""
    body = _reply("hi")[:-1] + b', "extra": ' + b"[" * 500 + b"]" * 500 + b"}"
    server.add(RawReply(200, body))
    error, _ = failure(server)
    assert "more than 100 levels deep" in error.message


@pytest.mark.parametrize("value", [b"{}", b'"ab"', b"0.5", b"[]"])
def test_millions_of_tiny_values_are_refused_before_parsing(
    server: FakeServer, value: bytes
) -> None:
    """16 MiB of ``{},`` parsed to 5.6 million dicts: 846 MiB and 30 s for one run."""
    count = (16 * MiB) // (len(value) + 1)
    body = _reply("hi")[:-1] + b', "x": [' + b",".join([value] * count) + b"]}"
    server.add(RawReply(200, body))
    tracemalloc.start()
    try:
        error, seconds = failure(server, replace(SMALL, max_response_bytes=32 * MiB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "more than 1,000,000 JSON values" in error.message
    assert seconds < 3
    assert peak < 80 * MiB  # the body itself, not millions of objects


# --- streams ---------------------------------------------------------------------------------


def test_one_endless_sse_line_is_cut_at_the_limit_in_linear_time(server: FakeServer) -> None:
    server.add(Flood(32, sse=True))
    error, seconds = failure(server, replace(SMALL, stream=True, max_response_bytes=16 * MiB))
    assert_too_large(error, "16 MiB")
    assert "stream line" in error.message
    assert seconds < 3  # before: 15 s, quadratic in the line


def test_a_gzip_compressed_stream_is_read(server: FakeServer, wire: Wire) -> None:
    recording = sse_recording(Turn("zipped stream"), wire)
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = packer.compress(recording) + packer.flush()
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    server.add(RawReply(200, body, headers))
    config = replace(SMALL, stream=True)
    with closing(connect(Endpoint(server.base_url, "fake-model", wire=wire), config)) as c:
        assert ask(c) == "zipped stream"


def test_a_gzip_bomb_stream_is_cut_quickly(server: FakeServer) -> None:
    server.add(Flood(64, sse=True, gzip=True))
    error, seconds = failure(server, replace(SMALL, stream=True))
    assert_too_large(error)
    assert seconds < 3  # before: 34 s of spinning in the parser


def test_a_stream_that_gathers_too_much_is_cut(server: FakeServer) -> None:
    server.add(ManyDeltas(64))
    error, seconds = failure(server, replace(SMALL, stream=True))
    assert_too_large(error)
    assert "streamed reply" in error.message
    assert seconds < 3


def test_a_stream_within_the_limit_is_whole(server: FakeServer) -> None:
    server.add(ManyDeltas(1))
    config = replace(SMALL, stream=True, max_response_bytes=2 * MiB)
    with closing(connect(Endpoint(server.base_url, "fake-model"), config)) as client:
        assert ask(client) == "b" * MiB


# --- the SSE parser is linear ----------------------------------------------------------------


def test_the_parser_does_not_rescan_a_growing_line() -> None:
    parser = SSEParser()
    started = time.monotonic()
    parser.feed(b"data: ")
    for _ in range(512):  # 32 MiB in 64 KiB chunks
        assert parser.feed(b"a" * 65536) == []
    events = parser.feed(b"\n\n")
    assert time.monotonic() - started < 2
    assert len(events) == 1
    assert len(events[0][1]) == 32 * MiB


def test_the_parser_bounds_a_line_and_an_event() -> None:
    with pytest.raises(LineTooLong):
        SSEParser(1000).feed(b"data: " + b"a" * 1001)
    with pytest.raises(LineTooLong):  # many short data lines make one long event
        SSEParser(1000).feed(b"data: 0123456789\n" * 200)
    parser = SSEParser(1000)
    for _ in range(200):  # many short events are fine
        assert parser.feed(b"data: 0123456789\n\n") == [("message", "0123456789")]


# --- through the real CLI -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "flags"),
    [
        (Flood(100), ("--no-stream",)),
        (Bomb(300), ("--no-stream",)),
        (Flood(100, sse=True), ()),
        (ManyDeltas(40), ()),
    ],
    ids=["plain-flood", "gzip-bomb", "sse-line", "many-deltas"],
)
def test_cli_run_fails_response_too_large_in_bounded_time(
    server: FakeServer, tmp_path: Path, fault: Step, flags: tuple[str, ...]
) -> None:
    server.add(fault)
    started = time.monotonic()
    proc = ask_cli(server, "chat", tmp_path, "--json", *flags)
    assert proc.returncode == 1, proc.stderr
    end = json_lines(proc.stdout)[-1]
    assert end["type"] == "run_end"
    assert end["code"] == "response_too_large"
    assert end["answer"] == ""
    assert "--max-response-mb" in end["error"]
    assert time.monotonic() - started < 15
    assert server.posts == 1
