"""What a run reports while it happens: a closed union of frozen events, sent through one sink.

Printing, JSON lines, traces and the REPL are all just sinks (``Callable[[AgentEvent], None]``).
``to_json`` gives each event's JSON form, the one ``minipi ask --json`` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from minipi.agent.tools import ToolResult
from minipi.ai.types import Item, ModelResponse, Usage

if TYPE_CHECKING:
    from minipi.agent.result import RunResult

__all__ = [
    "AgentEvent",
    "AssistantText",
    "EventSink",
    "ModelResponded",
    "Notice",
    "RunEnd",
    "RunStart",
    "ToolCallStarted",
    "ToolResultReady",
    "TurnStart",
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


@dataclass(frozen=True, slots=True)
class RunEnd:
    result: RunResult
    type: Literal["run_end"] = "run_end"


AgentEvent: TypeAlias = (
    RunStart
    | TurnStart
    | ModelResponded
    | AssistantText
    | ToolCallStarted
    | ToolResultReady
    | Notice
    | RunEnd
)
EventSink: TypeAlias = Callable[[AgentEvent], None]


def _usage_json(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "requests": usage.requests,
    }


def to_json(event: AgentEvent) -> dict[str, Any]:
    """The JSON object for ``event`` (``minipi ask --json`` writes one per line)."""
    if isinstance(event, RunStart):
        return {
            "type": event.type,
            "question": event.question,
            "model": event.model,
            "tools": list(event.tools),
        }
    if isinstance(event, TurnStart):
        return {"type": event.type, "turn": event.turn, "tool_choice": event.tool_choice}
    if isinstance(event, ModelResponded):
        r = event.response
        return {
            "type": event.type,
            "turn": event.turn,
            "finish_reason": r.finish_reason,
            "usage": _usage_json(r.usage),
            "seconds": round(event.seconds, 4),
        }
    if isinstance(event, AssistantText):
        return {"type": event.type, "turn": event.turn, "text": event.text}
    if isinstance(event, ToolCallStarted):
        return {
            "type": event.type,
            "turn": event.turn,
            "call_id": event.call_id,
            "name": event.name,
            "arguments": event.arguments,
        }
    if isinstance(event, ToolResultReady):
        res = event.result
        return {
            "type": event.type,
            "turn": event.turn,
            "call_id": event.call_id,
            "name": event.name,
            "is_error": res.is_error,
            "code": res.code,
            "content": res.content,
            "seconds": round(event.seconds, 4),
        }
    if isinstance(event, Notice):
        return {
            "type": event.type,
            "turn": event.turn,
            "code": event.code,
            "message": event.message,
        }
    result = event.result
    return {
        "type": event.type,
        "status": result.status,
        "answer": result.answer,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "code": result.code,
        "error": result.error,
        "usage": _usage_json(result.usage),
    }
