"""A scripted, in-process model for tests and docs (no HTTP).

model = ScriptedModel([
    reply_calls(("read_file", {"path": "a.txt"})),
    reply_text("done"),
])
result = run_agent(model, tools, config, "question")
model.assert_complete()
assert model.requests[1].items[-1].output == "..."
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TypeAlias

from minipi.ai.types import (
    Delta,
    FunctionCall,
    Item,
    JsonObject,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    Usage,
)
from minipi.errors import ModelProtocolError

__all__ = [
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "reply_calls",
    "reply_text",
    "stream_deltas",
]

ScriptedReply: TypeAlias = ModelResponse | Callable[[ModelRequest], ModelResponse]
"""A canned response, or a function of the request that makes one."""

ScriptedCall: TypeAlias = tuple[str, JsonObject | str] | tuple[str, JsonObject | str, str | None]
"""``(name, arguments)`` or ``(name, arguments, call_id)``; arguments as a dict or JSON text."""


class ScriptedModel:
    """A ``ModelClient`` that plays ``script`` in order and records every request.

    Each recorded request holds a snapshot (tuple) of the items it was sent, so later changes
    to the caller's history do not rewrite it. Asking for more responses than the script has
    raises ``ModelProtocolError`` (the loop ends the run failed), never a hang or a bare
    ``StopIteration``.

    A request with ``on_delta`` is answered as a stream would be: before the response is
    returned, the sink sees its reasoning and text in a few pieces each, then each call's
    name and its arguments in pieces (``Delta``s, as ``stream.py`` reports them).
    """

    def __init__(self, script: Iterable[ScriptedReply], model: str = "scripted-model") -> None:
        self.model = model
        self._script = list(script)
        self._next = 0
        self._lock = threading.Lock()
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        """Replies not yet used."""
        return len(self._script) - self._next

    def create(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.requests.append(replace(request, items=tuple(request.items)))
            if self._next >= len(self._script):
                raise ModelProtocolError(
                    f"ScriptedModel: script exhausted after {len(self._script)} responses; "
                    "the loop asked for one more",
                    code="script_exhausted",
                )
            reply = self._script[self._next]
            self._next += 1
        response = reply(request) if callable(reply) else reply
        if request.on_delta is not None:
            for delta in stream_deltas(response.items):
                request.on_delta(delta)
        return response

    def assert_complete(self) -> None:
        """Fail (AssertionError) if the script still has replies: the run ended early."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel: {self.remaining} of {len(self._script)} responses were never "
                f"asked for ({len(self.requests)} requests made)"
            )

    def close(self) -> None:
        """Nothing to release; present for the ``ModelClient`` protocol."""


def stream_deltas(items: Iterable[Item], pieces: int = 3) -> Iterator[Delta]:
    """The ``Delta``s a stream of a reply made of ``items`` reports: reasoning and assistant
    text cut into ``pieces`` pieces, each call's name (with no text), then its arguments in
    pieces; ``index`` is the call's position among the reply's calls."""
    calls = 0
    for item in items:
        if isinstance(item, Reasoning):
            yield from (Delta("reasoning", piece) for piece in _pieces(item.text, pieces))
        elif isinstance(item, Message) and item.role == "assistant":
            yield from (Delta("text", piece) for piece in _pieces(item.text, pieces))
        elif isinstance(item, FunctionCall):
            yield Delta("call", "", calls, item.name)
            for piece in _pieces(item.arguments, pieces):
                yield Delta("call", piece, calls, item.name)
            calls += 1


def _pieces(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def reply_text(text: str) -> ModelResponse:
    """A final answer: one assistant message, ``finish_reason="stop"``."""
    return ModelResponse((Message("assistant", text),), "stop", Usage(requests=1))


def reply_calls(*calls: ScriptedCall, text: str = "") -> ModelResponse:
    """Tool calls (and optional text before them), ``finish_reason="tool_calls"``.

    A dict of arguments is sent as JSON text; a string is sent as is (to script malformed
    arguments). A call without an id gets a unique ``call_<hex>`` one.
    """
    items: list[Item] = [Message("assistant", text)] if text else []
    for call in calls:
        name, arguments = call[0], call[1]
        call_id = call[2] if len(call) == 3 else None
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        items.append(FunctionCall(call_id or f"call_{uuid.uuid4().hex[:12]}", name, arguments))
    return ModelResponse(tuple(items), "tool_calls", Usage(requests=1))
