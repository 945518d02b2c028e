"""Replaying the model's own output (verbatim), call-id repair, bodies made from requests only."""

from __future__ import annotations

import itertools
import json
from contextlib import closing
from typing import Any

import pytest

from minipi.ai import (
    Endpoint,
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolSpec,
    Wire,
    connect,
    parse_function_calls,
)
from minipi.ai.chat import WIRE as CHAT_WIRE
from minipi.ai.client import dumps
from minipi.ai.responses import WIRE as RESPONSES_WIRE
from minipi.ai.serialize import item_from_json, item_to_json
from minipi.ai.wire import WireApi
from support.fake import Call, FakeServer, RawReply, Turn

TOOLS = [ToolSpec("read_file", "read", {"type": "object", "properties": {}})]


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def history_of(body: dict[str, Any] | None) -> list[Any]:
    assert body is not None
    history: list[Any] = body["input"] if "input" in body else body["messages"]
    return history


def answer_calls(history: list[Item], response: ModelResponse) -> None:
    """What the loop does: replay the output, then one result per call."""
    history.extend(response.items)
    history.extend(
        FunctionCallOutput(c.call_id, f"result of {c.call_id}")
        for c in parse_function_calls(response.items)
    )


def test_output_is_replayed_byte_identical_with_reasoning(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire
) -> None:
    fake_server.add(
        Turn("先看目录", calls=[Call("read_file", {"path": "reports"})], reasoning="用户要日报"),
        Turn("done"),
    )
    history: list[Item] = [Message("user", "q")]
    first = model_client.create(ModelRequest(history, tools=TOOLS))
    answer_calls(history, first)
    model_client.create(ModelRequest(history, tools=TOOLS))

    second = fake_server.requests[1]
    replayed = history_of(second.body)[1:-1]
    if wire == "responses":
        assert [i["type"] for i in replayed] == ["reasoning", "message", "function_call"]
        assert replayed == first.raw["output"]
        for item in first.raw["output"]:
            assert compact(item) in second.raw
    else:
        assert replayed == [first.raw["choices"][0]["message"]]  # one message, sent once
        assert compact(first.raw["choices"][0]["message"]) in second.raw
        assert replayed[0]["reasoning_content"] == "用户要日报"


def test_chat_message_becomes_items_sharing_one_raw(fake_server: FakeServer) -> None:
    fake_server.add(Turn("text", calls=[Call("a", {}), Call("b", "{}")], reasoning="why"))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        response = client.create(ModelRequest([Message("user", "q")]))
    kinds = [type(i).__name__ for i in response.items]
    assert kinds == ["Reasoning", "Message", "FunctionCall", "FunctionCall"]
    raws = {id(i.raw) for i in response.items if not isinstance(i, FunctionCallOutput)}
    assert len(raws) == 1
    assert response.raw["choices"][0]["message"] is response.items[0].raw  # type: ignore[union-attr]


@pytest.mark.parametrize("missing", ["omitted", "", None])
def test_missing_call_id_is_made_up_and_replayed_consistently(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire, missing: str | None
) -> None:
    call_id = None if missing == "omitted" else missing
    fake_server.add(Turn(calls=[Call("read_file", {"path": "a"}, call_id=call_id)]), Turn("ok"))
    history: list[Item] = [Message("user", "q")]
    first = model_client.create(ModelRequest(history))
    (call,) = parse_function_calls(first.items)
    assert call.call_id.startswith("call_local_")
    assert len(call.call_id) == len("call_local_") + 12
    answer_calls(history, first)
    model_client.create(ModelRequest(history))

    sent = history_of(fake_server.requests[1].body)
    if wire == "responses":
        assert sent[1]["call_id"] == sent[2]["call_id"] == call.call_id
    else:
        assert sent[1]["tool_calls"][0]["id"] == sent[2]["tool_call_id"] == call.call_id


def test_duplicate_call_ids_are_made_unique(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire
) -> None:
    fake_server.add(Turn(calls=[Call("a", {}, "same"), Call("b", {}, "same")]), Turn("ok"))
    history: list[Item] = [Message("user", "q")]
    first = model_client.create(ModelRequest(history))
    ids = [c.call_id for c in parse_function_calls(first.items)]
    assert ids[0] == "same"
    assert ids[1].startswith("call_local_")
    answer_calls(history, first)
    model_client.create(ModelRequest(history))
    sent = json.dumps(history_of(fake_server.requests[1].body))
    assert sent.count(f'"{ids[1]}"') == 2  # in the replayed call and in its result


def test_chat_items_sent_on_the_responses_wire(fake_server: FakeServer) -> None:
    raw = {
        "role": "assistant",
        "content": "hi",
        "reasoning_content": "hmm",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    history: list[Item] = [
        Message("user", "q"),
        Reasoning("hmm", raw, "chat"),
        Message("assistant", "hi", raw, "chat"),
        FunctionCall("c1", "f", "{}", raw, "chat"),
        FunctionCallOutput("c1", "r"),
    ]
    fake_server.add(Turn("ok"))
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    with closing(connect(endpoint)) as client:
        client.create(ModelRequest(history))
    assert history_of(fake_server.requests[0].body)[1:] == [
        # chat reasoning is left out: a Responses reasoning item needs an id the chat lacks
        {"role": "assistant", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
    ]


def test_responses_items_sent_on_the_chat_wire_are_one_message(fake_server: FakeServer) -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "c2", "name": "g", "arguments": "{}"}
    history: list[Item] = [
        Message("user", "q"),
        Reasoning("think", {"type": "reasoning"}, "responses"),
        Message("assistant", "hi", {"type": "message"}, "responses"),
        FunctionCall("c2", "g", "{}", call, "responses"),
        FunctionCallOutput("c2", "r"),
    ]
    fake_server.add(Turn("ok"))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        client.create(ModelRequest(history))
    assert history_of(fake_server.requests[0].body)[1:] == [
        {
            "role": "assistant",
            "content": "hi",
            "reasoning_content": "think",
            "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "r"},
    ]


def test_chat_items_read_back_from_a_session_are_still_one_message(fake_server: FakeServer) -> None:
    fake_server.add(Turn("t", calls=[Call("a", {}), Call("b", {})]), Turn("ok"))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        first = client.create(ModelRequest([Message("user", "q")]))
        restored = [item_from_json(json.loads(json.dumps(item_to_json(i)))) for i in first.items]
        history: list[Item] = [Message("user", "q"), *restored]
        history += [FunctionCallOutput(c.call_id, "r") for c in parse_function_calls(restored)]
        client.create(ModelRequest(history))
    roles = [m["role"] for m in history_of(fake_server.requests[1].body)]
    assert roles == ["user", "assistant", "tool", "tool"]


def test_chat_messages_follow_the_runs_of_items(fake_server: FakeServer) -> None:
    """A run of items sharing a chat raw is one message; assistant items without one are
    grouped until a tool result, a user message or a chat raw ends the run."""
    first = {"role": "assistant", "content": "a", "tool_calls": [CALL_1]}
    second = {"role": "assistant", "content": "b"}
    history: list[Item] = [
        Message("user", "q"),
        Message("assistant", "a", first, "chat"),
        FunctionCall("c1", "f", "{}", first, "chat"),
        FunctionCallOutput("c1", "r1"),
        Message("assistant", "b", second, "chat"),
        Message("assistant", "neutral "),
        FunctionCall("c2", "g", "{}"),
        FunctionCallOutput("c2", "r2"),
        Reasoning("hm"),
        Message("assistant", "end"),
    ]
    fake_server.add(Turn("ok"))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        client.create(ModelRequest(history))
    assert history_of(fake_server.requests[0].body) == [
        {"role": "user", "content": "q"},
        first,
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        second,
        {
            "role": "assistant",
            "content": "neutral ",
            "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "assistant", "content": "end", "reasoning_content": "hm"},
    ]


CALL_1 = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def scripted_chain(request_body: dict[str, Any]) -> Turn:
    """One more call per request, with non-ASCII text and reasoning in every turn."""
    step = len(history_of(request_body))
    return Turn(
        f"第 {step} 步",
        calls=[Call("read_file", {"path": f"step{step}.txt"})],
        reasoning=f"think {step}",
    )


def test_each_body_extends_the_previous_one_byte_for_byte(
    fake_server: FakeServer, wire: Wire
) -> None:
    """The history part of request k is a byte-for-byte prefix of request k+1's: replayed
    items are sent exactly as before, turn after turn."""
    turns = 30
    fake_server.add(*[scripted_chain] * turns)
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire=wire)
    history: list[Item] = [Message("user", "开始")]
    with closing(connect(endpoint)) as client:
        for _ in range(turns):
            answer_calls(
                history,
                client.create(ModelRequest(history, instructions="sys", tools=TOOLS)),
            )
    bodies = [r.raw for r in fake_server.requests]
    for before, after in itertools.pairwise(bodies):
        history_part = before[: before.index(b'],"tools":')]
        assert after.startswith(history_part)
    final = history_of(fake_server.requests[-1].body)
    per_turn = 2 if wire == "chat" else 4  # one message + result, or three items + result
    assert len(final) == (wire == "chat") + 1 + (turns - 1) * per_turn


def test_a_body_depends_on_its_request_only(fake_server: FakeServer, wire: Wire) -> None:
    """What a long-lived client sends is its wire's ``encode`` of the request, whatever it
    sent before: also after the history is edited in the middle, shrinks or grows again."""
    api = CHAT_WIRE if wire == "chat" else RESPONSES_WIRE
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire=wire)

    def check(client: ModelClient, request: ModelRequest) -> None:
        fake_server.add(Turn("ok"))
        client.create(request)
        expected = dumps(api.encode(request, "fake-model", stream=False))
        assert fake_server.requests[-1].raw == expected

    history: list[Item] = [Message("user", "q")]
    with closing(connect(endpoint)) as client:
        for turn in range(40):
            check(client, ModelRequest(history, tools=TOOLS))
            raw = {"role": "assistant", "content": f"t{turn}"}
            history += [
                Message("assistant", f"t{turn}", raw, "chat"),
                FunctionCall(f"c{turn}", "read_file", "{}", raw, "chat"),
                FunctionCallOutput(f"c{turn}", "x" * (turn % 7)),
            ]
        history[5] = FunctionCallOutput("c1", "edited")
        check(client, ModelRequest(history))
        check(client, ModelRequest(history[:50]))
        check(client, ModelRequest([*history, Message("user", "more")]))
        check(
            client,
            ModelRequest([*history, FunctionCall("n1", "f", "{}"), FunctionCall("n2", "f", "{}")]),
        )


def test_a_raw_reply_with_spaces_is_replayed_as_the_same_json(fake_server: FakeServer) -> None:
    """Servers that pretty-print still get equal JSON back (bytes are ours, content theirs)."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    fake_server.add(
        RawReply(
            body=json.dumps(
                {"choices": [{"message": message, "finish_reason": "tool_calls"}]}, indent=2
            ).encode()
        ),
        Turn("ok"),
    )
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        history: list[Item] = [Message("user", "q")]
        answer_calls(history, client.create(ModelRequest(history)))
        client.create(ModelRequest(history))
    # replayed as sent, except a null content, which llama-cpp-python's templates refuse
    assert history_of(fake_server.requests[1].body)[1] == {**message, "content": ""}


MOVED_DETAILS = {
    "choices": {"file": ["archive/猫咪小花.txt"]},
    "gone": {"file": ["inbox/猫咪小花.txt"]},
    "output": "paths",
    "anything": {"nested": [1, None, True]},
}
MOVED = FunctionCallOutput(
    "c1", "moved inbox/猫咪小花.txt -> archive/猫咪小花.txt", details=MOVED_DETAILS
)


def test_a_results_details_survive_a_record_verbatim() -> None:
    record = json.loads(json.dumps(item_to_json(MOVED), ensure_ascii=False))
    assert record["details"] == MOVED_DETAILS
    assert item_from_json(record) == MOVED
    # No details: no field (a record reads the same as one written before it existed).
    assert "details" not in item_to_json(FunctionCallOutput("c2", "a.txt"))


def test_a_record_written_before_details_existed_still_loads() -> None:
    old = {"type": "function_call_output", "call_id": "c", "output": "o", "choices": {"f": ["a"]}}
    assert item_from_json(old) == FunctionCallOutput("c", "o", details={"choices": {"f": ["a"]}})
    assert item_from_json({**old, "is_error": True, "gone": {"f": ["b"]}}) == FunctionCallOutput(
        "c", "o", is_error=True, details={"choices": {"f": ["a"]}, "gone": {"f": ["b"]}}
    )


@pytest.mark.parametrize("api", [CHAT_WIRE, RESPONSES_WIRE], ids=["chat", "responses"])
def test_details_are_never_sent(api: WireApi) -> None:
    call = FunctionCall("c1", "move_file", '{"source": "inbox/猫咪小花.txt", "target": "archive"}')
    bare = FunctionCallOutput(MOVED.call_id, MOVED.output)

    def body(output: FunctionCallOutput) -> bytes:
        return dumps(
            api.encode(ModelRequest([Message("user", "q"), call, output]), "m", stream=False)
        )

    assert body(MOVED) == body(bare)


@pytest.mark.parametrize(
    "record",
    [
        {"type": "message", "role": "tool", "text": "x"},
        {"type": "message", "role": "user", "text": 5},
        {"type": "message", "role": "user"},
        {"type": "function_call", "call_id": "c", "name": None, "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "o", "choices": [1]},
        {"type": "function_call_output", "call_id": "c", "output": "o", "choices": {"f": 3}},
        {"type": "function_call_output", "call_id": "c", "output": "o", "gone": ["a"]},
        {"type": "function_call_output", "call_id": "c", "output": "o", "gone": {"f": "a"}},
        {"type": "function_call_output", "call_id": "c", "output": "o", "details": ["a"]},
        {"type": "reasoning", "text": "t", "raw": "not an object"},
        {"type": "reasoning", "text": "t", "wire": "grpc"},
        {"type": "picture"},
    ],
)
def test_item_from_json_refuses_what_item_to_json_never_writes(record: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (the message varies; the type is the contract)
        item_from_json(record)
