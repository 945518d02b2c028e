"""What a finished task leaves in ``DIR/results.jsonl``: one ``Record`` per line.

A line read back is data, checked before it is used (``parse_record``): JSON
(``minipi.batch.checked.load_json``: never a ``RecursionError``, however deep) and an object
of the schema ``RECORD``, each field of its type (fields a later minipi adds are let
through). What is wrong is said by the field's name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from minipi.agent.ends import RunStatus, status_of
from minipi.agent.result import RunResult
from minipi.ai.types import FunctionCallOutput
from minipi.batch.checked import Schema, load_json
from minipi.batch.tasks import Task

__all__ = ["RECORD", "Record", "failed_record", "parse_record", "record_of"]

_STATUSES: tuple[RunStatus, ...] = ("succeeded", "failed", "budget_exhausted", "cancelled")
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}
_TEXT_OR_NULL = {"type": ["string", "null"]}
RECORD: dict[str, Any] = {
    "type": "object",
    "required": ["id", "status"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "status": {"enum": list(_STATUSES)},
        "code": _TEXT_OR_NULL,
        "answer": _TEXT_OR_NULL,
        "error": _TEXT_OR_NULL,
        "evidence": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
        "turns": {"type": "integer", "minimum": 0},
        "tool_calls": {"type": "integer", "minimum": 0},
        "tokens": _COUNTS,
        "seconds": {"type": "number", "minimum": 0},
        "task": _TEXT_OR_NULL,
        "trace": _TEXT_OR_NULL,
        "finished": _TEXT_OR_NULL,
        "verdict": {
            "type": ["object", "null"],
            "required": ["kind"],
            "properties": {"kind": {"type": "string"}, "reason": _TEXT_OR_NULL},
        },
        "correct": {"type": ["boolean", "null"]},
        "output": {
            "type": "object",
            "required": ["value", "fields"],
            "properties": {"fields": {"type": "array", "items": {"type": "object"}}},
        },
        "changes": {"type": "array", "items": {"type": "string"}},
    },
}
"""The JSON Schema of a ``results.jsonl`` line (what ``Record.to_json`` writes)."""
_SCHEMA = Schema(RECORD)


@dataclass(frozen=True)
class Record:
    """How one task ended. ``correct`` is None when the task expects nothing; ``evidence``
    is the check's counts (``supported``, ``unsupported``, ``tool_results``) or None;
    ``verdict`` is a succeeded run's ``{"kind", "reason"}`` (``minipi.evidence.verdict``)."""

    id: str
    status: RunStatus
    code: str | None
    answer: str
    error: str | None
    turns: int
    tool_calls: int
    seconds: float
    task: str
    """``Task.digest`` of the task that ran."""
    tokens: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, int] | None = None
    correct: bool | None = None
    trace: str | None = None
    """The trace's path relative to the batch directory."""
    finished: str = ""
    verdict: dict[str, str | None] | None = None
    changes: tuple[str, ...] = ()
    """What the task changed (``moved A -> B``), its journal's earlier runs included."""
    output: dict[str, Any] | None = None
    """A structured answer's value and each field's trace (``StructuredOutput.to_json``)."""

    @property
    def shown_status(self) -> str:
        """The status as a person reads it: ``succeeded`` only when backed, else with the
        verdict (``succeeded/weak``)."""
        kind = (self.verdict or {}).get("kind")
        if self.status != "succeeded" or kind in (None, "backed"):
            return self.status
        return f"succeeded/{kind}"

    @property
    def traced(self) -> bool | None:
        """Every figure that needed a source had one (None: no such figure, or no answer)."""
        if self.status != "succeeded" or not self.evidence:
            return None
        needed = self.evidence.get("supported", 0) + self.evidence.get("unsupported", 0)
        return None if needed == 0 else self.evidence.get("unsupported", 0) == 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "code": self.code,
            "answer": self.answer,
            "error": self.error,
            "evidence": self.evidence,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "task": self.task,
            "trace": self.trace,
            "finished": self.finished,
            "verdict": self.verdict,
        }
        if self.correct is not None:
            data["correct"] = self.correct
        if self.changes:
            data["changes"] = list(self.changes)
        if self.output is not None:
            data["output"] = self.output
        return data

    @classmethod
    def from_json(cls, data: Any) -> Record:
        """A record read back; ``ValueError`` saying which field is wrong when ``data`` is
        not one (``RECORD``)."""
        _SCHEMA.check(data)
        verdict = data.get("verdict")
        return cls(
            id=data["id"],
            status=data["status"],
            code=data.get("code"),
            answer=data.get("answer") or "",
            error=data.get("error"),
            turns=int(data.get("turns", 0)),
            tool_calls=int(data.get("tool_calls", 0)),
            seconds=float(data.get("seconds", 0.0)),
            task=data.get("task") or "",
            tokens=_counts(data.get("tokens")),
            evidence=_counts(data.get("evidence")) or None,
            correct=data.get("correct"),
            trace=data.get("trace"),
            finished=data.get("finished") or "",
            verdict=None
            if verdict is None
            else {"kind": verdict["kind"], "reason": verdict.get("reason")},
            changes=tuple(data.get("changes", ())),
            output=data.get("output"),
        )


def parse_record(line: str | bytes) -> Record:
    """One line of ``results.jsonl``; ``ValueError`` saying why when it is not a record."""
    return Record.from_json(load_json(line))


def _counts(value: Any) -> dict[str, int]:
    """A JSON object of counts (checked: each one an integer) as a dict."""
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def record_of(task: Task, result: RunResult, seconds: float, trace: str | None) -> Record:
    """The record of ``task`` whose run ended with ``result`` after ``seconds``."""
    usage = result.usage
    changes = tuple(
        item.output.split("\n", 1)[0]
        for item in result.items
        if isinstance(item, FunctionCallOutput)
        and not item.is_error
        and item.details.get("changed") is True
    )
    evidence = None
    if result.evidence is not None:
        shown = result.evidence.to_json()
        evidence = {k: int(shown[k]) for k in ("supported", "unsupported", "tool_results")}
    return Record(
        id=task.id,
        status=result.status,
        code=result.code,
        answer=result.answer,
        error=result.error,
        turns=result.turns,
        tool_calls=result.tool_calls,
        seconds=seconds,
        task=task.digest,
        tokens={
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cached": usage.cached_tokens,
        },
        evidence=evidence,
        correct=task.judge(result.answer if result.succeeded else ""),
        trace=trace,
        finished=_now(),
        verdict=result.verdict.to_json() if result.verdict is not None else None,
        changes=changes,
        output=result.output.to_json() if result.output is not None else None,
    )


def failed_record(task: Task, code: str, error: str, seconds: float) -> Record:
    """The record of a task that never got to run its loop (a bad project, a crash)."""
    return Record(
        id=task.id,
        status=status_of(code),
        code=code,
        answer="",
        error=error,
        turns=0,
        tool_calls=0,
        seconds=seconds,
        task=task.digest,
        tokens={"input": 0, "output": 0, "cached": 0},
        correct=task.judge(""),
        finished=_now(),
    )
