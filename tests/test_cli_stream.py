"""Streaming through ``minipi ask``: the real command, a real HTTP server sending SSE."""

from __future__ import annotations

import subprocess

import pytest

from support.cli import EXAMPLES, clean_env, json_lines, minipi
from support.fake import Call, FakeServer, RawReply, Turn, chat_sse

ANSWER = "The report is dated 2026-09-06: 128 orders, revenue 9600 yuan."
UNBACKED = 4
"""The exit code of these answers: the report is never read, so their figures are in no
tool result (the verdict ``unbacked``); the run succeeded all the same."""


def _ask(
    server: FakeServer, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return minipi(
        "ask",
        "What does the daily report say?",
        "--project",
        str(EXAMPLES / "sample_project"),
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        *extra,
        env=env,
    )


def _model_requests(server: FakeServer) -> list[dict[str, object]]:
    bodies = [r.body for r in server.requests if r.path.endswith(("/completions", "/responses"))]
    return [b for b in bodies if b is not None]


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_ask_streams_by_default_and_json_carries_the_deltas(
    fake_server: FakeServer, wire: str
) -> None:
    fake_server.add(Turn(calls=[Call("list_files", {"path": "reports"})]), Turn(ANSWER))
    proc = _ask(fake_server, "--wire", wire, "--json")
    assert proc.returncode == UNBACKED, proc.stderr
    assert all(body.get("stream") is True for body in _model_requests(fake_server))
    events = json_lines(proc.stdout)
    texts = [e["text"] for e in events if e["type"] == "delta" and e["kind"] == "text"]
    assert len(texts) > 1  # in pieces, as they came
    assert "".join(texts) == ANSWER == events[-1]["answer"]
    call_pieces = [e for e in events if e["type"] == "delta" and e["kind"] == "call"]
    assert {e["name"] for e in call_pieces} == {"list_files"}
    assert "".join(e["text"] for e in call_pieces) == '{"path":"reports"}'


def test_the_human_log_shows_streamed_text_once_without_think(fake_server: FakeServer) -> None:
    fake_server.add(Turn(f"<think>private plan</think>\n\n{ANSWER}"))
    proc = _ask(fake_server)
    assert proc.returncode == UNBACKED, proc.stderr
    log: str = proc.stderr
    assert log.count(ANSWER) == 1
    assert log.count("[turn 1 model text]") == 1
    assert "private plan" not in log
    assert proc.stdout.strip() == ANSWER


@pytest.mark.parametrize(
    ("flag", "env"),
    [("--no-stream", {}), (None, {"MINIPI_STREAM": "0"})],
    ids=["flag", "env"],
)
def test_no_stream_sends_plain_requests(
    fake_server: FakeServer, flag: str | None, env: dict[str, str]
) -> None:
    fake_server.add(Turn(ANSWER))
    proc = _ask(fake_server, *([flag] if flag else []), env=clean_env(**env))
    assert proc.returncode == UNBACKED, proc.stderr
    assert all("stream" not in body for body in _model_requests(fake_server))
    assert proc.stdout.strip() == ANSWER


def _cut_stream(text: str) -> RawReply:
    """A stream that sends some text and ends without a finish reason or [DONE]."""
    message = {"role": "assistant", "content": text}
    completion = {
        "id": "cut",
        "created": 1,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": None}],
    }
    body = chat_sse(completion).replace(b"data: [DONE]\n\n", b"")
    return RawReply(200, body, {"content-type": "text/event-stream"})


def test_a_broken_stream_is_asked_once_more_and_its_text_never_counts(
    fake_server: FakeServer,
) -> None:
    fake_server.add(_cut_stream("All files moved successfully"), Turn(ANSWER))
    proc = _ask(fake_server)
    assert proc.returncode == UNBACKED, proc.stderr
    assert proc.stdout.strip() == ANSWER
    assert "without a finish reason" in proc.stderr
    assert "asking once more" in proc.stderr
    assert len(_model_requests(fake_server)) == 2


def test_the_retry_is_said_in_the_questions_language(fake_server: FakeServer) -> None:
    """A Chinese question: the notice that a broken reply is asked for again is Chinese too,
    with the same facts (no English sentence left in it)."""
    fake_server.add(_cut_stream("All files moved successfully"), Turn(ANSWER))
    proc = minipi(
        "ask",
        "日报里写了什么？",
        "--project",
        str(EXAMPLES / "sample_project"),
        "--base-url",
        fake_server.base_url,
        "--model",
        "fake-model",
    )
    assert "再问一次" in proc.stderr, proc.stderr
    assert "asking once more" not in proc.stderr
    assert "without a finish reason" not in proc.stderr


def test_two_broken_streams_fail_the_run(fake_server: FakeServer) -> None:
    fake_server.add(_cut_stream("The answer is 4"), _cut_stream("The answer is 4"))
    proc = _ask(fake_server, "--json")
    assert proc.returncode == 1
    end = json_lines(proc.stdout)[-1]
    assert (end["status"], end["code"], end["answer"]) == ("failed", "stream_incomplete", "")
    assert "Traceback" not in proc.stderr


def test_json_lines_escape_what_a_terminal_would_act_on(fake_server: FakeServer) -> None:
    """A lone surrogate or a bidi override in the model's text: --json stays valid,
    encodable, and carries the same text, escaped."""
    import json

    text = "ok \u202e evil \ud800 \x1b]52;c;AAAA\x07 \U000e0041"
    message = {"role": "assistant", "content": text}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    fake_server.add(RawReply(200, json.dumps(body).encode(), {}))
    proc = _ask(fake_server, "--json")
    assert proc.returncode == UNBACKED, proc.stderr
    assert "Traceback" not in proc.stderr
    for raw in ("\u202e", "\x1b", "\x07", "\U000e0041"):
        assert raw not in proc.stdout
    assert json_lines(proc.stdout)[-1]["answer"] == text


@pytest.mark.reliability
def test_max_seconds_stops_a_reply_that_streams_forever() -> None:
    """F6: text keeps coming (the idle timer never fires); the run's budget still ends it."""
    import json
    import time

    from support.faults import Drip

    piece = {"choices": [{"index": 0, "delta": {"content": "more "}, "finish_reason": None}]}
    with FakeServer([Drip(60, every=0.05, frame=f"data: {json.dumps(piece)}")]) as server:
        started = time.monotonic()
        proc = _ask(server, "--max-seconds", "1", "--json")
        elapsed = time.monotonic() - started
    assert proc.returncode == 3, proc.stderr
    end = json_lines(proc.stdout)[-1]
    assert (end["status"], end["code"], end["answer"]) == ("budget_exhausted", "max_seconds", "")
    assert elapsed < 10


def test_live_text_hides_think_and_tool_call_text_however_it_is_split() -> None:
    from minipi.cli.render import LiveText

    text = '<think>plan <x></think>\n\nHello <b>world</b> a<b <tool_call>{"name": 1}</tool_call> x'
    expected = "Hello <b>world</b> a<b "
    for cut in range(len(text) + 1):
        live = LiveText()
        shown = live.feed(text[:cut]) + live.feed(text[cut:])
        assert shown == expected, cut
    live = LiveText()
    assert "".join(live.feed(ch) for ch in text) == expected
    live = LiveText()
    assert live.feed("ends in a<thi") + live.flush() == "ends in a<thi"  # not a tag after all
