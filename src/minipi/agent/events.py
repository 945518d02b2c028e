"""What a run reports while it happens: a closed union of frozen events, sent through one sink.

Printing, JSON lines, traces and the REPL are all just sinks (``Callable[[AgentEvent], None]``);
``fan_out`` makes several of them one (the CLI's recorder, log and trace; a batch task's trace
and its caller's tally).
``to_json`` gives each event's JSON form, the one ``minipi ask --json`` writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from minipi.agent.tools import ToolResult
from minipi.ai.serialize import items_to_json
from minipi.ai.types import Delta, Item, ModelResponse, Usage
from minipi.errors import AgentError, ConfigError, MiniPiError

if TYPE_CHECKING:
    from minipi.agent.result import RunResult
    from minipi.said import Said

__all__ = [
    "AgentEvent",
    "AssistantText",
    "EventSink",
    "GuardedSink",
    "ItemsAdded",
    "ModelDelta",
    "ModelResponded",
    "Notice",
    "RunEnd",
    "RunStart",
    "SinkFailed",
    "ToolCallStarted",
    "ToolExecuting",
    "ToolResultReady",
    "TurnStart",
    "fan_out",
    "to_json",
]


@dataclass(frozen=True, slots=True)
class RunStart:
    question: str
    model: str
    tools: tuple[str, ...]
    type: Literal["run_start"] = "run_start"


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A model request is about to be sent; ``turn`` counts model requests from 1."""

    turn: int
    tool_choice: str
    items: Sequence[Item] = ()
    """The conversation sent with this request (the live history: read it, don't keep it)."""
    type: Literal["turn_start"] = "turn_start"


@dataclass(frozen=True, slots=True)
class ModelResponded:
    turn: int
    response: ModelResponse
    seconds: float
    type: Literal["model_response"] = "model_response"


@dataclass(frozen=True, slots=True)
class ModelDelta:
    """A piece of the reply being streamed (shown live; the reply counts once complete)."""

    turn: int
    delta: Delta
    type: Literal["delta"] = "delta"


@dataclass(frozen=True, slots=True)
class ItemsAdded:
    """Items were appended to the run's history (the model's reply, a result, a repair).

    A session store persists these as they come, before the loop takes its next action.
    """

    turn: int
    items: tuple[Item, ...]
    type: Literal["items"] = "items"


@dataclass(frozen=True, slots=True)
class AssistantText:
    turn: int
    text: str
    type: Literal["assistant_text"] = "assistant_text"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    turn: int
    call_id: str
    name: str
    arguments: str
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolExecuting:
    """A tool's handler is about to run (after the checks; approval, if any, comes inside)."""

    turn: int
    call_id: str
    name: str
    type: Literal["tool_executing"] = "tool_executing"


@dataclass(frozen=True, slots=True)
class ToolResultReady:
    turn: int
    call_id: str
    name: str
    result: ToolResult
    seconds: float
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the loop decided that a user should know (a retry, a refused repeat...)."""

    turn: int
    message: str
    code: str
    type: Literal["notice"] = "notice"
    said: Said | None = field(default=None, compare=False)
    """``message`` as a message of ``minipi.said`` (None: ``message`` is its only wording)."""


@dataclass(frozen=True, slots=True)
class RunEnd:
    result: RunResult
    type: Literal["run_end"] = "run_end"


AgentEvent: TypeAlias = (
    RunStart
    | TurnStart
    | ModelResponded
    | ModelDelta
    | ItemsAdded
    | AssistantText
    | ToolCallStarted
    | ToolExecuting
    | ToolResultReady
    | Notice
    | RunEnd
)
EventSink: TypeAlias = Callable[[AgentEvent], None]


def fan_out(*sinks: EventSink) -> EventSink:
    """One sink that gives each event to every one of ``sinks``, in order, even after one
    raised: the first ``MiniPiError`` is raised once they all have seen it (any other
    exception, a bug, at once). Put first the sink whose work must come first (the session
    recorder saves a step before it is shown)."""
    if len(sinks) == 1:
        return sinks[0]

    def emit(event: AgentEvent) -> None:
        failure: MiniPiError | None = None
        for sink in sinks:
            try:
                sink(event)
            except MiniPiError as error:
                failure = failure or error
        if failure is not None:
            raise failure

    return emit


class SinkFailed(Exception):
    """The event sink raised ``error`` (a step that could not be saved)."""

    def __init__(self, error: MiniPiError) -> None:
        self.error = error


class GuardedSink:
    """The caller's event sink. The first ``MiniPiError`` it raises ends the run (as
    ``SinkFailed``); after that it still sees every event, and its errors are ignored."""

    def __init__(self, sink: EventSink | None) -> None:
        self.sink = sink
        self.failed = False

    def __call__(self, event: AgentEvent) -> None:
        if self.sink is None:
            return
        if self.failed:
            with contextlib.suppress(MiniPiError):
                self.sink(event)
            return
        try:
            self.sink(event)
        except (ConfigError, AgentError):
            raise
        except MiniPiError as error:
            self.failed = True
            raise SinkFailed(error) from None


def _usage_json(usage: Usage) -> dict[str, int]:
    return asdict(usage)


def to_json(event: AgentEvent) -> dict[str, Any]:
    """The JSON object for ``event`` (``minipi ask --json`` writes one per line)."""
    special = _SPECIAL.get(type(event))
    if special is not None:
        return {"type": event.type, **special(event)}
    # The rest are flat: every field as is ("turn", "call_id", "text", ...).
    return {"type": event.type, **{f.name: getattr(event, f.name) for f in fields(event)}}


def _notice(event: Any) -> dict[str, Any]:
    """A notice as it was said in English (its ``said`` is for the terminal's language)."""
    return {"turn": event.turn, "message": event.message, "code": event.code}


def _run_start(event: Any) -> dict[str, Any]:
    return {"question": event.question, "model": event.model, "tools": list(event.tools)}


def _turn_start(event: Any) -> dict[str, Any]:
    return {"turn": event.turn, "tool_choice": event.tool_choice}


def _model_response(event: Any) -> dict[str, Any]:
    r: ModelResponse = event.response
    return {
        "turn": event.turn,
        "finish_reason": r.finish_reason,
        "usage": _usage_json(r.usage),
        "seconds": round(event.seconds, 4),
    }


def _delta(event: Any) -> dict[str, Any]:
    d: Delta = event.delta
    record: dict[str, Any] = {"turn": event.turn, "kind": d.kind}
    if d.kind == "call":
        record.update(index=d.index, name=d.name)
    record["text"] = d.text
    return record


def _items(event: Any) -> dict[str, Any]:
    return {"turn": event.turn, "items": items_to_json(event.items)}


def _tool_result(event: Any) -> dict[str, Any]:
    res: ToolResult = event.result
    return {
        "turn": event.turn,
        "call_id": event.call_id,
        "name": event.name,
        "is_error": res.is_error,
        "code": res.code,
        "content": res.content,
        "seconds": round(event.seconds, 4),
        **({"changed": True} if res.changed else {}),  # a change was made (a file moved)
    }


def _run_end(event: Any) -> dict[str, Any]:
    result: RunResult = event.result
    shown = _run_end_fields(result)
    if result.output is not None:  # a structured answer: its value and each field's sources
        shown["output"] = result.output.to_json()
    return shown


def _run_end_fields(result: RunResult) -> dict[str, Any]:
    return {
        "status": result.status,
        "answer": result.answer,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "code": result.code,
        "error": result.error,
        "usage": _usage_json(result.usage),
        "evidence": result.evidence.to_json() if result.evidence is not None else None,
        "facts": list(result.facts),
        "verdict": result.verdict.to_json() if result.verdict is not None else None,
        "backed": result.verdict.backed if result.verdict is not None else None,
    }


_SPECIAL: dict[type, Callable[[Any], dict[str, Any]]] = {
    Notice: _notice,
    RunStart: _run_start,
    TurnStart: _turn_start,
    ModelResponded: _model_response,
    ModelDelta: _delta,
    ItemsAdded: _items,
    ToolResultReady: _tool_result,
    RunEnd: _run_end,
}
