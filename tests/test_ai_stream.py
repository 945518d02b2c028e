"""Streaming: the SSE parser, both stream readers, the real client over HTTP, the loop's retry."""

from __future__ import annotations

import json
from contextlib import closing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.agent import AgentConfig, ModelDelta, Notice, run_agent
from minipi.ai import ClientConfig, Delta, Endpoint, Message, ModelRequest, connect
from minipi.ai.sse import SSEParser
from minipi.ai.stream import ChatStream, ResponsesStream, StreamReader
from minipi.ai.testing import ScriptedModel, reply_text
from minipi.ai.types import FunctionCall, ModelResponse, ToolSpec, Wire
from minipi.errors import ModelError, ModelProtocolError, ModelStreamError
from support.fake import (
    Call,
    FakeServer,
    RawReply,
    Turn,
    chat_sse,
    render_chat,
    render_responses,
    responses_sse,
)

TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object"}),)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    frame = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    frame["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]  # type: ignore[assignment]
    return json.dumps(frame)


def _feed(reader: StreamReader, frames: list[str]) -> dict[str, Any]:
    for frame in frames:
        reader.event("message", frame)
    return reader.result()


def _calls(data: dict[str, Any]) -> list[tuple[str | None, str, str]]:
    return [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in data["choices"][0]["message"].get("tool_calls", [])
    ]


# -- the SSE parser ----------------------------------------------------------------------------


RECORDED = (
    b": keep-alive\r\n"
    b"event: response.output_text.delta\r\n"
    b'data: {"type":"response.output_text.delta","delta":"caf\xc3\xa9 \\u4e2d"}\r\n\r\n'
    b"data: line one\ndata: line two\n\n"
    b"data: first\r\ndata: second\r\n\r\n"
    b"id: 7\rretry: 10\rdata: cr only\r\r"
    b'data: {"choices":[{"index":0,"delta":{"content":"\xe4\xb8\xad\xe6\x96\x87"}}]}\n\n'
    b"data: [DONE]\n\n"
)
EXPECTED = [
    (
        "response.output_text.delta",
        '{"type":"response.output_text.delta","delta":"café \\u4e2d"}',
    ),
    ("message", "line one\nline two"),
    ("message", "first\nsecond"),
    ("message", "cr only"),
    ("message", '{"choices":[{"index":0,"delta":{"content":"中文"}}]}'),
    ("message", "[DONE]"),
]


def _parse(chunks: list[bytes]) -> list[tuple[str, str]]:
    parser = SSEParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events + parser.close()


def test_sse_parser_reads_every_line_ending_comment_and_field() -> None:
    assert _parse([RECORDED]) == EXPECTED


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(RECORDED)), max_size=12))
def test_any_split_of_a_recording_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [RECORDED[a:b] for a, b in zip([0, *points], [*points, len(RECORDED)], strict=True)]
    assert _parse(chunks) == EXPECTED


def test_a_crlf_split_between_its_cr_and_lf_is_one_line_end() -> None:
    assert _parse([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [("message", "a\nb")]


def test_an_unterminated_last_event_is_still_delivered() -> None:
    assert _parse([b"data: tail"]) == [("message", "tail")]


@pytest.mark.reliability
@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4000), max_size=10), st.booleans())
def test_any_split_of_a_recorded_stream_yields_the_same_calls(cuts: list[int], chat: bool) -> None:
    """RELIABILITY D11 / issue 5 part 4: split anywhere, same calls as unsplit."""
    turn = Turn(
        "Let me look.", [Call("read_file", {"path": "数据/a b.txt"}), Call("list_files", {})]
    )
    body = chat_sse(render_chat(turn)) if chat else responses_sse(render_responses(turn))
    points = sorted({c % (len(body) + 1) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    whole = _read(body, chat, [body])
    assert _read(body, chat, chunks) == whole
    assert [c[1:] for c in whole] == [
        ("read_file", '{"path":"数据/a b.txt"}'),
        ("list_files", "{}"),
    ]


def _read(body: bytes, chat: bool, chunks: list[bytes]) -> list[tuple[str, str, str]]:
    reader: StreamReader = ChatStream(None) if chat else ResponsesStream(None)
    parser = SSEParser()
    for chunk in chunks:
        for name, data in parser.feed(chunk):
            reader.event(name, data)
    for name, data in parser.close():
        reader.event(name, data)
    result = reader.result()
    if chat:
        return [(i or "", n, a) for i, n, a in _calls(result)]
    return [
        (o["call_id"], o["name"], o["arguments"])
        for o in result["output"]
        if o["type"] == "function_call"
    ]


# -- the chat reader ---------------------------------------------------------------------------


def test_d9_call_deltas_with_the_id_only_first() -> None:
    deltas: list[Delta] = []
    frames = [
        _chunk({"role": "assistant"}),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": ""}}
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "id": None, "function": {"arguments": '{"pa'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th":"a"}'}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    data = _feed(ChatStream(deltas.append), frames)
    assert _calls(data) == [("c1", "read_file", '{"path":"a"}')]
    assert data["choices"][0]["finish_reason"] == "tool_calls"
    assert [(d.kind, d.text, d.name) for d in deltas] == [
        ("call", "", "read_file"),
        ("call", '{"pa', "read_file"),
        ("call", 'th":"a"}', "read_file"),
    ]


def test_calls_that_all_say_index_0_are_told_apart_by_their_ids() -> None:
    frames = [
        _chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read_file"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"x"}'}}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "list_files"}}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"arguments": "{}"}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    assert _calls(_feed(ChatStream(None), frames)) == [
        ("a", "read_file", '{"path":"x"}'),
        ("b", "list_files", "{}"),
    ]


def test_calls_without_an_index_and_whole_object_arguments() -> None:
    frames = [
        _chunk(
            {
                "tool_calls": [
                    {"id": "a", "function": {"name": "read_file", "arguments": {"path": "x"}}}
                ]
            }
        ),
        _chunk({"tool_calls": [{"id": "b", "function": {"name": "list_files", "arguments": "{"}}]}),
        _chunk({"tool_calls": [{"function": {"arguments": "}"}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    assert _calls(_feed(ChatStream(None), frames)) == [
        ("a", "read_file", '{"path": "x"}'),
        ("b", "list_files", "{}"),
    ]


def test_text_reasoning_and_usage_are_assembled() -> None:
    deltas: list[Delta] = []
    frames = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"reasoning_content": "think"}),
        _chunk({"content": "Hel"}),
        _chunk({"content": "lo"}, "stop"),
        json.dumps({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}),
        "[DONE]",
    ]
    data = _feed(ChatStream(deltas.append), frames)
    message = data["choices"][0]["message"]
    assert (message["content"], message["reasoning_content"]) == ("Hello", "think")
    assert data["usage"] == {"prompt_tokens": 7, "completion_tokens": 2}
    assert [(d.kind, d.text) for d in deltas] == [
        ("reasoning", "think"),
        ("text", "Hel"),
        ("text", "lo"),
    ]


@pytest.mark.parametrize(
    ("frames", "missing"),
    [
        ([_chunk({"content": "partial"})], "finish reason"),
        ([_chunk({"content": "partial"}), "[DONE]"], "finish reason"),
        ([_chunk({"content": "all"}, "stop")], "[DONE]"),
    ],
    ids=["nothing", "done-without-finish", "finish-without-done"],
)
def test_a_stream_without_its_end_is_never_a_reply(frames: list[str], missing: str) -> None:
    with pytest.raises(ModelStreamError, match=missing.replace("[", r"\[")) as caught:
        _feed(ChatStream(None), frames)
    assert caught.value.code == "stream_incomplete"


def test_malformed_and_in_band_error_frames() -> None:
    with pytest.raises(ModelProtocolError) as caught:
        _feed(ChatStream(None), ['{"choices":[{"delta":{"content":"hi"'])
    assert caught.value.code == "malformed_stream"
    with pytest.raises(ModelError, match="boom"):
        _feed(ChatStream(None), [_chunk({"content": "a"}), '{"error": {"message": "boom"}}'])


# -- the responses reader ----------------------------------------------------------------------


def test_responses_stream_uses_completed_and_fills_an_empty_output() -> None:
    item = {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"}
    frames = [
        json.dumps(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "arguments": ""},
            }
        ),
        json.dumps(
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"}
        ),
        json.dumps({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json.dumps(
            {"type": "response.completed", "response": {"status": "completed", "output": []}}
        ),
    ]
    deltas: list[Delta] = []
    data = _feed(ResponsesStream(deltas.append), frames)
    assert data["output"] == [item]
    assert [(d.kind, d.text, d.name) for d in deltas] == [
        ("call", "", "read_file"),
        ("call", "{}", "read_file"),
    ]


def test_responses_stream_without_completed_or_with_failure() -> None:
    delta = json.dumps({"type": "response.output_text.delta", "output_index": 0, "delta": "hi"})
    with pytest.raises(ModelStreamError):
        _feed(ResponsesStream(None), [delta])
    failed = {"type": "response.failed", "response": {"error": {"message": "overloaded"}}}
    with pytest.raises(ModelError, match="overloaded"):
        _feed(ResponsesStream(None), [delta, json.dumps(failed)])


# -- the real client over HTTP -----------------------------------------------------------------


def _request(deltas: list[Delta]) -> ModelRequest:
    return ModelRequest([Message("user", "q")], tools=TOOLS, on_delta=deltas.append)


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_streamed_and_plain_replies_decode_the_same(wire: Wire) -> None:
    turn = Turn("Reading 中文 now.", [Call("read_file", {"path": "a.txt"}, "call_1")])
    with FakeServer([turn, turn]) as server:
        endpoint = Endpoint(server.base_url, "fake-model", wire=wire)
        deltas: list[Delta] = []
        with closing(connect(endpoint, ClientConfig(stream=True))) as streamed:
            got = streamed.create(_request(deltas))
        with closing(connect(endpoint)) as plain:
            expected = plain.create(_request([]))
        sent = [r.body for r in server.requests]
    assert sent[0] is not None
    assert sent[0]["stream"] is True
    assert sent[1] is not None
    assert "stream" not in sent[1]
    assert [_neutral(i) for i in got.items] == [_neutral(i) for i in expected.items]
    assert got.finish_reason == expected.finish_reason == "tool_calls"
    assert got.usage.output_tokens == expected.usage.output_tokens > 0
    assert "".join(d.text for d in deltas if d.kind == "text") == "Reading 中文 now."
    assert "".join(d.text for d in deltas if d.kind == "call") == '{"path":"a.txt"}'


def _neutral(item: object) -> tuple[object, ...]:
    if isinstance(item, FunctionCall):
        return ("call", item.call_id, item.name, item.arguments)
    assert isinstance(item, Message)
    return ("message", item.role, item.text)


def test_a_server_that_answers_a_stream_request_with_plain_json() -> None:
    message = {"role": "assistant", "content": "hi"}
    plain = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    with FakeServer([RawReply.json(plain)]) as server:
        endpoint = Endpoint(server.base_url, "fake-model")
        with closing(connect(endpoint, ClientConfig(stream=True))) as client:
            response = client.create(_request([]))
    assert response.items == (Message("assistant", "hi", message, "chat"),)


def test_a_cut_stream_over_http_is_an_error_not_an_answer() -> None:
    cut = chat_sse(
        {
            "id": "x",
            "created": 1,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "The answer is 4"},
                    "finish_reason": None,
                }
            ],
        }
    ).replace(b"data: [DONE]\n\n", b"")
    with FakeServer([RawReply(200, cut, {"content-type": "text/event-stream"})]) as server:
        endpoint = Endpoint(server.base_url, "fake-model")
        with (
            closing(connect(endpoint, ClientConfig(stream=True))) as client,
            pytest.raises(ModelStreamError, match="without a finish reason"),
        ):
            client.create(_request([]))


# -- the loop ----------------------------------------------------------------------------------


def _stalls_then(reply: ModelResponse, times: int) -> list[Any]:
    def stall(request: ModelRequest) -> ModelResponse:
        assert request.on_delta is not None
        request.on_delta(Delta("text", "partial answer that must not count"))
        raise ModelStreamError("the stream went silent", code="stream_stalled")

    return [stall] * times + [reply]


def test_the_loop_asks_once_more_after_a_broken_stream() -> None:
    model = ScriptedModel(_stalls_then(reply_text("the real answer"), 1))
    events: list[Any] = []
    result = run_agent(model, [], AgentConfig(), "q", events.append)
    assert (result.status, result.answer) == ("succeeded", "the real answer")
    assert len(model.requests) == 2
    assert [e.code for e in events if isinstance(e, Notice)] == ["retry"]
    assert any(isinstance(e, ModelDelta) for e in events)  # deltas reach the sink


def test_the_loop_gives_up_after_a_second_broken_stream() -> None:
    model = ScriptedModel(_stalls_then(reply_text("never"), 2))
    result = run_agent(model, [], AgentConfig(), "q")
    assert (result.status, result.code, result.answer) == ("failed", "stream_stalled", "")
    assert len(model.requests) == 2


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_streamed_requests_reuse_one_connection(wire: Wire) -> None:
    """The body is read to its end after the end marker, so keep-alive works for streams."""
    with FakeServer([Turn("one"), Turn("two"), Turn("three")]) as server:
        endpoint = Endpoint(server.base_url, "fake-model", wire=wire)
        with closing(connect(endpoint, ClientConfig(stream=True))) as client:
            for _ in range(3):
                client.create(_request([]))
        assert server.connections == 1


def test_a_connection_dropped_after_the_end_marker_still_gives_the_reply() -> None:
    """[DONE] arrived whole; the server then vanished before ending the chunked body."""
    import socket
    import threading

    frames = chat_sse(
        {
            "id": "x",
            "created": 1,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "whole"},
                    "finish_reason": "stop",
                }
            ],
        }
    )
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            chunk = b"%x\r\n%s\r\n" % (len(frames), frames)
            connection.sendall(head + b"transfer-encoding: chunked\r\n\r\n" + chunk)
            # no terminating 0-size chunk: the connection just closes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:
        with closing(connect(Endpoint(base, "fake-model"), ClientConfig(stream=True))) as client:
            response = client.create(_request([]))
    finally:
        thread.join(5)
        listener.close()
    assert [i.text for i in response.items if isinstance(i, Message)] == ["whole"]
