"""What the session store holds, as read back: sessions, runs, saved steps, and the totals of
a run that has no end. Plain frozen values; ``minipi.session.store`` reads and writes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from minipi.ai.types import Usage

__all__ = ["Entry", "RunRecord", "SessionInfo", "read_usage", "saved_totals"]


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
    """The status of the latest run; None while it has no end (running or killed)."""
    last_verdict: str | None = None
    """The verdict's kind of the latest run, as its end saved it (None: none saved)."""
    last_reason: str | None = None
    """Why that verdict (a reason code), as saved."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One question and how it ended; ``status`` and ``end`` are None until it has.

    ``end`` is the run's ``run_end`` object as saved; the fields after it are read from it."""

    id: int
    question: str
    model: str
    started: float
    ended: float | None = None
    status: str | None = None
    end: dict[str, Any] | None = None
    code: str | None = None
    error: str | None = None
    answer: str = ""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0


@dataclass(frozen=True, slots=True)
class Entry:
    """One saved step of a run, in order (``seq`` counts within the session); ``event`` is
    its JSON object, with a ``type`` from ``STEP_TYPES``."""

    seq: int
    run: int
    event: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.event["type"])

    @property
    def call_id(self) -> str | None:
        value = self.event.get("call_id")
        return value if isinstance(value, str) else None


def saved_totals(entries: Sequence[Entry]) -> tuple[Usage, int, int]:
    """The usage, model requests and distinct started tool calls saved in one run's
    ``entries``: the totals of a run without an end (malformed counts add nothing)."""
    usage, requests = Usage(), 0
    for entry in entries:
        if entry.type == "model_response":
            requests += 1
            one = read_usage(entry.event.get("usage")) or Usage()
            usage += replace(one, requests=1)
    calls = {e.call_id for e in entries if e.type == "tool_executing"}
    return usage, requests, len(calls)


def read_usage(value: object) -> Usage | None:
    """The ``Usage`` saved as ``value`` (its counts by name), or None if malformed."""
    if not isinstance(value, dict):
        return None
    counts = [value.get(f.name, 0) for f in fields(Usage)]
    if not all(type(c) is int and c >= 0 for c in counts):
        return None
    return Usage(*counts)
