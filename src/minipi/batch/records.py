"""What a finished task leaves in ``DIR/results.jsonl``: one ``Record`` per line."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from minipi.agent.ends import RunStatus, status_of
from minipi.agent.result import RunResult
from minipi.batch.tasks import Task

__all__ = ["Record", "failed_record", "record_of"]

_STATUSES: tuple[RunStatus, ...] = ("succeeded", "failed", "budget_exhausted", "cancelled")


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
        return data

    @classmethod
    def from_json(cls, data: Any) -> Record:
        """A record read back; ``ValueError`` when ``data`` is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise ValueError("not a result record")
        status = data.get("status")
        if status not in _STATUSES:
            raise ValueError(f"unknown status {status!r}")
        evidence = _counts(data.get("evidence"))
        correct = data.get("correct")
        return cls(
            id=data["id"],
            status=status,
            code=_optional_str(data.get("code")),
            answer=str(data.get("answer") or ""),
            error=_optional_str(data.get("error")),
            turns=_count(data.get("turns")),
            tool_calls=_count(data.get("tool_calls")),
            seconds=float(data.get("seconds") or 0.0),
            task=str(data.get("task") or ""),
            tokens=_counts(data.get("tokens")),
            evidence=evidence or None,
            correct=correct if isinstance(correct, bool) else None,
            trace=_optional_str(data.get("trace")),
            finished=str(data.get("finished") or ""),
            verdict=_verdict(data.get("verdict")),
        )


def _verdict(value: Any) -> dict[str, str | None] | None:
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return None
    return {"kind": value["kind"], "reason": _optional_str(value.get("reason"))}


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _counts(value: Any) -> dict[str, int]:
    """A JSON object of counts (a non-count reads 0); an empty one for anything else."""
    return {str(k): _count(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def record_of(task: Task, result: RunResult, seconds: float, trace: str | None) -> Record:
    """The record of ``task`` whose run ended with ``result`` after ``seconds``."""
    usage = result.usage
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
