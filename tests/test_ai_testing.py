"""ScriptedModel and its reply builders (minipi.ai.testing)."""

from __future__ import annotations

import json

import pytest

from minipi.ai import (
    Delta,
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
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


def test_a_request_with_on_delta_is_answered_as_a_stream() -> None:
    reply = ModelResponse(
        (
            Reasoning("the user wants the report"),
            Message("assistant", "Let me read the report."),
            FunctionCall("c1", "read_file", '{"path": "reports/daily.json"}'),
            FunctionCall("c2", "list_files", '{"path": "."}'),
        ),
        "tool_calls",
    )
    deltas: list[Delta] = []
    model = ScriptedModel([reply])
    response = model.create(ModelRequest([Message("user", "q")], on_delta=deltas.append))
    assert response is reply
    kinds = [(d.kind, d.index) for d in deltas]
    assert kinds == sorted(kinds, key=_order)  # reasoning, text, then each call in turn
    by_kind = {k: [d for d in deltas if d.kind == k] for k in ("reasoning", "text")}
    assert "".join(d.text for d in by_kind["reasoning"]) == "the user wants the report"
    assert "".join(d.text for d in by_kind["text"]) == "Let me read the report."
    assert len(by_kind["text"]) > 1  # in pieces, as a stream sends it
    for index, call in enumerate(parse_function_calls(reply.items)):
        pieces = [d for d in deltas if d.kind == "call" and d.index == index]
        assert (pieces[0].name, pieces[0].text) == (call.name, "")  # the name comes first
        assert len(pieces) > 2
        assert "".join(d.text for d in pieces) == call.arguments


def _order(kind_index: tuple[str, int]) -> tuple[int, int]:
    return ["reasoning", "text", "call"].index(kind_index[0]), kind_index[1]


def test_the_loop_sees_the_scripted_stream_before_the_turns_events() -> None:
    from minipi.agent import AgentConfig, AssistantText, ModelDelta, run_agent

    events: list[object] = []
    model = ScriptedModel([reply_text("2026-09-06: 128 orders")])
    result = run_agent(model, [], AgentConfig(), "q", events.append)
    assert result.answer == "2026-09-06: 128 orders"
    deltas = [e for e in events if isinstance(e, ModelDelta)]
    assert "".join(e.delta.text for e in deltas) == result.answer
    answer = next(i for i, e in enumerate(events) if isinstance(e, AssistantText))
    assert events.index(deltas[-1]) < answer
