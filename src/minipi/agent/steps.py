"""What one model response means for a run (the loop's decisions), and closing a history.

``Reply`` is a response read once; ``_decide`` in ``loop.py`` turns it into a ``Step``:
answer, run tools, stop, or ask again.
"""

from __future__ import annotations

from dataclasses import dataclass

from minipi.agent.result import RunStatus
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, ModelResponse

__all__ = ["AskAgain", "FinalAnswer", "Reply", "RunTools", "Step", "Stop", "close_open_calls"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One model response with its text and calls, read once."""

    response: ModelResponse
    text: str
    calls: list[FunctionCall]


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    text: str


@dataclass(frozen=True, slots=True)
class RunTools:
    calls: list[FunctionCall]


@dataclass(frozen=True, slots=True)
class Stop:
    status: RunStatus
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class AskAgain:
    reason: str


Step = FinalAnswer | RunTools | Stop | AskAgain


def close_open_calls(
    history: list[Item], stop: Stop, started: set[str]
) -> tuple[FunctionCallOutput, ...]:
    """Answer every call that has no result yet, so the history stays valid to send again:
    a call whose handler had begun when the run was cancelled may have done its work."""
    answered = {i.call_id for i in history if isinstance(i, FunctionCallOutput)}
    closed: list[FunctionCallOutput] = []
    for item in list(history):
        if isinstance(item, FunctionCall) and item.call_id not in answered:
            if stop.status != "cancelled":
                note = f"not executed: {stop.message}"
            elif item.call_id in started:
                note = "interrupted: outcome unknown, verify before retrying"
            else:
                note = "not executed: interrupted before it ran"
            closed.append(FunctionCallOutput(item.call_id, note, is_error=True))
    history.extend(closed)
    return tuple(closed)
