"""What the wire clients send, checked on the bytes the fake server received (both wires)."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from minipi.ai import (
    Endpoint,
    FunctionCallOutput,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    ToolSpec,
    Wire,
    connect,
)
from minipi.errors import ConfigError
from support.fake import FakeServer, RecordedRequest, Turn

QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
READ_FILE = ToolSpec(
    "read_file",
    "读取项目中的 UTF-8 文本文件。",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "相对于项目根目录的文件路径"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)
LIST_FILES = ToolSpec(
    "list_files",
    "列出目录",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def send(server: FakeServer, client: ModelClient, request: ModelRequest) -> dict[str, Any]:
    """Send ``request`` (answered with "ok"); the JSON body the server received."""
    server.add(Turn("ok"))
    client.create(request)
    body = server.requests[-1].body
    assert body is not None
    return body


def question(**fields: Any) -> ModelRequest:
    return ModelRequest([Message("user", QUESTION)], **fields)


def test_responses_request_has_the_seed_shape(fake_server: FakeServer) -> None:
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire="responses")
    request = question(
        instructions="不要猜测日报数据。",
        tools=[READ_FILE],
        tool_choice="none",
        parallel_tool_calls=False,
        options={"reasoning": {"effort": "none"}, "max_output_tokens": 2048, "temperature": 0},
    )
    with closing(connect(endpoint)) as client:
        body = send(fake_server, client, request)
    assert fake_server.requests[-1].path == "/v1/responses"
    assert body == {
        "model": "fake-model",
        "instructions": "不要猜测日报数据。",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": QUESTION}]}],
        "tools": [
            {
                "type": "function",
                "name": "read_file",
                "description": READ_FILE.description,
                "parameters": READ_FILE.parameters,
                "strict": True,
            }
        ],
        "tool_choice": "none",
        "parallel_tool_calls": False,
        "store": False,
        "reasoning": {"effort": "none"},
        "max_output_tokens": 2048,
        "temperature": 0,
    }


def test_chat_request_shape(fake_server: FakeServer) -> None:
    request = question(
        instructions="be brief",
        tools=[READ_FILE, LIST_FILES],
        options={"max_output_tokens": 64, "temperature": 0, "reasoning": {"effort": "low"}},
    )
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        body = send(fake_server, client, request)
    assert fake_server.requests[-1].path == "/v1/chat/completions"
    assert body == {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": QUESTION},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": READ_FILE.name,
                    "description": READ_FILE.description,
                    "parameters": READ_FILE.parameters,
                    "strict": True,  # every property required, no others allowed
                },
            },
            {
                "type": "function",
                "function": {  # additionalProperties unsaid: not strict, so no key
                    "name": LIST_FILES.name,
                    "description": LIST_FILES.description,
                    "parameters": LIST_FILES.parameters,
                },
            },
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "max_tokens": 64,  # max_output_tokens in this wire's name
        "temperature": 0,
        "reasoning_effort": "low",
    }


def declared(server: FakeServer, client: ModelClient, tools: list[ToolSpec]) -> dict[str, Any]:
    """``strict`` of each tool as sent (None when the declaration leaves it out)."""
    body = send(server, client, question(tools=tools))
    found = {}
    for tool in body["tools"]:
        entry = tool.get("function", tool)  # chat nests the declaration, Responses does not
        found[entry["name"]] = entry.get("strict")
    return found


def test_the_project_tools_are_strict_only_where_strict_mode_accepts_them(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire, tmp_path: Path
) -> None:
    """OpenAI refuses a strict tool with an optional property (400 "Invalid schema ...
    'required' ... Missing 'offset'"): read_file and search_files have some."""
    from minipi.files import ProjectFiles, create_project_tools

    with ProjectFiles(tmp_path) as files:
        specs = [tool.spec() for tool in create_project_tools(files)]
    strict = declared(fake_server, model_client, specs)
    if wire == "responses":  # a missing "strict" counts as true there: always said
        assert strict == {"list_files": True, "read_file": False, "search_files": False}
    else:  # a missing "strict" is false on the chat wire
        assert strict == {"list_files": True, "read_file": None, "search_files": None}


def schema(**fields: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, **fields}


STRING = {"type": "string"}
ITEM = schema(properties={"x": STRING}, required=["x"])


@pytest.mark.parametrize(
    ("parameters", "strict"),
    [
        (schema(properties={"a": STRING}, required=["a"]), True),
        (schema(properties={}), True),
        (schema(properties={"a": STRING, "b": STRING}, required=["a"]), False),
        ({"type": "object", "properties": {"a": STRING}, "required": ["a"]}, False),
        (schema(properties={"a": STRING}, required=["a"], additionalProperties=True), False),
        (  # a nested object with an optional property
            schema(properties={"o": schema(properties={"x": STRING})}, required=["o"]),
            False,
        ),
        (  # objects in an array, all required
            schema(
                properties={"l": {"type": "array", "items": ITEM}},
                required=["l"],
            ),
            True,
        ),
        (  # an anyOf branch that allows more properties
            schema(
                properties={"u": {"anyOf": [STRING, {"type": "object"}]}},
                required=["u"],
            ),
            False,
        ),
        ({"type": "string"}, False),  # not an object at all
    ],
)
def test_strict_follows_the_schema_the_same_on_both_wires(
    fake_server: FakeServer, parameters: dict[str, Any], strict: bool
) -> None:
    tool = ToolSpec("f", "a tool", parameters)
    found = []
    for wire in ("chat", "responses"):
        endpoint = Endpoint(fake_server.base_url, "fake-model", wire=wire)
        with closing(connect(endpoint)) as client:
            found.append(declared(fake_server, client, [tool])["f"] or False)
    assert found == [strict, strict]


@pytest.mark.parametrize("choice", ["auto", "none", "required", "read_file"])
def test_tool_choice_forms(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire, choice: str
) -> None:
    body = send(fake_server, model_client, question(tools=[READ_FILE], tool_choice=choice))
    if choice != "read_file":
        assert body["tool_choice"] == choice
    elif wire == "responses":
        assert body["tool_choice"] == {"type": "function", "name": "read_file"}
    else:
        assert body["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}


def test_without_instructions_nothing_is_added(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    body = send(fake_server, model_client, question())
    assert "instructions" not in body
    assert len(body["input"] if "input" in body else body["messages"]) == 1


def test_chat_without_tools_leaves_tool_keys_out(fake_server: FakeServer) -> None:
    with closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client:
        body = send(fake_server, client, question(tool_choice="none"))
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(body)


def test_tool_result_shapes(fake_server: FakeServer, model_client: ModelClient, wire: Wire) -> None:
    items: list[Item] = [Message("user", "q"), FunctionCallOutput("call_1", "文件内容")]
    body = send(fake_server, model_client, ModelRequest(items))
    if wire == "responses":
        assert body["input"][1] == {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "文件内容",
        }
    else:
        assert body["messages"][1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "文件内容",
        }


@pytest.mark.parametrize("key", ["model", "tools", "tool_choice", "stream"])
def test_reserved_options_are_refused_before_sending(
    fake_server: FakeServer, model_client: ModelClient, key: str
) -> None:
    with pytest.raises(ConfigError, match=f"may not set {key}") as caught:
        model_client.create(question(options={key: "x"}))
    assert caught.value.code == "reserved_option"
    assert fake_server.requests == []


def test_chat_refuses_an_option_given_twice(fake_server: FakeServer) -> None:
    with (
        closing(connect(Endpoint(fake_server.base_url, "fake-model"))) as client,
        pytest.raises(ConfigError, match="'max_tokens' twice"),
    ):
        client.create(question(options={"max_tokens": 5, "max_output_tokens": 6}))


def test_an_option_that_is_not_json_is_a_config_error(model_client: ModelClient) -> None:
    with pytest.raises(ConfigError, match="cannot be encoded as JSON"):
        model_client.create(question(options={"temperature": {1, 2}}))


def test_body_is_compact_utf8_json_with_its_size_reported(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    fake_server.add(Turn("ok"))
    response = model_client.create(question())
    sent: RecordedRequest = fake_server.requests[-1]
    assert sent.headers["content-type"] == "application/json"
    assert QUESTION.encode() in sent.raw  # not \\u-escaped
    assert b", " not in sent.raw
    assert b": " not in sent.raw
    assert response.request_bytes == len(sent.raw) == int(sent.headers["content-length"])
    assert json.loads(sent.raw) == sent.body


@pytest.mark.parametrize("key", [None, "sk-test-123"])
def test_bearer_header_only_when_a_key_is_set(
    fake_server: FakeServer, wire: Wire, key: str | None
) -> None:
    endpoint = Endpoint(fake_server.base_url, "fake-model", api_key=key, wire=wire)
    with closing(connect(endpoint)) as client:
        send(fake_server, client, question())
    headers = fake_server.requests[-1].headers
    if key is None:
        assert "authorization" not in headers
    else:
        assert headers["authorization"] == "Bearer sk-test-123"
