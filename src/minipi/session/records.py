"""What the session store holds, as read back: sessions, runs and the entries of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from minipi.ai.types import Usage

__all__ = ["KINDS", "Entry", "EntryKind", "RunRecord", "SessionInfo", "saved_totals"]

EntryKind: TypeAlias = Literal[
    "item", "tool_executing", "approval_asked", "approval_answered", "response", "notice"
]
KINDS: tuple[EntryKind, ...] = get_args(EntryKind)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One named session: a conversation about one project, made of runs (one per question)."""

    id: int
    name: str
    project: str
    model: str
    created: float
    updated: float
    runs: int = 0
    last_status: str | None = None
    """The status of the latest run; None while it has no end record (running or killed)."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One question and how it ended; ``status`` is None until the run has ended.

    ``SessionStore.end_run`` saves only how a run ended: a record made for it leaves the
    first four fields at their defaults."""

    id: int = 0
    question: str = ""
    model: str = ""
    started: float = 0.0
    ended: float | None = None
    status: str | None = None
    code: str | None = None
    error: str | None = None
    answer: str = ""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0


@dataclass(frozen=True, slots=True)
class Entry:
    """One saved step of a run, in order (``seq`` counts within the session).

    ``item``: a history item (``item_to_json``); ``tool_executing``: a handler is about to run;
    ``approval_asked`` / ``approval_answered``: a human was asked / answered (``allowed``);
    ``response``: one model request's usage and seconds; ``notice``: a loop notice or a repair.
    """

    seq: int
    run: int
    kind: EntryKind
    data: dict[str, Any]
    at: float
    call_id: str | None = None


_TOKENS = ("input_tokens", "output_tokens", "cached_tokens")


def saved_totals(entries: Sequence[Entry]) -> tuple[Usage, int, int]:
    """The usage, model requests and distinct tool calls saved in one run's ``entries``: the
    totals of a run that has no end record (a response with malformed counts adds none)."""
    responses = [e.data for e in entries if e.kind == "response"]
    usage = Usage()
    for response in responses:
        inputs, outputs, cached = (response.get(k) for k in _TOKENS)
        if isinstance(inputs, int) and isinstance(outputs, int) and isinstance(cached, int):
            usage += Usage(inputs, outputs, cached, 1)
    calls = {e.call_id for e in entries if e.kind == "tool_executing"}
    return usage, len(responses), len(calls)
