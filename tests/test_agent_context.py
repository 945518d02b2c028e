"""Context limits: outputs bounded, old outputs shortened to fit, context_exhausted before a 400."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, Notice, run_agent, tool_from_function
from minipi.agent.context import ContextWindow
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message, ModelRequest
from support.cli import json_lines, minipi
from support.fake import Call, FakeServer, Turn

pytestmark = pytest.mark.reliability


def chapter(n: int) -> str:
    """Return chapter n of the book."""
    return f"chapter {n}: " + "lorem ipsum dolor sit amet " * 20  # 551 characters


TOOLS = [tool_from_function(chapter)]


def _outputs(request: ModelRequest) -> list[str]:
    return [i.output for i in request.items if isinstance(i, FunctionCallOutput)]


def _reads(*numbers: int) -> list[Any]:
    return [reply_calls(("chapter", {"n": n})) for n in numbers]


def test_old_outputs_are_shortened_oldest_first_and_the_newest_kept() -> None:
    model = ScriptedModel([*_reads(1, 2, 3, 4, 5, 6, 7), reply_text("done")])
    events: list[Any] = []
    config = AgentConfig(context_tokens=1400, reserve_tokens=200)
    result = run_agent(model, TOOLS, config, "summarize the book", events.append)
    assert result.status == "succeeded", result.error
    last = _outputs(model.requests[-1])
    assert len(last) == 7  # every call still has its result: the transcript stays valid
    assert last[-1] == chapter(7)  # the newest output is whole
    assert "shortened to fit" in last[0]
    assert "call chapter again" in last[0]
    shortened = [i for i, text in enumerate(last) if "shortened to fit" in text]
    assert shortened == list(range(len(shortened)))  # oldest first
    notices = [e for e in events if isinstance(e, Notice) and e.code == "context_shortened"]
    assert notices
    assert all(len(json.dumps(_outputs(r))) < 1200 * 3 for r in model.requests)


def test_shortening_never_undoes_itself_so_the_prefix_stays_stable() -> None:
    model = ScriptedModel([*_reads(1, 2, 3, 4, 5, 6, 7, 8, 9), reply_text("done")])
    config = AgentConfig(max_turns=12, context_tokens=1400, reserve_tokens=200)
    assert run_agent(model, TOOLS, config, "q").status == "succeeded"
    seen: dict[int, str] = {}
    for request in model.requests:
        for index, text in enumerate(_outputs(request)):
            if index in seen and "shortened to fit" in seen[index]:
                assert text == seen[index]  # once shortened, always the same pointer
            seen[index] = text


def test_a_shortened_output_may_be_asked_for_again() -> None:
    model = ScriptedModel([*_reads(1, 2, 3, 4, 5, 6, 7, 1), reply_text("done")])
    config = AgentConfig(max_turns=10, context_tokens=1400, reserve_tokens=200)
    result = run_agent(model, TOOLS, config, "q")
    assert result.status == "succeeded"
    assert result.tool_calls == 8  # the repeat of chapter 1 ran: its first output was gone
    assert _outputs(model.requests[-1])[-1] == chapter(1)


def test_a_conversation_that_cannot_fit_ends_before_any_request() -> None:
    model = ScriptedModel([reply_text("never")])
    config = AgentConfig(context_tokens=300, reserve_tokens=100)
    result = run_agent(model, TOOLS, config, "please read this: " + "x" * 5000)
    assert (result.status, result.code) == ("failed", "context_exhausted")
    assert model.requests == []


def test_long_outputs_are_cut_with_a_notice() -> None:
    model = ScriptedModel([*_reads(1), reply_text("done")])
    config = AgentConfig(max_tool_output_chars=100)
    run_agent(model, TOOLS, config, "q")
    (output,) = _outputs(model.requests[-1])
    assert output.startswith("chapter 1: lorem")
    assert "[output cut: showing the first 100 of 551 characters" in output


def test_the_estimate_is_calibrated_from_the_servers_count() -> None:
    window = ContextWindow(limit=1000, reserve=100)
    items = [Message("user", "x" * 300)]
    before = window.estimate(items)
    window.observe(items, 30)  # the server counted far fewer tokens than bytes / 3
    assert window.estimate(items) < before / 2
    window.observe(items, 0)  # no count reported: the ratio stays
    assert window.estimate(items) < before / 2


def test_fit_keeps_calls_and_the_latest_results() -> None:
    window = ContextWindow(limit=400, reserve=50)
    items: list[Item] = [
        Message("user", "q"),
        FunctionCall("a", "chapter", "{}"),
        FunctionCallOutput("a", "A" * 600),
        FunctionCall("b", "chapter", "{}"),
        FunctionCallOutput("b", "B" * 600),
    ]
    assert window.fit(items) == ["a"]
    view = window.view(items)
    assert [type(i) for i in view] == [type(i) for i in items]
    assert view[4] == items[4]
    window2 = ContextWindow(limit=100, reserve=50)
    assert window2.fit(items) is None  # the latest result alone does not fit


def test_a_shortened_output_keeps_its_details() -> None:
    """Guided mode reads a result's details from the items sent: a shortened move result must
    still take the old path away (else the model is offered a file that is not there)."""
    window = ContextWindow(limit=400, reserve=50)
    details = {"choices": {"file": ["archive/x.txt"]}, "gone": {"file": ["x.txt"]}}
    move = FunctionCallOutput("a", "A" * 600, details=details)
    items: list[Item] = [
        Message("user", "q"),
        FunctionCall("a", "move_file", "{}"),
        move,
        FunctionCall("b", "chapter", "{}"),
        FunctionCallOutput("b", "B" * 600),
    ]
    assert window.fit(items) == ["a"]
    shortened = window.view(items)[2]
    assert isinstance(shortened, FunctionCallOutput)
    assert "shortened to fit" in shortened.output
    assert shortened.details == details


def test_cli_context_tokens_shortens_and_the_trace_says_what(tmp_path: Path) -> None:
    project = tmp_path / "book"
    project.mkdir()
    for n in range(1, 8):
        (project / f"ch{n}.txt").write_text(chapter(n), encoding="utf-8")
    script = [Turn(calls=[Call("read_file", {"path": f"ch{n}.txt"})]) for n in range(1, 8)]
    with FakeServer([*script, Turn("done")]) as server:
        trace = tmp_path / "trace.json"
        proc = minipi(
            "ask",
            "summarize",
            "--project",
            str(project),
            "--base-url",
            server.base_url,
            "--model",
            "fake-model",
            "--context-tokens",
            "2000",
            "--trace",
            str(trace),
            "--json",
        )
        bodies = [r.body for r in server.requests if r.body is not None]
    assert proc.returncode == 0, proc.stderr
    last = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert "shortened to fit" in last[0]
    assert last[-1] == chapter(7)
    traced = json.loads(trace.read_text(encoding="utf-8"))["events"]
    assert any(e["type"] == "notice" and e["code"] == "context_shortened" for e in traced)
    events = json_lines(proc.stdout)
    assert any(e["type"] == "notice" and e["code"] == "context_shortened" for e in events)
