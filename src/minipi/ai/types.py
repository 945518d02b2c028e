"""Neutral, wire-independent types of the model layer.

A conversation is a list of items. The loop only ever sees these; the wire modules
(``responses.py``, ``chat.py``) translate them to and from JSON at the HTTP boundary.
Items the model produced keep the wire JSON they came from in ``raw`` (with ``wire`` naming
the API), so that the same wire replays them verbatim, reasoning items included. For Chat
Completions one assistant message becomes several items that share the same ``raw`` object;
the encoder emits that message once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
Wire: TypeAlias = Literal["responses", "chat"]


@dataclass(frozen=True, slots=True)
class Message:
    """Text from the user, or text the assistant produced.

    ``cited``: lines minipi attached to an assistant's answer (guided mode's facts, each a
    verbatim piece of a tool result with its file), not the model's text: never sent on any
    wire, never shown to the model as its own, saved with the item.

    ``by_minipi``: a user turn minipi wrote itself (a nudge that refuses an answer, a retry
    request), not the caller's: sent as a user message on the wire, and to every other
    reader never the question (``last_question``, ``since_question``)."""

    role: Literal["user", "assistant", "system"]
    text: str
    raw: JsonObject | None = None
    wire: Wire | None = None
    type: Literal["message"] = "message"
    cited: tuple[str, ...] = ()
    by_minipi: bool = False


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """The model asks for one tool call. ``arguments`` is the JSON text as the model sent it."""

    call_id: str
    name: str
    arguments: str
    raw: JsonObject | None = None
    wire: Wire | None = None
    type: Literal["function_call"] = "function_call"


@dataclass(frozen=True, slots=True)
class FunctionCallOutput:
    """The result of one call, paired to it by ``call_id``."""

    call_id: str
    output: str
    _: KW_ONLY
    is_error: bool = False
    """The tool refused or failed (not sent on the wire: the output text says so)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """The tool result's ``details`` (``ToolResult.details``), never sent on the wire: kept
    and saved as they are, for whoever reads them (a JSON object, its arrays as lists)."""
    type: Literal["function_call_output"] = "function_call_output"


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning the model emitted; replayed, never shown as an answer."""

    text: str
    raw: JsonObject | None = None
    wire: Wire | None = None
    type: Literal["reasoning"] = "reasoning"


Item: TypeAlias = Message | FunctionCall | FunctionCallOutput | Reasoning


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of a reply while it streams: text, reasoning, or part of a tool call.

    For ``kind="call"``, ``index`` is the call's position in the reply, ``name`` is set on its
    first piece and ``text`` is a piece of its arguments. Deltas are for showing progress only:
    the reply that counts is the ``ModelResponse`` built when the stream has ended properly.
    """

    kind: Literal["text", "reasoning", "call"]
    text: str = ""
    index: int = 0
    name: str = ""


DeltaSink: TypeAlias = Callable[[Delta], None]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about one tool."""

    name: str
    description: str
    parameters: JsonObject
    _: KW_ONLY
    mutating: bool = False
    """The tool changes things (not sent on the wire): guided mode treats its success as a
    change of the world, after which earlier reads may be repeated."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """The tool's ``details`` (``AgentTool.details``), never sent on the wire: for whoever
    turns requests into something else (a JSON object)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one request (or a sum of several)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.requests + other.requests,
        )


RESERVED_OPTIONS = frozenset(
    {
        "model",
        "instructions",
        "input",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "previous_response_id",
        "store",
        "stream",
    }
)
"""Request keys the wires build from a ``ModelRequest`` (on either wire): its ``options`` may
not set them (``ConfigError`` with code ``reserved_option``)."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to the model, in neutral form (the model's name is the client's: see
    ``ModelClient.model``).

    ``tool_choice`` is ``"auto"``, ``"none"``, ``"required"`` or the name of one tool that must
    be called. ``options`` are extra wire keys (temperature, max_output_tokens, reasoning...);
    they may not set a key of ``RESERVED_OPTIONS``.
    """

    items: Sequence[Item]
    instructions: str | None = None
    tools: Sequence[ToolSpec] = ()
    tool_choice: str = "auto"
    parallel_tool_calls: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    on_delta: DeltaSink | None = field(default=None, compare=False)
    """Called with each ``Delta`` when the client streams (``ClientConfig(stream=True)``)."""
    deadline: float | None = field(default=None, compare=False)
    """``time.monotonic()`` by which the request must be done, answer read (the run's
    ``max_seconds``): past it the client gives up with ``ModelDeadlineError``."""
    output_schema: JsonObject | None = None
    """The reply must be one JSON value of this JSON Schema (a structured answer): each
    client constrains it its own way (the chat wire's ``response_format``, the responses
    wire's ``text.format``, guided mode's grammar)."""
    cancel: threading.Event | None = field(default=None, compare=False)
    """Set once the answer is no longer wanted (a batch stopping at Ctrl-C): the client gives
    up within a fraction of a second, in any phase but connecting, with a ``ModelError`` of
    code ``cancelled``."""


FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "unknown"]


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The model's output items plus what the wire said about them."""

    items: tuple[Item, ...]
    finish_reason: FinishReason = "stop"
    usage: Usage = Usage()
    id: str | None = None
    raw: JsonObject = field(default_factory=dict)
    request_bytes: int = 0


class ModelClient(Protocol):
    """Anything that turns a ModelRequest into a ModelResponse (one HTTP request, or a script).

    ``model`` is the name of the model it asks (the endpoint's): the one copy of it."""

    @property
    def model(self) -> str: ...

    def create(self, request: ModelRequest) -> ModelResponse: ...

    def close(self) -> None: ...


def output_text(items: Sequence[Item]) -> str:
    """The assistant text of ``items`` joined, with ``<think>`` blocks removed."""
    from minipi.ai.think import strip_think

    parts = [i.text for i in items if isinstance(i, Message) and i.role == "assistant"]
    return strip_think("".join(parts)).strip()


def is_question(item: Item) -> bool:
    """A user message of the caller's (not one minipi wrote: ``Message.by_minipi``)."""
    return isinstance(item, Message) and item.role == "user" and not item.by_minipi


def last_question(items: Sequence[Item]) -> str:
    """The text of the caller's last user message of ``items`` ("" when there is none)."""
    index = _question_at(items)
    item = items[index] if index >= 0 else None
    return item.text if isinstance(item, Message) else ""


def since_question(items: Sequence[Item]) -> Sequence[Item]:
    """The items after the caller's last user message of ``items`` (all of them when there
    is none); minipi's own messages among them stay (``Message.by_minipi``)."""
    return items[_question_at(items) + 1 :] if items else items


def _question_at(items: Sequence[Item]) -> int:
    """The index of the caller's last user message, or -1 (run every turn, over the whole
    history: the test is inlined)."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.type == "message" and item.role == "user" and not item.by_minipi:
            return index
    return -1


def result_follows_question(items: Sequence[Item]) -> bool:
    """Whether a tool result follows the last user message of ``items``."""
    return any(isinstance(item, FunctionCallOutput) for item in since_question(items))


def parse_function_calls(items: Sequence[Item]) -> list[FunctionCall]:
    """The calls among ``items``, in the model's order."""
    return [i for i in items if isinstance(i, FunctionCall)]


def new_call_id() -> str:
    """A locally made call id, for calls that arrived without a usable one (D7)."""
    import uuid

    return f"call_local_{uuid.uuid4().hex[:12]}"
