"""RELIABILITY group E (HTTP faults), through the real client and the real ``minipi`` command.

Every case runs on both wires against ``FakeServer`` (real HTTP on 127.0.0.1). The client
cases count what the server saw (exactly ``1 + max_retries`` attempts for a fault worth
retrying, exactly one otherwise), bound the time taken, and check the error's ``code`` and
that its message says what to do. The CLI cases check the exit code, that no answer is
printed for a failed run, and that no traceback ever reaches the user.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, run_agent, tool_from_function
from minipi.ai import ClientConfig, Endpoint, Message, ModelClient, ModelRequest, Wire, connect
from minipi.errors import ModelError
from minipi.local.ports import free_port
from support.cli import json_lines
from support.fake import Call, FakeServer, RawReply, Turn
from support.faults import (
    Cut,
    Drip,
    Events,
    Reset,
    Stall,
    data,
    error_status,
    html_page,
    inband_error,
    sse_recording,
)
from support.rel import ask_cli

pytestmark = pytest.mark.reliability

FAST = ClientConfig(connect_timeout=1.0, read_timeout=2.0, max_retries=2, backoff_base=0.01)
"""The real retry policy with a tiny backoff."""
STALLING = ClientConfig(connect_timeout=1.0, read_timeout=0.3, max_retries=1, backoff_base=0.01)
"""For stalls: a short read timeout, one retry."""


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake_server:
        yield fake_server


def client_of(
    server: FakeServer, wire: Wire, config: ClientConfig = FAST, model: str = "fake-model"
) -> ModelClient:
    return connect(Endpoint(server.base_url, model, wire=wire), config)


def ask(client: ModelClient, model: str = "fake-model") -> str:
    """The reply's text (the call fails the test if it raises anything but a ModelError)."""
    response = client.create(ModelRequest([Message("user", "hi")]))
    return "".join(getattr(item, "text", "") for item in response.items)


def answer(
    server: FakeServer, wire: Wire, config: ClientConfig = FAST, model: str = "fake-model"
) -> str:
    """The reply's text to one request, from a client closed afterwards."""
    with closing(client_of(server, wire, config, model)) as client:
        return ask(client, model)


def fails(
    server: FakeServer, wire: Wire, config: ClientConfig = FAST, model: str = "fake-model"
) -> tuple[ModelError, float]:
    """The ModelError one request ends with, and the seconds it took."""
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        answer(server, wire, config, model)
    return caught.value, time.monotonic() - started


def cli_failure(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``run_end`` event of a failed ``--json`` run (exit 1, nothing but events)."""
    assert proc.returncode == 1, proc.stderr
    end = json_lines(proc.stdout)[-1]
    assert end["type"] == "run_end"
    assert end["status"] == "failed"
    assert end["answer"] == ""
    return end


# --- E1, E2: 429 and Retry-After ----------------------------------------------------------


def test_e1_429_with_retry_after_1_is_waited_for(server: FakeServer, wire: Wire) -> None:
    server.add(error_status(429, "slow down", retry_after="1"), Turn("ok"))
    started = time.monotonic()
    assert answer(server, wire) == "ok"
    assert 0.95 <= time.monotonic() - started < 3
    assert server.posts == 2


def test_e1_cli_run_succeeds_after_the_wait(server: FakeServer, wire: Wire, tmp_path: Path) -> None:
    server.add(error_status(429, "slow down", retry_after="1"), Turn("all good"))
    started = time.monotonic()
    proc = ask_cli(server, wire, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "all good"
    assert time.monotonic() - started >= 0.95
    assert server.posts == 2


def test_e2_long_retry_after_fails_at_once_showing_the_delay(
    server: FakeServer, wire: Wire
) -> None:
    server.add(error_status(429, "quota exceeded", retry_after="3600"), Turn("never"))
    error, seconds = fails(server, wire)
    assert seconds < 1
    assert error.code == "rate_limited"
    assert "3600 s" in error.message
    assert "quota exceeded" in error.message
    assert server.posts == 1


def test_e2_cli_is_not_a_success(server: FakeServer, wire: Wire, tmp_path: Path) -> None:
    server.add(error_status(429, "quota exceeded", retry_after="3600"))
    end = cli_failure(ask_cli(server, wire, tmp_path, "--json"))
    assert end["code"] == "rate_limited"
    assert "3600 s" in end["error"]
    assert server.posts == 1
    server.add(error_status(429, "quota exceeded", retry_after="3600"))
    proc = ask_cli(server, wire, tmp_path)  # the human log says it too, on stderr
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "rate_limited" in proc.stderr
    assert "3600 s" in proc.stderr


def test_e2_a_429_every_time_fails_rate_limited_after_the_retries(
    server: FakeServer, wire: Wire
) -> None:
    server.add(*[error_status(429, "busy")] * 4)
    error, _ = fails(server, wire)
    assert error.code == "rate_limited"
    assert "3 attempts" in error.message
    assert server.posts == 3


@pytest.mark.parametrize("status", [408, 409])
def test_e3_408_and_409_are_retried_like_5xx(server: FakeServer, wire: Wire, status: int) -> None:
    server.add(error_status(status, "try later"), Turn("ok"))
    assert answer(server, wire) == "ok"
    assert server.posts == 2


def test_e1_retry_after_ms_is_honoured(server: FakeServer, wire: Wire) -> None:
    busy = RawReply(429, b'{"error": {"message": "busy"}}', {"retry-after-ms": "400"})
    server.add(busy, Turn("ok"))
    started = time.monotonic()
    assert answer(server, wire) == "ok"
    assert 0.38 <= time.monotonic() - started < 2


# --- E3: 5xx on every attempt --------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503])
@pytest.mark.parametrize("retries", [0, 1, 3])
def test_e3_5xx_is_tried_exactly_1_plus_max_retries_times(
    server: FakeServer, wire: Wire, status: int, retries: int
) -> None:
    server.add(*[error_status(status, "upstream down")] * (retries + 2))
    config = ClientConfig(max_retries=retries, backoff_base=0.01, read_timeout=2.0)
    error, seconds = fails(server, wire, config)
    assert server.posts == 1 + retries
    assert server.remaining == 1  # not one request more
    assert error.code == "endpoint_unavailable"
    assert str(status) in error.message
    assert "upstream down" in error.message
    assert "try again later" in error.message
    assert seconds < 2


def test_e3_5xx_then_success_is_transparent(server: FakeServer, wire: Wire) -> None:
    server.add(error_status(502), error_status(503), Turn("ok"))
    assert answer(server, wire) == "ok"
    assert server.posts == 3


def test_e3_cli_fails_after_the_default_retries_in_bounded_time(
    server: FakeServer, wire: Wire, tmp_path: Path
) -> None:
    server.add(*[error_status(503, "overloaded")] * 4)
    started = time.monotonic()
    end = cli_failure(ask_cli(server, wire, tmp_path, "--json"))
    assert time.monotonic() - started < 10  # backoff 0.5 s + 1 s, plus start-up
    assert end["code"] == "endpoint_unavailable"
    assert "overloaded" in end["error"]
    assert server.posts == 3  # the CLI's default max_retries is 2


def test_e3_run_agent_fails_with_the_code_and_a_valid_history(
    server: FakeServer, wire: Wire
) -> None:
    server.add(*[error_status(500)] * 3)
    with closing(client_of(server, wire)) as client:
        result = run_agent(client, [], AgentConfig(), "hi")
    assert result.status == "failed"
    assert result.code == "endpoint_unavailable"
    assert result.answer == ""
    assert result.turns == 1
    assert server.posts == 3


# --- E4: errors that retrying cannot fix ---------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "code", "advice"),
    [
        (400, "This model's maximum context length is 4096 tokens", "bad_request", "context"),
        (400, "Unrecognized request argument supplied: foo", "bad_request", "foo"),
        (401, "Incorrect API key provided", "unauthorized", "--api-key"),
        (403, "forbidden", "unauthorized", "OPENAI_API_KEY"),
        (422, "unprocessable", "http_422", "unprocessable"),
    ],
)
def test_e4_4xx_is_not_retried_and_says_what_to_change(
    server: FakeServer, wire: Wire, status: int, message: str, code: str, advice: str
) -> None:
    server.add(error_status(status, message), Turn("never"))
    error, _ = fails(server, wire)
    assert server.posts == 1
    assert error.code == code
    assert advice in error.message
    assert message in error.message
    assert server.base_url in error.message


def test_e4_unknown_model_names_it_and_lists_the_served_ones(
    server: FakeServer, wire: Wire
) -> None:
    error, _ = fails(server, wire, model="qwen3:0.6b")
    assert error.code == "model_not_found"
    assert error.message.startswith(f"model 'qwen3:0.6b' not found at {server.base_url}")
    assert "available: fake-model" in error.message
    assert server.posts == 1


def test_e4_wrong_base_url_points_at_it(server: FakeServer, wire: Wire) -> None:
    endpoint = Endpoint(server.base_url.removesuffix("/v1") + "/api", "fake-model", wire=wire)
    with closing(connect(endpoint, FAST)) as client, pytest.raises(ModelError) as caught:
        ask(client)
    assert caught.value.code == "not_found"
    assert "check --base-url" in caught.value.message
    assert len(server.requests) == 1


def test_e4_cli_unknown_model_and_bad_key(server: FakeServer, wire: Wire, tmp_path: Path) -> None:
    proc = ask_cli(server, wire, tmp_path, model="qwen3:0.6b")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "model 'qwen3:0.6b' not found" in proc.stderr
    assert "QWEN_MODEL" in proc.stderr
    server.add(error_status(401, "Incorrect API key provided"))
    proc = ask_cli(server, wire, tmp_path, "--api-key", "sk-wrong-key")
    assert proc.returncode == 1
    assert "the API key was refused" in proc.stderr
    assert "sk-wrong-key" not in proc.stderr


def test_e4_a_redirect_is_not_followed_nor_retried(server: FakeServer, wire: Wire) -> None:
    server.add(RawReply(302, b"", {"location": "https://example.com/v1/x"}), Turn("no"))
    error, _ = fails(server, wire)
    assert server.posts == 1
    assert "302" in error.message
    assert server.base_url in error.message
    assert "redirected (302) to https://example.com/v1/x" in error.message
    assert error.code == "redirected"


def test_e5_a_connection_cut_mid_answer_is_not_called_unreachable(
    server: FakeServer, wire: Wire
) -> None:
    server.add(*[Cut(PARTIAL, then="close", chunked=False)] * 3)
    error, _ = fails(server, wire)
    assert "dropped before the answer was complete" in error.message
    assert "is the server running" not in error.message


# --- E5: nobody listening, no such host, resets --------------------------------------------


def test_e5_connection_refused_fails_fast_after_retries(wire: Wire) -> None:
    endpoint = Endpoint(f"http://127.0.0.1:{free_port()}/v1", "m", wire=wire)
    started = time.monotonic()
    with closing(connect(endpoint, FAST)) as client, pytest.raises(ModelError) as caught:
        ask(client, "m")
    assert time.monotonic() - started < 3
    assert caught.value.code == "endpoint_unreachable"
    assert "is the server running?" in caught.value.message
    assert "3 attempts" in caught.value.message


def test_e5_unknown_host_fails_within_the_connect_budget(wire: Wire) -> None:
    endpoint = Endpoint("http://no-such-host.invalid/v1", "m", wire=wire)
    started = time.monotonic()
    with closing(connect(endpoint, FAST)) as client, pytest.raises(ModelError) as caught:
        ask(client, "m")
    assert time.monotonic() - started < 5 * 3
    assert caught.value.code in ("endpoint_unreachable", "timeout")
    assert "no-such-host.invalid" in caught.value.message


def test_e5_reset_every_time_is_retried_then_fails(server: FakeServer, wire: Wire) -> None:
    server.add(Reset(), Reset(), Reset(), Turn("never"))
    error, seconds = fails(server, wire)
    assert server.posts == 3
    assert error.code == "endpoint_unreachable"
    assert seconds < 2


def test_e5_one_reset_is_transparent(server: FakeServer, wire: Wire) -> None:
    server.add(Reset(), Turn("ok"))
    assert answer(server, wire) == "ok"
    assert server.posts == 2


def test_e5_cli_server_down(tmp_path: Path) -> None:
    """One wire: nothing wire-specific happens before a connection exists."""
    started = time.monotonic()
    proc = ask_cli(f"http://127.0.0.1:{free_port()}/v1", "chat", tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "is the server running?" in proc.stderr
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_e5_a_keep_alive_connection_the_server_closed_is_not_an_error(
    server: FakeServer, wire: Wire, stream: bool
) -> None:
    server.add(Turn("one"), Turn("two"))
    with closing(client_of(server, wire, replace(FAST, stream=stream))) as client:
        assert ask(client) == "one"
        server.hang_up()  # the server's keep-alive timeout
        assert server.wait_idle() == 0
        assert ask(client) == "two"
    assert server.posts == 2


# --- E6, E7 (not streamed): stalls ---------------------------------------------------------


@pytest.mark.parametrize("headers", [False, True], ids=["before-headers", "after-headers"])
def test_e6_a_stall_times_out_retries_once_then_fails(
    server: FakeServer, wire: Wire, headers: bool
) -> None:
    server.add(Stall(30, headers=headers), Stall(30, headers=headers), Turn("never"))
    error, seconds = fails(server, wire, STALLING)
    assert seconds < 2  # two 0.3 s reads, never the server's 30 s
    assert error.code == "timeout"
    assert "0.3 s read timeout (2 attempts)" in error.message
    assert server.posts == 2
    assert server.wait_idle() == 0  # the client hung up on both stalled connections


def test_e6_a_stall_then_an_answer(server: FakeServer, wire: Wire) -> None:
    server.add(Stall(30), Turn("ok"))
    assert answer(server, wire, STALLING) == "ok"
    assert server.posts == 2


def test_e7_half_a_body_then_silence_is_never_the_answer(server: FakeServer, wire: Wire) -> None:
    partial = Turn("PARTIAL " * 40)
    server.add(Cut(partial, then="stall"), Cut(partial, then="stall"), Turn("never"))
    error, seconds = fails(server, wire, STALLING)
    assert error.code == "timeout"
    assert "PARTIAL" not in error.message
    assert seconds < 2
    assert server.posts == 2


@pytest.mark.parametrize("then", ["close", "reset"])
def test_e7_half_a_body_then_hang_up(server: FakeServer, wire: Wire, then: Any) -> None:
    partial = Turn("PARTIAL " * 40)
    server.add(*[Cut(partial, then=then)] * 3, Turn("never"))
    error, _ = fails(server, wire)
    assert error.code == "endpoint_unreachable"
    assert "PARTIAL" not in error.message
    assert server.posts == 3


# --- E10-E12 (not streamed): bodies that are not an answer ---------------------------------

MALFORMED: dict[str, dict[str, bytes]] = {
    "chat": {
        "truncated-json": b'{"choices":[{"message":{"content":"hi"',
        "no-choices": b'{"id":"x","object":"chat.completion","choices":[]}',
        "choices-null": b'{"id":"x","choices":null}',
        "no-message": b'{"choices":[{"index":0,"finish_reason":"stop"}]}',
        "delta-not-message": b'{"choices":[{"index":0,"delta":{"content":"hi"}}]}',
        "choice-not-object": b'{"choices":["hi"]}',
        "json-array": b'[{"choices":[]}]',
        "content-not-text": b'{"choices":[{"message":{"role":"assistant","content":7}}]}',
        "tool-calls-not-list": b'{"choices":[{"message":{"tool_calls":{"id":"c1"}}}]}',
    },
    "responses": {
        "truncated-json": b'{"output":[{"type":"message","content":[{"text":"hi"',
        "no-output": b'{"id":"resp_1","status":"completed"}',
        "output-null": b'{"id":"resp_1","status":"completed","output":null}',
        "output-item-not-object": b'{"status":"completed","output":["hi"]}',
        "json-array": b'[{"output":[]}]',
        "content-not-list": b'{"status":"completed","output":[{"type":"message","content":7}]}',
    },
}


@pytest.mark.parametrize(
    ("wire", "case"),
    [(w, c) for w, cases in MALFORMED.items() for c in cases],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream-asked"])
def test_e12_a_body_that_is_no_answer_is_a_clean_protocol_error(
    server: FakeServer, wire: Wire, case: str, stream: bool
) -> None:
    server.add(RawReply(200, MALFORMED[wire][case]), Turn("never"))
    error, _ = fails(server, wire, replace(FAST, stream=stream))
    assert error.code == "protocol_error"
    assert server.base_url in error.message
    assert server.posts == 1  # a broken answer is not retried


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream-asked"])
def test_e12_html_page_with_200_points_at_a_proxy(
    server: FakeServer, wire: Wire, stream: bool
) -> None:
    server.add(html_page(), Turn("never"))
    error, _ = fails(server, wire, replace(FAST, stream=stream))
    assert error.code == "protocol_error"
    assert "not JSON" in error.message
    assert "proxy" in error.message
    assert server.posts == 1


def test_e12_html_page_with_502_is_retried_and_named(server: FakeServer, wire: Wire) -> None:
    server.add(*[html_page(502)] * 3)
    error, _ = fails(server, wire)
    assert error.code == "endpoint_unavailable"
    assert "HTML page" in error.message
    assert "<html" not in error.message.lower()
    assert server.posts == 3


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream-asked"])
def test_e11_in_band_error_with_200_is_a_model_error(
    server: FakeServer, wire: Wire, stream: bool
) -> None:
    server.add(inband_error("boom"), Turn("never"))
    error, _ = fails(server, wire, replace(FAST, stream=stream))
    assert "boom" in error.message
    assert server.base_url in error.message
    assert server.posts == 1


@pytest.mark.parametrize("case", ["html", "no-answer", "in-band"])
def test_e10_e12_cli_reports_a_clean_error(
    server: FakeServer, wire: Wire, tmp_path: Path, case: str
) -> None:
    body = MALFORMED[wire]["truncated-json"] if case == "no-answer" else b""
    steps = {"html": html_page(), "no-answer": RawReply(200, body), "in-band": inband_error()}
    server.add(steps[case])
    proc = ask_cli(server, wire, tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "failed" in proc.stderr
    expected = {"html": "proxy", "no-answer": "not JSON", "in-band": "boom"}[case]
    assert expected in proc.stderr


# --- E15: no connection leak ---------------------------------------------------------------


def test_e15_no_connection_is_left_open_after_faults_and_retries(
    server: FakeServer, wire: Wire
) -> None:
    server.add(
        *(Stall(30), Stall(30, headers=True), error_status(503), Reset()),
        *(Cut(Turn("x" * 200), then="stall"), Turn("ok")),
        error_status(429, "later", retry_after="3600"),
        html_page(),
        *[error_status(500)] * 4,
    )
    config = ClientConfig(read_timeout=0.3, max_retries=3, backoff_base=0.01)
    client = client_of(server, wire, config)
    try:
        with pytest.raises(ModelError):
            ask(client)  # two stalls, a 503, a reset
        assert server.open_connections <= 1  # each timed-out or reset connection was dropped
        assert ask(client) == "ok"  # after a stalled half body
        for _ in range(3):
            with pytest.raises(ModelError):
                ask(client)
        assert server.open_connections <= 1  # keep-alive: at most the one in the pool
    finally:
        client.close()
    assert server.wait_idle() == 0
    assert server.posts == 12


# --- streamed (ClientConfig(stream=True)): E6, E7, E10, E11, E15 ---------------------------

STREAMING = ClientConfig(
    connect_timeout=1.0,
    read_timeout=2.0,
    stream=True,
    stream_idle_timeout=0.3,
    max_retries=1,
    backoff_base=0.01,
)
"""Streams with a 0.3 s idle timeout, one retry."""
PARTIAL = Turn("PARTIAL " * 40)
THREE_DELTAS = {"chat": 4, "responses": 7}
"""Frames up to the third text delta: chat's role chunk; Responses' created, in_progress,
item and part added."""


def agent_run(
    server: FakeServer, wire: Wire, config: ClientConfig = STREAMING
) -> tuple[Any, list[Any]]:
    """``run_agent`` without tools: its result and the text deltas it saw."""
    texts: list[Any] = []

    def sink(event: Any) -> None:
        if event.type == "delta" and event.delta.kind == "text":
            texts.append(event.delta.text)

    with closing(client_of(server, wire, config)) as client:
        result = run_agent(client, [], AgentConfig(), "hi", sink)
    return result, texts


def test_e6_streamed_stall_before_headers_is_retried_by_the_client(
    server: FakeServer, wire: Wire
) -> None:
    server.add(Stall(30), Stall(30), Turn("never"))
    error, seconds = fails(server, wire, STREAMING)
    assert error.code == "timeout"
    assert "0.3 s stream idle timeout (2 attempts)" in error.message
    assert seconds < 2
    assert server.posts == 2


def test_e6_streamed_stall_after_headers_is_asked_once_more_then_fails(
    server: FakeServer, wire: Wire
) -> None:
    server.add(Stall(30, headers=True), Stall(30, headers=True), Turn("never"))
    started = time.monotonic()
    result, _ = agent_run(server, wire)
    assert time.monotonic() - started < 3
    assert result.status == "failed"
    assert result.code == "stream_stalled"
    assert "0.3 s" in result.error
    assert server.posts == 2
    assert server.wait_idle() == 0


def test_e7_a_stream_stalled_midway_is_never_the_answer(server: FakeServer, wire: Wire) -> None:
    cut = Cut(PARTIAL, THREE_DELTAS[wire], then="stall")
    server.add(cut, cut, Turn("never"))
    result, texts = agent_run(server, wire)
    assert "".join(texts).startswith("PARTIAL")  # it was shown as it came...
    assert result.status == "failed"  # ...but is not the answer
    assert result.code == "stream_stalled"
    assert result.answer == ""
    assert not any("PARTIAL" in getattr(i, "text", "") for i in result.items)
    assert server.posts == 2


def test_e7_after_a_stalled_stream_the_retry_answers(server: FakeServer, wire: Wire) -> None:
    server.add(Cut(PARTIAL, THREE_DELTAS[wire], then="stall"), Turn("the whole answer"))
    result, _ = agent_run(server, wire)
    assert result.status == "succeeded"
    assert result.answer == "the whole answer"
    assert not any("PARTIAL" in getattr(i, "text", "") for i in result.items)
    assert server.posts == 2


@pytest.mark.parametrize(
    "cut",
    [
        Cut(PARTIAL, then="close"),
        Cut(PARTIAL, then="close", chunked=False),
        Cut(PARTIAL, -2, then="close", chunked=False),
        Cut(PARTIAL, 3, then="reset"),
    ],
    ids=["no-end-marker", "no-end-marker-unchunked", "no-finish-unchunked", "reset"],
)
def test_e10_a_stream_without_its_end_is_not_used(server: FakeServer, wire: Wire, cut: Cut) -> None:
    server.add(cut, cut, Turn("never"))
    result, _ = agent_run(server, wire)
    assert result.status == "failed"
    assert result.code == "stream_incomplete"
    assert "not used" in result.error
    assert result.answer == ""
    assert server.posts == 2


def test_e10_no_tool_runs_from_a_stream_cut_after_a_whole_call(
    server: FakeServer, wire: Wire
) -> None:
    ran: list[str] = []

    def clock() -> str:
        """The time."""
        ran.append("clock")
        return "12:00"

    turn = Turn(calls=[Call("clock", {})])
    cut = Cut(turn, -3 if wire == "chat" else -1, then="close")  # the call, not its end
    server.add(cut, cut, Turn("never"))
    with closing(client_of(server, wire, STREAMING)) as client:
        result = run_agent(client, [tool_from_function(clock)], AgentConfig(), "hi")
    assert ran == []
    assert result.status == "failed"
    assert result.code == "stream_incomplete"


def test_e6_a_stream_of_keep_alives_only_is_never_an_answer(server: FakeServer, wire: Wire) -> None:
    """Keep-alive comments are not events: a stream that only sends them goes silent after
    the idle timeout (0.3 s here) however long the server would drip."""
    server.add(Drip(30, every=0.05), Drip(30, every=0.05), Turn("never"))
    started = time.monotonic()
    result, texts = agent_run(server, wire)
    assert time.monotonic() - started < 10
    assert result.status == "failed"
    assert result.code == "stream_stalled"
    assert texts == []
    assert server.posts == 2


MALFORMED_SSE = {
    "bad-json": 'data: {"choices":[{"delta":{"content":"hi"',
    "not-an-object": "data: [1, 2]",
    "bad-json-after-text": data({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    + "\n\ndata: {oops",
}


@pytest.mark.parametrize("case", MALFORMED_SSE)
def test_e10_a_malformed_frame_is_a_clean_error(server: FakeServer, wire: Wire, case: str) -> None:
    server.add(Events(MALFORMED_SSE[case]), Turn("never"))
    result, _ = agent_run(server, wire)
    assert result.status == "failed"
    assert result.code in ("malformed_stream", "protocol_error")
    assert result.answer == ""
    assert server.posts == 1


def test_e10_unknown_events_and_comments_are_skipped(server: FakeServer, wire: Wire) -> None:
    frames = sse_recording(Turn("hello there"), wire).decode().split("\n\n")[:-1]
    noise = [
        ": keep-alive",
        'event: ping\ndata: {"type": "ping"}',
        "event: response.unknown\ndata: {}",
    ]
    server.add(Events(*noise, *frames[:2], *noise, *frames[2:]))
    result, texts = agent_run(server, wire)
    assert result.answer == "hello there"
    assert "".join(texts) == "hello there"


@pytest.mark.parametrize(
    ("wire", "case"),
    [
        ("chat", "data-error"),
        ("responses", "data-error"),
        ("responses", "event-error"),
        ("responses", "response-failed"),
    ],
)
def test_e11_an_in_band_error_in_the_stream_ends_the_run_with_its_message(
    server: FakeServer, wire: Wire, case: str
) -> None:
    frame = {
        "data-error": data({"error": {"message": "boom"}}),
        "event-error": "event: error\n"
        + data({"type": "error", "code": "server_error", "message": "boom"}),
        "response-failed": "event: response.failed\n"
        + data(
            {
                "type": "response.failed",
                "response": {"id": "r", "status": "failed", "error": {"message": "boom"}},
            }
        ),
    }[case]
    server.add(Events(frame), Turn("never"))
    result, _ = agent_run(server, wire)
    assert result.status == "failed"
    assert "boom" in result.error
    assert f"(from {server.base_url}" in result.error  # which server said it
    assert server.posts == 1


def test_e15_no_connection_is_left_open_after_streamed_faults(
    server: FakeServer, wire: Wire
) -> None:
    server.add(
        Stall(30),
        Stall(30, headers=True),
        Cut(PARTIAL, THREE_DELTAS[wire], then="stall"),
        Cut(PARTIAL, then="close"),
        Cut(PARTIAL, 3, then="reset"),
        Events(MALFORMED_SSE["bad-json"]),
        Turn("ok"),
    )
    client = client_of(server, wire, STREAMING)
    try:
        for _ in range(5):
            with pytest.raises(ModelError):
                ask(client)
            assert server.open_connections <= 1
        assert ask(client) == "ok"
    finally:
        client.close()
    assert server.wait_idle() == 0
    assert server.posts == 7


# --- streamed through the CLI (it streams by default) --------------------------------------


def test_e7_cli_stalled_streams_exit_1_without_an_answer(
    server: FakeServer, wire: Wire, tmp_path: Path
) -> None:
    cut = Cut(PARTIAL, THREE_DELTAS[wire], then="stall")
    server.add(cut, cut)
    started = time.monotonic()
    proc = ask_cli(server, wire, tmp_path, "--timeout", "0.3")  # streams by default
    assert time.monotonic() - started < 10
    assert proc.returncode == 1
    assert proc.stdout == ""  # the partial text was shown on stderr, never as the answer
    assert "PARTIAL" in proc.stderr
    assert "stream_stalled" in proc.stderr
    assert server.posts == 2


def test_e6_cli_timeout_flag_bounds_a_stall(server: FakeServer, wire: Wire, tmp_path: Path) -> None:
    server.add(Stall(30), Turn("late but whole"))
    started = time.monotonic()
    proc = ask_cli(server, wire, tmp_path, "--timeout", "0.3")
    assert time.monotonic() - started < 10  # not the server's 30 s, nor the default 120 s
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "late but whole"
    assert server.posts == 2


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_e11_cli_in_band_error(server: FakeServer, wire: Wire, tmp_path: Path, stream: str) -> None:
    server.add(
        Events(data({"error": {"message": "boom"}})) if stream == "--stream" else inband_error()
    )
    proc = ask_cli(server, wire, tmp_path, stream)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "boom" in proc.stderr
