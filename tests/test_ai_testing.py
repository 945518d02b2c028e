"""ScriptedModel and its reply builders (minipi.ai.testing)."""

from __future__ import annotations

import json

import pytest

from minipi.ai import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelRequest,
    ModelResponse,
    output_text,
    parse_function_calls,
)
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.errors import ModelProtocolError


def test_plays_the_script_in_order_and_records_snapshots() -> None:
    model = ScriptedModel([reply_calls(("read_file", {"path": "a.txt"}, "c1")), reply_text("done")])
    history: list[Item] = [Message("user", "q")]
    first = model.create(ModelRequest(history))
    history += [*first.items, FunctionCallOutput("c1", "A")]
    second = model.create(ModelRequest(history))
    history.append(Message("user", "later change"))

    assert first.finish_reason == "tool_calls"
    assert second.finish_reason == "stop"
    assert output_text(second.items) == "done"
    assert [len(r.items) for r in model.requests] == [1, 3]  # snapshots, not the live list
    assert model.remaining == 0
    model.assert_complete()
    model.close()


def test_callables_see_the_request() -> None:
    def echo(request: ModelRequest) -> ModelResponse:
        return reply_text(f"{len(request.items)} items, choice {request.tool_choice}")

    model = ScriptedModel([echo])
    response = model.create(ModelRequest([Message("user", "q")], tool_choice="none"))
    assert output_text(response.items) == "1 items, choice none"


def test_exhausted_script_is_a_protocol_error_not_a_hang() -> None:
    model = ScriptedModel([reply_text("only")])
    model.create(ModelRequest([]))
    with pytest.raises(
        ModelProtocolError, match="script exhausted after 1 responses; the loop asked for one more"
    ):
        model.create(ModelRequest([]))
    assert len(model.requests) == 2


def test_assert_complete_reports_unused_replies() -> None:
    model = ScriptedModel([reply_text("a"), reply_text("b")])
    model.create(ModelRequest([]))
    with pytest.raises(AssertionError, match="1 of 2 responses were never asked for"):
        model.assert_complete()


def test_reply_calls_builds_calls_with_ids_and_json_arguments() -> None:
    response = reply_calls(
        ("read_file", {"path": "日报.json"}),
        ("broken", '{"path": '),
        ("x", {}, "given"),
        text="let me look",
    )
    assert isinstance(response.items[0], Message)
    assert response.items[0].text == "let me look"
    calls = parse_function_calls(response.items)
    assert [c.name for c in calls] == ["read_file", "broken", "x"]
    assert json.loads(calls[0].arguments) == {"path": "日报.json"}
    assert "日报" in calls[0].arguments
    assert calls[1].arguments == '{"path": '
    assert calls[2].call_id == "given"
    assert len({c.call_id for c in calls}) == 3
    assert all(isinstance(c, FunctionCall) and c.raw is None for c in calls)
