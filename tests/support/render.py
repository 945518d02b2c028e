"""The fake server's proper replies, in each wire's format: one renderer per wire, plain and SSE.

    completion = render_chat(Turn("hi", [Call("read_file", {"path": "a.txt"})]))
    chat_sse(completion)                 # the same reply as the chunk stream servers send

``render_chat`` / ``render_responses`` turn a ``Turn`` into the JSON object a server answers
(``render`` picks by wire); ``chat_frames`` / ``responses_frames`` turn that object into the
Server-Sent Events the same server sends when the request says ``"stream": true``, one frame
each (``chat_sse`` / ``responses_sse``: the frames joined). Text and arguments arrive in
``pieces``; a chat call's id and name only in its first chunk, ``"id": null`` in the next
(RELIABILITY D9). Everything is deterministic: ids come from a counter, ``created`` is fixed,
usage is computed from the sizes (``usage``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "CREATED",
    "MODEL",
    "Call",
    "JsonDict",
    "Turn",
    "WireName",
    "chat_frames",
    "chat_sse",
    "compact_json",
    "parse_object",
    "pieces",
    "render",
    "render_chat",
    "render_responses",
    "responses_frames",
    "responses_sse",
    "stream_frames",
    "usage",
]

JsonDict: TypeAlias = dict[str, Any]
WireName: TypeAlias = Literal["chat", "responses"]
CREATED = 1_700_000_000  # fixed, so rendered replies are deterministic
MODEL = "fake-model"


@dataclass(frozen=True)
class Call:
    """A tool call in a ``Turn``. ``call_id="auto"`` makes a unique id; ``None`` omits it."""

    name: str
    arguments: JsonDict | str
    call_id: str | None = "auto"


@dataclass(frozen=True)
class Turn:
    """One model reply. ``finish="auto"`` is ``tool_calls`` with calls, else ``stop``;
    ``"length"`` renders as ``incomplete``/``max_output_tokens`` on the Responses wire;
    ``None`` sends no finish reason (and no terminal Responses event when streamed)."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    finish: str | None = "auto"
    reasoning: str | None = None


def compact_json(data: object) -> bytes:
    """``data`` as the compact UTF-8 JSON servers send (no spaces, no ``\\u`` escapes)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def parse_object(raw: bytes) -> JsonDict | None:
    """``raw`` parsed as a JSON object; None when it is not one."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def pieces(text: str, n: int = 3) -> list[str]:
    """``text`` in ``n`` nearly equal non-empty pieces (fewer when it is shorter), cut anywhere,
    even mid-escape or mid-character of the JSON it will become."""
    if not text:
        return []
    n = max(1, min(n, len(text)))
    size, extra = divmod(len(text), n)
    bounds = list(itertools.accumulate(size + (i < extra) for i in range(n)))
    return [text[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]


# --- plain JSON ----------------------------------------------------------------------------


def render(
    turn: Turn,
    wire: WireName,
    model: str = MODEL,
    size: int = 400,
    ids: itertools.count[int] | None = None,
) -> JsonDict:
    """``turn`` as ``wire``'s JSON reply to a request of ``size`` bytes (see ``usage``)."""
    renderer = render_chat if wire == "chat" else render_responses
    return renderer(turn, model, size, ids)


def render_chat(
    turn: Turn, model: str = MODEL, size: int = 400, ids: itertools.count[int] | None = None
) -> JsonDict:
    """``turn`` as a ``chat.completion``; ids from ``ids`` (a fresh counter from 1 if None)."""
    ids = itertools.count(1) if ids is None else ids
    n = next(ids)
    message: JsonDict = {
        "role": "assistant",
        "content": turn.text if turn.text or not turn.calls else None,
    }
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = [_chat_call(call, ids) for call in turn.calls]
    finish = ("tool_calls" if turn.calls else "stop") if turn.finish == "auto" else turn.finish
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage(turn, size, "prompt_tokens", "completion_tokens", "prompt_tokens_details"),
    }


def _chat_call(call: Call, ids: itertools.count[int]) -> JsonDict:
    function = {"name": call.name, "arguments": _arguments(call)}
    entry: JsonDict = {"type": "function", "function": function}
    call_id = _call_id(call, ids)
    return entry if call_id is None else {"id": call_id, **entry}


def render_responses(
    turn: Turn, model: str = MODEL, size: int = 400, ids: itertools.count[int] | None = None
) -> JsonDict:
    """``turn`` as a Responses API ``response``; ids as in ``render_chat``."""
    ids = itertools.count(1) if ids is None else ids
    n = next(ids)
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": CREATED,
        "model": model,
        **_status(turn.finish),
        "output": _output(turn, n, ids),
        "error": None,
        "usage": usage(turn, size, "input_tokens", "output_tokens", "input_tokens_details"),
    }


def _output(turn: Turn, n: int, ids: itertools.count[int]) -> list[JsonDict]:
    output: list[JsonDict] = []
    if turn.reasoning is not None:
        reasoning = [{"type": "reasoning_text", "text": turn.reasoning}]
        output.append({"type": "reasoning", "id": f"rs_{n}", "summary": [], "content": reasoning})
    if turn.text or not turn.calls:
        text = {"type": "output_text", "text": turn.text, "annotations": []}
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        )
    for call in turn.calls:
        item: JsonDict = {"type": "function_call", "id": f"fc_{next(ids)}"}
        call_id = _call_id(call, ids)
        if call_id is not None:
            item["call_id"] = call_id
        item.update(name=call.name, arguments=_arguments(call), status="completed")
        output.append(item)
    return output


def _status(finish: str | None) -> JsonDict:
    if finish is None:
        return {}
    if finish in ("auto", "stop", "tool_calls"):
        return {"status": "completed", "incomplete_details": None}
    reason = {"length": "max_output_tokens"}.get(finish, finish)
    return {"status": "incomplete", "incomplete_details": {"reason": reason}}


def usage(turn: Turn, size: int, inputs: str, outputs: str, details: str) -> JsonDict:
    """Token counts that tests can predict: request bytes // 4 in, output chars // 4 out."""
    produced = turn.text + (turn.reasoning or "") + "".join(_arguments(c) for c in turn.calls)
    prompt, completion = max(1, size // 4), max(1, len(produced) // 4)
    return {
        inputs: prompt,
        outputs: completion,
        "total_tokens": prompt + completion,
        details: {"cached_tokens": 0},
    }


def _arguments(call: Call) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    return compact_json(call.arguments).decode()


def _call_id(call: Call, ids: itertools.count[int]) -> str | None:
    return f"call_{next(ids):04d}" if call.call_id == "auto" else call.call_id


# --- Server-Sent Events --------------------------------------------------------------------


def stream_frames(
    reply: JsonDict, wire: WireName, n: int = 3, usage_chunk: bool = True
) -> list[bytes]:
    """``wire``'s rendered ``reply`` as the SSE frames of its stream (see the two below)."""
    if wire == "chat":
        return chat_frames(reply, n, usage_chunk)
    return responses_frames(reply, n)


def _frame(value: object) -> bytes:
    return b"data: " + compact_json(value) + b"\n\n"


def chat_sse(completion: JsonDict, n: int = 3, usage_chunk: bool = True) -> bytes:
    """``chat_frames`` joined: the body of a streamed chat reply."""
    return b"".join(chat_frames(completion, n, usage_chunk))


def chat_frames(completion: JsonDict, n: int = 3, usage_chunk: bool = True) -> list[bytes]:
    """A ``chat.completion`` as ``chat.completion.chunk`` frames: a role chunk, reasoning and
    text in ``n`` pieces each, each call (id and name first, then its arguments in ``n``
    pieces), a finish chunk unless ``finish_reason`` is None, a ``choices: []`` usage chunk
    when ``usage_chunk`` and the completion has usage, then ``[DONE]``."""
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: JsonDict, finish: str | None = None) -> bytes:
        return _frame({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [
        chunk({"reasoning_content": p}) for p in pieces(message.get("reasoning_content") or "", n)
    ]
    frames += [chunk({"content": p}) for p in pieces(message.get("content") or "", n)]
    for index, call in enumerate(message.get("tool_calls") or []):
        frames += [chunk({"tool_calls": [delta]}) for delta in _call_deltas(index, call, n)]
    if choice["finish_reason"] is not None:
        frames.append(chunk({}, choice["finish_reason"]))
    if usage_chunk and "usage" in completion:
        frames.append(_frame({**base, "choices": [], "usage": completion["usage"]}))
    return [*frames, b"data: [DONE]\n\n"]


def _call_deltas(index: int, call: JsonDict, n: int) -> list[JsonDict]:
    function = call["function"]
    first: JsonDict = {"index": index, "type": "function"}
    if "id" in call:
        first["id"] = call["id"]
    first["function"] = {"name": function["name"], "arguments": ""}
    deltas = [first]
    for k, piece in enumerate(pieces(function["arguments"], n)):
        delta: JsonDict = {"index": index, "function": {"arguments": piece}}
        if k == 0:
            delta["id"] = None  # vLLM: the id is null after a call's first chunk
        deltas.append(delta)
    return deltas


def responses_sse(response: JsonDict, n: int = 3) -> bytes:
    """``responses_frames`` joined: the body of a streamed Responses reply."""
    return b"".join(responses_frames(response, n))


class _Events:
    """Responses stream events with running sequence numbers."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self._numbers = itertools.count()

    def add(self, kind: str, **fields: Any) -> None:
        payload = compact_json({"type": kind, "sequence_number": next(self._numbers), **fields})
        self.frames.append(f"event: {kind}\ndata: ".encode() + payload + b"\n\n")


def responses_frames(response: JsonDict, n: int = 3) -> list[bytes]:
    """A Responses API ``response`` as its named events: created, in_progress, each output
    item (added, its parts and deltas in ``n`` pieces, done), then ``response.completed``
    (``response.incomplete`` when so; nothing when the response has no status)."""
    events = _Events()
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events.add("response.created", response=started)
    events.add("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        _item_events(events, index, item, n)
    status = response.get("status")
    if status is not None:
        kind = "response.completed" if status == "completed" else "response.incomplete"
        events.add(kind, response=response)
    return events.frames


def _item_events(events: _Events, index: int, item: JsonDict, n: int) -> None:
    ids = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        added = {**item, "arguments": "", "status": "in_progress"}
        events.add("response.output_item.added", output_index=index, item=added)
        for piece in pieces(item["arguments"], n):
            events.add("response.function_call_arguments.delta", **ids, delta=piece)
        events.add("response.function_call_arguments.done", **ids, arguments=item["arguments"])
    else:
        added = {**item, "content": []}
        if "status" in item:
            added["status"] = "in_progress"
        events.add("response.output_item.added", output_index=index, item=added)
        kind = "output_text" if item["type"] == "message" else "reasoning_text"
        for part_index, part in enumerate(item.get("content") or []):
            where = {**ids, "content_index": part_index}
            events.add("response.content_part.added", **where, part={**part, "text": ""})
            for piece in pieces(part["text"], n):
                events.add(f"response.{kind}.delta", **where, delta=piece)
            events.add(f"response.{kind}.done", **where, text=part["text"])
            events.add("response.content_part.done", **where, part=part)
    events.add("response.output_item.done", output_index=index, item=item)
