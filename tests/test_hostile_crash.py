"""Issue 14, item 6 (the model layer and the session store): never a traceback.

A lone surrogate (``"\\ud800"``, a valid JSON escape) in an answer, call id, tool name or
argument crashed ``--session`` runs (SQLite takes UTF-8 only); a value nested past the
recursion limit crashed the session save; ``prompt_tokens: 10**400`` crashed the context
calibration; ``nan``, ``inf`` or ``1e300`` seconds crashed inside httpx. Each is now a
clear error or a handled reply.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelRequest, connect
from minipi.errors import ConfigError, SessionError
from minipi.session.store import SessionStore
from support.cli import clean_env, minipi
from support.fake import FakeServer, RawReply, Turn
from support.faults import Events

pytestmark = pytest.mark.reliability

SURROGATE = "\ud800"


def chat_reply(message: dict[str, Any], **extra: Any) -> RawReply:
    """A plain chat reply, serialised with ``\\uXXXX`` escapes (lone surrogates included)."""
    calls = bool(message.get("tool_calls"))
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    body = {"id": "c1", "object": "chat.completion", "choices": [choice], **extra}
    return RawReply(200, json.dumps(body).encode())


def call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def run_cli(server: FakeServer, tmp_path: Path, *flags: str) -> tuple[int, str, str]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    args = ["ask", "hi", "--project", str(project), "--base-url", server.base_url]
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    proc = minipi(*args, "--model", "fake-model", *flags, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def saved_events(tmp_path: Path) -> list[dict[str, Any]]:
    store = SessionStore.open(tmp_path / "data")
    try:
        session = store.find("s1")
        assert session is not None
        return [entry.event for entry in store.entries(session.id)]
    finally:
        store.close()


# --- lone surrogates in a --session run -----------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        chat_reply({"role": "assistant", "content": f"ok {SURROGATE} done"}),
        chat_reply(call("list_files", '{"path": "."}', call_id=f"c{SURROGATE}")),
        chat_reply(call(f"list{SURROGATE}", "{}")),
        chat_reply(call("read_file", '{"path": "a\\ud800.txt"}')),
    ],
    ids=["answer", "call-id", "tool-name", "argument"],
)
def test_a_lone_surrogate_is_saved_in_a_session_and_read_back(
    server: FakeServer, tmp_path: Path, first: RawReply
) -> None:
    stream = "--no-stream"  # a streamed surrogate: the next test
    server.add(first, Turn("fine"), Turn("again"))
    code, _, stderr = run_cli(server, tmp_path, "--session", "s1", stream)
    assert code == 0, stderr
    dumped = json.dumps(saved_events(tmp_path))
    assert "\\ud800" in dumped  # the surrogate was kept, escaped, not dropped or replaced
    code, stdout, stderr = run_cli(server, tmp_path, "--session", "s1", stream)
    assert code == 0, stderr  # the next run reads it back and sends it in its history
    assert stdout.strip() in ("fine", "again")  # the answer case used one reply less


def test_a_surrogate_in_a_streamed_answer_is_saved_too(server: FakeServer, tmp_path: Path) -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk"}
    server.add(
        Events(
            "data: "
            + json.dumps(
                {**chunk, "choices": [{"index": 0, "delta": {"content": f"x{SURROGATE}"}}]}
            ),
            "data: "
            + json.dumps(
                {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            ),
            "data: [DONE]",
        )
    )
    code, _, stderr = run_cli(server, tmp_path, "--session", "s1")
    assert code == 0, stderr
    assert any("\\ud800" in json.dumps(e) for e in saved_events(tmp_path))


def test_the_store_saves_odd_text_in_its_own_columns(tmp_path: Path) -> None:
    """A question, session name or project holding undecodable bytes (surrogateescape)."""
    store = SessionStore.open(tmp_path / "data")
    try:
        odd = "caf\udce9"
        session = store.create(f"s{odd}", f"/proj/{odd}")
        run = store.begin_run(session.id, f"what is {odd}?", "m", {"type": "items", "v": odd})
        store.end_run(session.id, run, {"status": "failed", "answer": odd, "usage": {}})
        found = store.find(f"s{odd}")
        assert found is not None
        assert store.entries(found.id)[0].event["v"] == odd  # the JSON keeps it exactly
        assert store.sessions(f"/proj/{odd}")[0].id == session.id
    finally:
        store.close()


def test_a_step_nested_past_the_recursion_limit_is_a_session_error(tmp_path: Path) -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    store = SessionStore.open(tmp_path / "data")
    try:
        session = store.create("s1", "/p")
        run = store.begin_run(session.id, "q", "m", {"type": "items"})
        with pytest.raises(SessionError) as caught:
            store.append(session.id, run, [{"type": "notice", "deep": deep}])
        assert caught.value.code == "session_unsavable"
        assert len(store.entries(session.id)) == 1  # nothing half-saved
    finally:
        store.close()


def test_a_reply_nested_968_deep_ends_the_run_cleanly(server: FakeServer, tmp_path: Path) -> None:
    reply = chat_reply({"role": "assistant", "content": "hi"})
    body = reply.body[:-1] + b', "extra": ' + b"[" * 968 + b"]" * 968 + b"}"
    server.add(RawReply(200, body))
    code, stdout, _ = run_cli(server, tmp_path, "--session", "s1", "--json")
    assert code == 1
    end = json.loads(stdout.splitlines()[-1])
    assert end["code"] == "protocol_error"
    assert end["answer"] == ""


# --- absurd numbers --------------------------------------------------------------------------


_WITH_USAGE = (
    '{"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, '
    '"finish_reason": "stop"}], "usage": {"prompt_tokens": %s, "completion_tokens": 7}}'
)


@pytest.mark.parametrize(
    "tokens", ["1" + "0" * 400, "10000000000001", "-5", "1.5", '"12"', "true", "1e999", "NaN"]
)
def test_absurd_usage_counts_are_read_as_zero(server: FakeServer, tokens: str) -> None:
    server.add(RawReply(200, (_WITH_USAGE % tokens).encode()))
    with closing(connect(Endpoint(server.base_url, "fake-model"))) as client:
        response = client.create(ModelRequest([Message("user", "hi")]))
    assert response.usage.input_tokens == 0
    assert response.usage.output_tokens == 7


def test_a_huge_usage_count_does_not_break_context_calibration(
    server: FakeServer, tmp_path: Path
) -> None:
    server.add(
        chat_reply(call("read_file", '{"path": "a.txt"}'), usage={"prompt_tokens": 10**400}),
        Turn("done"),
    )
    code, stdout, stderr = run_cli(server, tmp_path, "--context-tokens", "4000", "--no-stream")
    assert code == 0, stderr
    assert stdout.strip() == "done"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1e300, 86_401.0, 0.0, -1.0])
@pytest.mark.parametrize("name", ["connect_timeout", "read_timeout", "stream_idle_timeout"])
def test_client_config_refuses_timeouts_that_are_no_bound(name: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"ClientConfig.{name} must be a finite number"):
        ClientConfig(**{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("backoff_base", math.nan),
        ("max_retry_after", math.inf),
        ("max_retries", 1.5),
        ("max_retries", 10**6),
        ("max_retries", True),
        ("max_response_bytes", 10),
        ("read_timeout", "120"),
    ],
)
def test_client_config_refuses_other_nonsense(name: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"ClientConfig.{name}"):
        ClientConfig(**{name: value})  # type: ignore[arg-type]


def test_client_config_takes_ordinary_values() -> None:
    config = ClientConfig(read_timeout=86_400, connect_timeout=0.001, max_retries=0)
    assert config.read_timeout == 86_400
    assert ClientConfig().max_response_bytes == 16 * 1024 * 1024


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_cli_timeout_that_is_no_bound_is_a_usage_error(
    server: FakeServer, tmp_path: Path, value: str
) -> None:
    code, _, stderr = run_cli(server, tmp_path, "--timeout", value)
    assert code == 2, stderr
    assert "read_timeout" in stderr or "--timeout" in stderr
    assert server.posts == 0
