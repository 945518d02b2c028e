"""Decoding what servers answer: calls, usage, finish reasons, malformed and in-band errors."""

from __future__ import annotations

import json
from contextlib import closing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.ai import (
    Endpoint,
    FinishReason,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Reasoning,
    Usage,
    Wire,
    connect,
    parse_function_calls,
)
from minipi.ai.chat import WIRE as CHAT_WIRE
from minipi.ai.client import dumps
from minipi.ai.responses import WIRE as RESPONSES_WIRE
from minipi.ai.wire import WireApi
from minipi.errors import ModelError, ModelProtocolError
from support.fake import FakeServer, RawReply, Turn

MISSING = object()


def ask(client: ModelClient) -> ModelResponse:
    return client.create(ModelRequest([Message("user", "q")]))


def chat_body(message: dict[str, Any], finish: Any = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        **extra,
    }


def responses_body(output: list[Any], status: Any = "completed", **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "output": output, **extra}


def with_call(
    wire: Wire, name: Any = "read_file", arguments: Any = "{}", call_id: Any = "c1"
) -> RawReply:
    """A reply holding one call; ``MISSING`` leaves a field out."""
    fields = {"name": name, "arguments": arguments}
    function = {k: v for k, v in fields.items() if v is not MISSING}
    if wire == "chat":
        call: dict[str, Any] = {"type": "function", "function": function}
        if call_id is not MISSING:
            call["id"] = call_id
        return RawReply.json(
            chat_body({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")
        )
    item: dict[str, Any] = {"type": "function_call", **function}
    if call_id is not MISSING:
        item["call_id"] = call_id
    return RawReply.json(responses_body([item]))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"path": "a.txt"}', '{"path": "a.txt"}'),  # a JSON string, kept as sent
        ({"路径": "a.txt"}, '{"路径": "a.txt"}'),  # an object (Ollama), dumped
        ('{"path": "a.txt"', '{"path": "a.txt"'),  # broken JSON: the loop reports it
        ([1, 2], "[1, 2]"),
        (None, "null"),
        (MISSING, ""),
    ],
)
def test_arguments_string_or_object(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire, arguments: Any, expected: str
) -> None:
    fake_server.add(with_call(wire, arguments=arguments))
    (call,) = parse_function_calls(ask(model_client).items)
    assert (call.name, call.arguments, call.call_id) == ("read_file", expected, "c1")


@pytest.mark.parametrize("name", [MISSING, None, ""])
def test_a_call_without_a_name_is_a_protocol_error(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire, name: Any
) -> None:
    fake_server.add(with_call(wire, name=name))
    with pytest.raises(ModelProtocolError, match="a tool call without a name") as caught:
        ask(model_client)
    assert caught.value.code == "malformed_call"
    assert fake_server.base_url in str(caught.value)


def test_names_are_kept_as_sent(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire
) -> None:
    fake_server.add(with_call(wire, name=" functions.read_file "))
    (call,) = parse_function_calls(ask(model_client).items)
    assert call.name == " functions.read_file "


def test_usage_from_the_fake_server(fake_server: FakeServer, model_client: ModelClient) -> None:
    fake_server.add(Turn("abcdefgh"))
    usage = ask(model_client).usage
    assert usage == Usage(len(fake_server.requests[-1].raw) // 4, 2, 0, 1)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"in": 120, "out": 7, "details": {"cached_tokens": 100}}, Usage(120, 7, 100, 1)),
        ({"in": 5, "out": 1}, Usage(5, 1, 0, 1)),
        ({"in": "5", "out": None, "details": []}, Usage(0, 0, 0, 1)),
        (None, Usage(0, 0, 0, 1)),
    ],
)
def test_usage_mapping(
    fake_server: FakeServer,
    model_client: ModelClient,
    wire: Wire,
    usage: dict[str, Any] | None,
    expected: Usage,
) -> None:
    names = {
        "chat": ("prompt_tokens", "completion_tokens", "prompt_tokens_details"),
        "responses": ("input_tokens", "output_tokens", "input_tokens_details"),
    }[wire]
    wire_usage = (
        None
        if usage is None
        else {names[("in", "out", "details").index(k)]: v for k, v in usage.items()}
    )
    body = (
        chat_body({"role": "assistant", "content": "x"}, usage=wire_usage)
        if wire == "chat"
        else responses_body([], usage=wire_usage)
    )
    fake_server.add(RawReply.json(body))
    assert ask(model_client).usage == expected


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (Turn("done"), "stop"),
        (Turn(calls=[]), "stop"),
        (Turn("half", finish="length"), "length"),
        (Turn("no", finish="content_filter"), "content_filter"),
        (Turn("odd", finish="weird_reason"), "unknown"),
        (Turn("none", finish=None), "unknown"),
    ],
)
def test_finish_reason_mapping(
    fake_server: FakeServer, model_client: ModelClient, turn: Turn, expected: FinishReason
) -> None:
    fake_server.add(turn)
    assert ask(model_client).finish_reason == expected


@pytest.mark.parametrize("word", ["eos", "eos_token", "end_turn", "stop_sequence"])
def test_other_servers_words_for_a_natural_end(fake_server: FakeServer, word: str) -> None:
    fake_server.add(Turn("done", finish=word))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        assert ask(client).finish_reason == "stop"


def test_calls_finish_with_tool_calls(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire
) -> None:
    fake_server.add(with_call(wire))
    assert ask(model_client).finish_reason == "tool_calls"


@pytest.mark.parametrize("finish", ["stop", "function_call"])
def test_chat_calls_under_another_finish_name_count_as_tool_calls(
    fake_server: FakeServer, finish: str
) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    fake_server.add(RawReply.json(chat_body({"role": "assistant", "tool_calls": [call]}, finish)))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        assert ask(client).finish_reason == "tool_calls"


def test_chat_reasoning_field_and_content_parts(fake_server: FakeServer) -> None:
    message = {
        "role": "assistant",
        "reasoning": "thinking",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    fake_server.add(RawReply.json(chat_body(message)))
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        items = ask(client).items
    assert [(type(i), i.text) for i in items if isinstance(i, Message | Reasoning)] == [
        (Reasoning, "thinking"),
        (Message, "ab"),
    ]


def test_responses_reasoning_text_and_unknown_items(fake_server: FakeServer) -> None:
    output: list[dict[str, Any]] = [
        {
            "type": "reasoning",
            "id": "rs",
            "summary": [{"type": "summary_text", "text": "S"}],
            "content": [{"type": "reasoning_text", "text": "C"}],
        },
        {"type": "web_search_call", "id": "ws", "status": "completed"},
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "A", "annotations": []},
                {"type": "output_text", "text": "B"},
            ],
        },
    ]
    fake_server.add(RawReply.json(responses_body(output)))
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    with closing(connect(endpoint)) as client:
        items = ask(client).items
    assert items == (
        Reasoning("S\n\nC", output[0], "responses"),
        Message("assistant", "AB", output[2], "responses"),
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"choices": []}, "no choices"),
        ({"object": "chat.completion"}, "no choices"),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "first choice has no message"),
        ({"choices": ["x"]}, "first choice has no message"),
        (chat_body({"role": "assistant", "tool_calls": {"id": "x"}}), "`tool_calls` is not"),
        (chat_body({"role": "assistant", "tool_calls": ["x"]}), "a tool call is not an object"),
        (chat_body({"role": "assistant", "content": 5}), "neither text nor a list"),
    ],
)
def test_malformed_chat_answers(
    fake_server: FakeServer, body: dict[str, Any], message: str
) -> None:
    fake_server.add(RawReply.json(body))
    with (
        closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client,
        pytest.raises(ModelProtocolError, match=message),
    ):
        ask(client)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"id": "r", "status": "completed"}, "no `output` list"),
        (responses_body("text"), "no `output` list"),  # type: ignore[arg-type]
        (responses_body(["x"]), "entry is not an object"),
        (responses_body([{"type": "message", "content": 3}]), "not a list"),
    ],
)
def test_malformed_responses_answers(
    fake_server: FakeServer, body: dict[str, Any], message: str
) -> None:
    fake_server.add(RawReply.json(body))
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    with closing(connect(endpoint)) as client, pytest.raises(ModelProtocolError, match=message):
        ask(client)


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"<html><body>502 Bad Gateway</body></html>", "text/html", "not JSON"),
        (b"", "application/json", "not JSON"),
        (b'{"choices": [', "application/json", "not JSON"),
        (b"[1, 2]", "application/json", "not an object"),
    ],
)
def test_2xx_that_is_not_a_json_object(
    fake_server: FakeServer, model_client: ModelClient, body: bytes, content_type: str, message: str
) -> None:
    fake_server.add(RawReply(200, body, {"content-type": content_type}))
    with pytest.raises(ModelProtocolError, match=message):
        ask(model_client)
    assert len(fake_server.requests) == 1  # not retried


def test_html_page_message_points_at_a_proxy(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    fake_server.add(RawReply(200, b"<html>Proxy login</html>", {"content-type": "text/html"}))
    with pytest.raises(ModelProtocolError, match="proxy or web page") as caught:
        ask(model_client)
    assert "<html>Proxy login</html>" in str(caught.value)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "boom", "type": "server_error"}},
        {"error": "boom"},
        responses_body([], status="failed", error={"code": "server_error", "message": "boom"}),
    ],
)
def test_in_band_error_is_a_model_error(
    fake_server: FakeServer, model_client: ModelClient, body: dict[str, Any]
) -> None:
    fake_server.add(RawReply.json(body))
    with pytest.raises(ModelError, match="reported an error: boom") as caught:
        ask(model_client)
    assert not isinstance(caught.value, ModelProtocolError)


def test_responses_null_error_is_no_error(fake_server: FakeServer) -> None:
    fake_server.add(RawReply.json(responses_body([], error=None)))
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    with closing(connect(endpoint)) as client:
        assert ask(client).items == ()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)
anything = st.one_of(json_values, st.sampled_from(["", "x", "function", "stop", "completed"]))
call_entries = st.fixed_dictionaries(
    {},
    optional={
        "id": anything,
        "type": anything,
        "function": st.fixed_dictionaries({}, optional={"name": anything, "arguments": anything}),
    },
)
chat_bodies = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "finish_reason": anything,
                    "message": st.fixed_dictionaries(
                        {},
                        optional={
                            "content": anything,
                            "reasoning_content": anything,
                            "reasoning": anything,
                            "tool_calls": st.lists(call_entries, max_size=3) | anything,
                        },
                    ),
                },
            )
            | anything,
            max_size=2,
        )
        | anything,
        "usage": anything,
        "error": anything,
    },
)
output_items = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "function_call", "reasoning", "other"])},
    optional={
        "name": anything,
        "arguments": anything,
        "call_id": anything,
        "content": anything,
        "summary": anything,
    },
)
responses_bodies = st.fixed_dictionaries(
    {},
    optional={
        "output": st.lists(output_items | anything, max_size=3) | anything,
        "status": anything,
        "incomplete_details": anything,
        "usage": anything,
        "error": anything,
    },
)


WIRES: dict[str, WireApi] = {"chat": CHAT_WIRE, "responses": RESPONSES_WIRE}


@settings(max_examples=300, deadline=None)
@given(chat=chat_bodies, responses=responses_bodies)
def test_no_shape_escapes_as_anything_but_a_model_error(
    chat: dict[str, Any], responses: dict[str, Any]
) -> None:
    for wire, body in (("chat", chat), ("responses", responses)):
        api = WIRES[wire]
        try:
            items, _, _ = api.decode(json.loads(json.dumps(body)))
            dumps(api.encode(ModelRequest(items), "m", stream=False))  # what decoded can be sent
        except ModelError:
            pass


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_a_server_that_numbers_calls_per_reply_gets_unique_ids(wire: Wire) -> None:
    """Every reply says call id "call_0": the second call gets a new id (in its raw copy too),
    so no two results share an id and each result follows its own call (D7, C15)."""
    from contextlib import closing

    from minipi.agent import AgentConfig, run_agent, tool_from_function
    from minipi.ai.types import FunctionCall, FunctionCallOutput
    from support.fake import Call, FakeServer, Turn

    def echo(text: str) -> str:
        """Echo text."""
        return text.upper()

    script = [
        Turn(calls=[Call("echo", {"text": "a"}, "call_0")]),
        Turn(calls=[Call("echo", {"text": "b"}, "call_0")]),
        Turn("done"),
    ]
    with FakeServer(script) as server:
        endpoint = Endpoint(server.base_url, "fake-model", wire=wire)
        with closing(connect(endpoint)) as client:
            result = run_agent(client, [tool_from_function(echo)], AgentConfig(), "q")
        last = server.requests[-1].body
    assert result.status == "succeeded"
    calls = [i for i in result.items if isinstance(i, FunctionCall)]
    outputs = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert calls[0].call_id == "call_0"
    assert calls[1].call_id != "call_0"
    assert [o.call_id for o in outputs] == [c.call_id for c in calls]
    assert [o.output for o in outputs] == ["A", "B"]
    assert last is not None
    sent = json.dumps(last)
    assert sent.count('"call_0"') == 2  # the first call and its result, nothing else
