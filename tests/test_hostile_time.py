"""Issue 14, item 3: no hang past every limit.

``ModelRequest.deadline`` (the run's ``--max-seconds``) bounds the whole request in the HTTP
layer: connecting, sending, waiting, a body that trickles in, a stream of empty deltas or
keep-alive comments, retries and their waits; past it the request fails
``ModelDeadlineError`` (code ``max_seconds``). Without a deadline, ``read_timeout`` bounds a
plain exchange as a whole (before, each byte restarted it: a trickle ran forever) and
``stream_idle_timeout`` bounds the time without progress (empty deltas are not progress).
A stream is complete at its end marker: pings after ``[DONE]`` do not hold the reply.

Each fault is a step of the one ``FakeServer`` (real HTTP on 127.0.0.1), played to the real
client and, where the user sees it, to the real ``minipi`` command.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelClient, ModelRequest, Wire, connect
from minipi.ai.bounds import bound_client
from minipi.ai.http import HttpCore
from minipi.errors import ModelDeadlineError, ModelError, ModelStreamError, ModelTimeoutError
from support.cli import json_lines
from support.fake import Exchange, FakeServer, Step, Turn
from support.faults import Drip, Stall, error_status
from support.rel import ask_cli

pytestmark = pytest.mark.reliability

E = TypeVar("E", bound=ModelError)

SLOW = 0.25
"""Seconds between two pieces of a trickle: every fault below would run for minutes."""


@dataclass(frozen=True)
class Trickle:
    """A 200 whose JSON body (a proper reply to ``turn``) comes one byte every ``every`` s;
    ``headers`` too when ``slow_head`` (the status line and headers trickle as well)."""

    turn: Turn
    every: float = SLOW
    slow_head: bool = False

    def play(self, exchange: Exchange) -> None:
        body = json.dumps(exchange.render(self.turn)).encode()
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        if not self.slow_head:
            exchange.write(head)
        data = body if not self.slow_head else head + body
        for byte in data:
            if exchange.gone(self.every):
                break
            exchange.write(bytes([byte]))
        exchange.close()


@dataclass(frozen=True)
class EmptyDeltas:
    """A chat stream that sends a delta with nothing in it every ``every`` s, for ever."""

    every: float = SLOW

    def play(self, exchange: Exchange) -> None:
        exchange.stream_head()
        frame: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk"}
        frame["choices"] = [{"index": 0, "delta": {}, "finish_reason": None}]
        if exchange.request.wire == "responses":
            frame = {"type": "response.in_progress", "response": {"id": "r1"}}
        line = b"data: " + json.dumps(frame).encode() + b"\n\n"
        while not exchange.gone(self.every):
            exchange.chunk(line)
        exchange.close()


@dataclass(frozen=True)
class PingsAfterDone:
    """A proper streamed reply to ``turn``, end marker included, then the body kept open with
    ``: ping`` comments every ``every`` s for a minute (the chunked body never ends)."""

    turn: Turn
    every: float = SLOW

    def play(self, exchange: Exchange) -> None:
        exchange.stream_head()
        for frame in exchange.frames(self.turn):
            exchange.chunk(frame)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not exchange.gone(self.every):
            exchange.chunk(b": ping\n\n")
        exchange.close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


PATIENT = ClientConfig(read_timeout=60, stream_idle_timeout=60, max_retries=2, backoff_base=0.01)
"""Timeouts far longer than the tests: only the deadline can end them in time."""


def client_of(server: FakeServer, wire: Wire, config: ClientConfig, stream: bool) -> ModelClient:
    config = replace(config, stream=stream)
    return connect(Endpoint(server.base_url, "fake-model", wire=wire), config)


def ask(client: ModelClient, deadline: float | None = None) -> str:
    response = client.create(ModelRequest([Message("user", "hi")], deadline=deadline))
    return "".join(getattr(item, "text", "") for item in response.items)


def past_deadline(
    server: FakeServer, wire: Wire, *, stream: bool, seconds: float = 1.0
) -> tuple[ModelDeadlineError, float]:
    """The deadline error of one request given ``seconds``, and how long it took."""
    started = time.monotonic()
    with (
        closing(client_of(server, wire, PATIENT, stream)) as client,
        pytest.raises(ModelDeadlineError) as caught,
    ):
        ask(client, started + seconds)
    return caught.value, time.monotonic() - started


def failure(server: FakeServer, wire: Wire, config: ClientConfig, kind: type[E]) -> tuple[E, float]:
    """The error of kind ``kind`` one request without a deadline ends with, and its time."""
    started = time.monotonic()
    client = connect(Endpoint(server.base_url, "fake-model", wire=wire), config)
    with closing(client), pytest.raises(kind) as caught:
        ask(client)
    return caught.value, time.monotonic() - started


# --- the deadline bounds every phase ---------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    "fault",
    [
        Trickle(Turn("a long answer " * 20)),
        Trickle(Turn("x"), slow_head=True),
        Stall(60),
        Stall(60, headers=True),
        Drip(60, every=SLOW),
        EmptyDeltas(),
    ],
    ids=["body-trickle", "header-trickle", "stall", "stall-after-head", "keepalives", "empty"],
)
def test_the_deadline_bounds_the_whole_request(
    server: FakeServer, wire: Wire, stream: bool, fault: Step
) -> None:
    server.add(fault)
    error, seconds = past_deadline(server, wire, stream=stream)
    assert 0.9 <= seconds < 2.5
    assert error.code == "max_seconds"
    assert "--max-seconds" in error.message
    assert server.posts == 1  # a deadline is never retried
    assert server.wait_idle() == 0


def test_no_retry_sleeps_past_the_deadline(server: FakeServer, wire: Wire) -> None:
    server.add(error_status(503, "busy", retry_after="5"), Turn("too late"))
    error, seconds = past_deadline(server, wire, stream=False, seconds=2.0)
    assert seconds < 1.0  # known at once: the wait would end after the deadline
    assert "before the request could be retried" in error.message
    assert "busy" in error.message
    assert server.posts == 1


def test_a_passed_deadline_sends_nothing(server: FakeServer, wire: Wire) -> None:
    server.add(Turn("never"))
    error, seconds = past_deadline(server, wire, stream=False, seconds=-1.0)
    assert seconds < 0.5
    assert "before the request was sent" in error.message
    assert server.posts == 0


def test_retries_run_while_the_deadline_allows(server: FakeServer, wire: Wire) -> None:
    server.add(error_status(503, "busy"), Turn("ok"))
    with closing(client_of(server, wire, PATIENT, False)) as client:
        assert ask(client, time.monotonic() + 10) == "ok"
    assert server.posts == 2


def test_every_pool_of_the_client_is_bounded() -> None:
    """The mechanism itself: httpx keeps its pool's network backend where it is set."""
    with httpx.Client() as plain:
        assert bound_client(plain) == 1
        assert bound_client(plain) == 1  # installed once
    for base in ("http://127.0.0.1:9/v1", "https://127.0.0.1:9/v1"):
        core = HttpCore(Endpoint(base, "m"), ClientConfig())
        try:
            assert bound_client(core._client) == 1  # bounded already, by HttpCore itself
        finally:
            core.close()


# --- without a deadline: the timeouts bound the exchange as a whole -------------------------


def test_read_timeout_bounds_a_trickling_plain_answer_in_all(
    server: FakeServer, wire: Wire
) -> None:
    server.add(Trickle(Turn("a long answer " * 20)))
    config = ClientConfig(read_timeout=1.0, max_retries=0)
    error, seconds = failure(server, wire, config, ModelTimeoutError)
    assert 0.9 <= seconds < 2.0
    assert error.code == "timeout"
    assert "1 s read timeout" in error.message


def test_read_timeout_bounds_a_plain_answer_to_a_stream_request(
    server: FakeServer, wire: Wire
) -> None:
    """A server that answers a stream request with plain JSON: bounded like a plain one."""
    server.add(Trickle(Turn("a long answer " * 20)))
    config = ClientConfig(read_timeout=1.0, stream_idle_timeout=60, max_retries=0)
    _, seconds = failure(server, wire, replace(config, stream=True), ModelTimeoutError)
    assert seconds < 2.0


def test_empty_deltas_do_not_hold_the_idle_timeout_off(server: FakeServer, wire: Wire) -> None:
    server.add(EmptyDeltas(every=0.1))
    config = ClientConfig(stream_idle_timeout=0.8, max_retries=0)
    error, seconds = failure(server, wire, replace(config, stream=True), ModelStreamError)
    assert 0.7 <= seconds < 2.0
    assert error.code == "stream_stalled"
    assert "empty deltas do not count" in error.message


def test_a_slow_but_progressing_stream_is_not_idle(server: FakeServer, wire: Wire) -> None:
    """Progress resets the idle timeout: 12 pieces 0.1 s apart pass a 0.5 s idle timeout."""

    @dataclass(frozen=True)
    class Slow:
        def play(self, exchange: Exchange) -> None:
            exchange.stream_head()
            for frame in exchange.frames(Turn("one two three four"), n=12):
                exchange.chunk(frame)
                time.sleep(0.1)
            exchange.end()

    server.add(Slow())
    config = ClientConfig(stream_idle_timeout=0.5, max_retries=0, stream=True)
    with closing(client_of(server, wire, config, True)) as client:
        assert ask(client) == "one two three four"


# --- a stream is complete at its end marker -------------------------------------------------


def test_pings_after_done_do_not_hold_the_reply(server: FakeServer, wire: Wire) -> None:
    server.add(PingsAfterDone(Turn("the answer")), Turn("next"))
    started = time.monotonic()
    with closing(client_of(server, wire, PATIENT, True)) as client:
        assert ask(client) == "the answer"
        assert time.monotonic() - started < 1.0
        assert ask(client) == "next"  # the held-open connection was closed, not reused
    assert server.connections == 2
    assert server.wait_idle() == 0


def test_a_proper_stream_still_reuses_its_connection(server: FakeServer, wire: Wire) -> None:
    server.add(Turn("one"), Turn("two"), Turn("three"))
    with closing(client_of(server, wire, PATIENT, True)) as client:
        assert [ask(client) for _ in range(3)] == ["one", "two", "three"]
    assert server.connections == 1


# --- through the real CLI -------------------------------------------------------------------


def _cli_run(
    server: FakeServer, wire: Wire, tmp_path: Path, *flags: str
) -> tuple[dict[str, object], float, int]:
    started = time.monotonic()
    proc = ask_cli(server, wire, tmp_path, "--json", *flags)
    end = json_lines(proc.stdout)[-1]
    assert end["type"] == "run_end"
    return end, time.monotonic() - started, proc.returncode


@pytest.mark.parametrize(
    ("fault", "wire", "flags"),
    [
        (Trickle(Turn("a long answer " * 20)), "chat", ("--no-stream",)),
        (Trickle(Turn("a long answer " * 20)), "responses", ("--no-stream",)),
        (EmptyDeltas(), "chat", ()),
        (Drip(60, every=SLOW), "responses", ()),
        (Trickle(Turn("x"), slow_head=True), "chat", ()),
    ],
    ids=["trickle-chat", "trickle-responses", "empty-deltas", "keepalives", "header-trickle"],
)
def test_cli_max_seconds_ends_a_hanging_request(
    server: FakeServer, wire: Wire, tmp_path: Path, fault: Step, flags: tuple[str, ...]
) -> None:
    server.add(fault)
    end, seconds, code = _cli_run(server, wire, tmp_path, "--max-seconds", "2", *flags)
    assert code == 3
    assert end["status"] == "budget_exhausted"
    assert end["code"] == "max_seconds"
    assert end["answer"] == ""
    assert seconds < 10  # 2 s of budget plus the start of python and minipi
    assert server.posts == 1


def test_cli_timeout_ends_a_trickle_without_max_seconds(server: FakeServer, tmp_path: Path) -> None:
    server.add(*[Trickle(Turn("a long answer " * 20))] * 3)
    end, seconds, code = _cli_run(server, "chat", tmp_path, "--timeout", "1", "--no-stream")
    assert code == 1
    assert end["code"] == "timeout"
    assert seconds < 12  # 3 attempts of 1 s, the backoff, the start
    assert server.posts == 3


def test_cli_answer_comes_at_done_despite_pings(
    server: FakeServer, wire: Wire, tmp_path: Path
) -> None:
    server.add(PingsAfterDone(Turn("all good")))
    started = time.monotonic()
    proc = ask_cli(server, wire, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "all good"
    assert time.monotonic() - started < 8
