"""Streamed replies: SSE events of either wire assembled into the JSON a plain reply has.

Each reader takes the ``(event, data)`` pairs of one stream, reports ``Delta``s as they come,
and when the stream has ended properly returns the object the non-streamed API would have
answered, so that one decoder (``chat.py`` / ``responses.py``) reads both. A stream that ends
before its finish (no ``finish_reason`` or no ``[DONE]``; no ``response.completed``) raises
``ModelStreamError``: its partial text is never an answer and its partial calls never run.
Each reader counts its ``progress`` (events that add to the reply) and ``size`` (what it
gathered), which ``HttpCore`` holds to ``stream_idle_timeout`` and ``max_response_bytes``.

Chat tool-call deltas are keyed by ``index`` (RELIABILITY D9/D11): the id and name usually
come only in a call's first chunk (later chunks say ``"id": null`` or nothing), arguments are
split anywhere. Servers that give every call index 0 are told apart by a new id with a name;
a chunk with no index at all continues the last call unless it brings a new id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from minipi.ai.depth import check_depth, check_values
from minipi.ai.types import Delta, DeltaSink, JsonObject
from minipi.errors import ModelError, ModelProtocolError, ModelStreamError
from minipi.said import Said

__all__ = ["ChatStream", "ResponsesStream", "StreamReader", "raise_inband_error"]


class StreamReader(Protocol):
    """What ``HttpCore.post_json`` feeds a streamed answer to: ``event`` per SSE event, then
    ``result``. ``finished`` turns true once the stream's end marker arrived (nothing after it
    is read). ``progress`` counts the events that added to the reply (text, reasoning, a
    call's piece, an item, the finish): keep-alives and empty deltas leave it as it is, so
    they do not hold the idle timeout off. ``size`` is what the reply has gathered so far
    (characters of text, reasoning, names and arguments; the JSON of kept items), held
    under ``max_response_bytes``."""

    finished: bool
    progress: int
    size: int

    def event(self, name: str, data: str) -> None: ...

    def result(self) -> JsonObject: ...


def _ignore(delta: Delta) -> None:
    """The sink of a stream nobody watches."""


def _frame(data: str) -> Any:
    check_values(data, "a stream frame")
    try:
        frame = json.loads(data)
    except (ValueError, RecursionError):
        raise ModelProtocolError(
            f"the stream sent a frame that is not JSON: {data[:120]!r}", code="malformed_stream"
        ) from None
    check_depth(frame, "a stream frame")
    return frame


def _is_done(data: str) -> bool:
    """The chat wire's ``[DONE]`` marker (a short frame only: the check stays cheap)."""
    return len(data) < 16 and data.strip() == "[DONE]"


def _object_frame(data: str) -> JsonObject:
    frame = _frame(data)
    if not isinstance(frame, dict):
        raise ModelProtocolError(f"a stream frame is not an object: {data[:120]!r}")
    return frame


def _dicts(value: object) -> list[JsonObject]:
    """The objects of ``value`` when it is a list (others are skipped); else none."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _same_call(known: _Call, index: int | None, new_id: str | None, name: str | None) -> bool:
    """Whether a delta continues ``known``: it brings no other id, or another id at a known
    index but no function name (the rule of ``ChatStream._position``)."""
    fresh = new_id is not None and known.id is not None and new_id != known.id
    return not fresh or (index is not None and name is None)


def _raise_error_event(kind: str, frame: JsonObject) -> None:
    """A Responses ``error`` event, or a frame carrying an error, as a ``ModelError``."""
    if kind == "error":
        message = frame.get("message") or frame.get("error") or frame
        raise_inband_error({"error": message})
    raise_inband_error(frame)


def _arguments(arguments: object) -> str:
    """A call delta's arguments as text: a string as is, a whole object (Ollama) as JSON."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    return json.dumps(arguments, ensure_ascii=False)


def raise_inband_error(data: JsonObject, url: str = "") -> None:
    """A 2xx body or a stream frame that carries ``{"error": ...}`` (E11), or a failed
    status, is a ``ModelError`` with the server's message."""
    error = data.get("error")
    if not error and data.get("status") != "failed":
        return
    message = error.get("message") if isinstance(error, dict) else error
    shown = message if isinstance(message, str) and message else json.dumps(error)[:300]
    where = f" at {url}" if url else ""
    raise ModelError(f"the model server{where} reported an error: {shown}", url=url)


@dataclass(slots=True)
class _Call:
    id: str | None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatStream:
    """``chat.completion.chunk`` frames -> one ``chat.completion`` object."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self.finished = False
        self.progress = 0
        self.size = 0
        self._emit = on_delta or _ignore
        self._head: JsonObject = {}
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_Call] = []
        self._by_index: dict[int, int] = {}  # wire index -> position in _calls
        self._finish: str | None = None
        self._usage: Any = None

    def event(self, name: str, data: str) -> None:
        if _is_done(data):
            self.finished = True
            return
        frame = _object_frame(data)
        raise_inband_error(frame)
        if not self._head:
            self._head = {k: frame[k] for k in ("id", "model", "created") if k in frame}
        if isinstance(frame.get("usage"), dict):
            self._usage = frame["usage"]
        for choice in _dicts(frame.get("choices")):
            if choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: JsonObject) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._piece("text", self._text, delta.get("content"))
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            self._piece("reasoning", self._reasoning, reasoning)
            for entry in _dicts(delta.get("tool_calls")):
                self._call(entry)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self._finish = reason
            self._grew(0)

    def _piece(self, kind: Literal["text", "reasoning"], kept: list[str], piece: object) -> None:
        """A delta's text or reasoning (a non-empty string), kept and reported."""
        if isinstance(piece, str) and piece:
            kept.append(piece)
            self._grew(len(piece))
            self._emit(Delta(kind, piece))

    def _grew(self, size: int) -> None:
        self.progress += 1
        self.size += size

    def _call(self, entry: JsonObject) -> None:
        index, new_id = entry.get("index"), entry.get("id")
        function = entry.get("function")
        function = function if isinstance(function, dict) else {}
        name, new_id = _text_or_none(function.get("name")), _text_or_none(new_id)
        position = self._position(index if isinstance(index, int) else None, new_id, name)
        call = self._calls[position]
        if name and not call.name:
            call.name = name
            self._grew(len(name))
        piece = _arguments(function.get("arguments"))
        if piece:
            call.arguments.append(piece)
            self._grew(len(piece))
        if piece or name:
            self._emit(Delta("call", piece, position, call.name))

    def _position(self, index: int | None, new_id: str | None, name: str | None) -> int:
        """Which call a delta belongs to: a new one for a new index, or a new id (with a
        name) at a known index, or a new id without an index; else the current one."""
        current = self._by_index.get(index) if index is not None else len(self._calls) - 1
        if (
            current is not None
            and current >= 0
            and _same_call(self._calls[current], index, new_id, name)
        ):
            known = self._calls[current]
            known.id = known.id or new_id
            return current
        self._calls.append(_Call(new_id))
        if index is not None:
            self._by_index[index] = len(self._calls) - 1
        return len(self._calls) - 1

    def result(self) -> JsonObject:
        if self._finish is None or not self.finished:
            missing = "stream_no_finish" if self._finish is None else "stream_no_done"
            raise ModelStreamError(Said.of(missing))
        message: JsonObject = {"role": "assistant", "content": "".join(self._text) or None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": "".join(c.arguments)},
                }
                for c in self._calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": self._finish}
        data: JsonObject = {**self._head, "object": "chat.completion", "choices": [choice]}
        if self._usage is not None:
            data["usage"] = self._usage
        return data


_ITEM_EVENTS = frozenset({"response.output_item.added", "response.output_item.done"})
_END_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_PROGRESS = _ITEM_EVENTS | _END_EVENTS
"""Responses events that add to the reply even without a ``delta`` text."""


class ResponsesStream:
    """Responses API events -> the final ``response`` object (``response.completed``)."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self.finished = False
        self.progress = 0
        self.size = 0
        self._emit = on_delta or _ignore
        self._response: JsonObject | None = None
        self._items: dict[int, JsonObject] = {}
        self._names: dict[int, str] = {}

    def event(self, name: str, data: str) -> None:
        if _is_done(data):
            return
        frame = _object_frame(data)
        kind = frame.get("type") or name
        _raise_error_event(kind, frame)
        index = frame.get("output_index")
        index = index if isinstance(index, int) else 0
        delta = frame.get("delta")
        piece = delta if isinstance(delta, str) else ""
        self._count(kind, piece, data)
        if kind in _ITEM_EVENTS:
            self._item(kind, index, frame.get("item"))
        elif kind in _END_EVENTS:
            self._end(kind, frame.get("response"))
        elif piece:
            self._delta(kind, piece, index)

    def _delta(self, kind: str, piece: str, index: int) -> None:
        """Report the text, reasoning or call arguments of a ``*.delta`` event."""
        if kind == "response.output_text.delta":
            self._emit(Delta("text", piece))
        elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            self._emit(Delta("reasoning", piece))
        elif kind == "response.function_call_arguments.delta":
            self._emit(Delta("call", piece, index, self._names.get(index, "")))

    def _count(self, kind: str, piece: str, data: str) -> None:
        """Progress and size: a delta's text; a kept item's JSON."""
        if piece or kind in _PROGRESS:
            self.progress += 1
            self.size += len(piece) + (len(data) if kind == "response.output_item.done" else 0)

    def _item(self, kind: str, index: int, item: object) -> None:
        if not isinstance(item, dict):
            return
        name = item.get("name") if item.get("type") == "function_call" else None
        if isinstance(name, str) and index not in self._names:
            self._names[index] = name
            self._emit(Delta("call", "", index, name))
        if kind == "response.output_item.done":
            self._items[index] = item

    def _end(self, kind: str, response: object) -> None:
        if not isinstance(response, dict):
            raise ModelProtocolError(f"`{kind}` carried no response object")
        if kind == "response.failed":
            raise_inband_error({"error": response.get("error") or "the response failed"})
        self._response = response
        self.finished = True

    def result(self) -> JsonObject:
        if self._response is None:
            raise ModelStreamError(Said.of("stream_no_completed"))
        output = self._response.get("output")
        if (not isinstance(output, list) or not output) and self._items:
            return {**self._response, "output": [self._items[i] for i in sorted(self._items)]}
        return self._response
