"""The figures of a batch over every finished task: ``summary.json`` and the closing lines.

- success rate: ``succeeded`` / finished tasks;
- correct rate: tasks whose answer held every ``expect`` string / tasks that expect some;
- backed rate: succeeded runs whose verdict is ``backed`` / finished tasks (the plain
  green success of ``minipi ask``); ``verdicts`` counts the succeeded runs by verdict;
- traced rate: succeeded answers whose every figure was traced to a tool result / succeeded
  answers that held a figure needing a source (the evidence check of ``minipi ask``);
- statuses by code (``failed/endpoint_unreachable``), tokens, p50/p95 seconds per task.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minipi.batch.checked import Schema
from minipi.batch.records import Record
from minipi.said import Said, SaidValue

__all__ = ["SUMMARY", "Counts", "check_summary", "summarize", "summary_lines"]

_COUNT = {"type": "integer", "minimum": 0}
_SECONDS = {"type": ["number", "null"]}
_COUNTED = (
    *("tasks", "finished", "pending", "malformed_lines", "cancelled", "ran_now", "succeeded"),
    *("correct", "judged", "traced", "with_figures"),
)
SUMMARY: dict[str, Any] = {
    "type": "object",
    "required": [*_COUNTED, "statuses", "tokens", "seconds_per_task", "wall_seconds"],
    "properties": {
        **dict.fromkeys((*_COUNTED, "backed"), _COUNT),
        "statuses": {"type": "object", "additionalProperties": _COUNT},
        "tokens": {
            "type": "object",
            "required": ["input", "output", "cached"],
            "additionalProperties": _COUNT,
        },
        "seconds_per_task": {
            "type": "object",
            "required": ["p50", "p95"],
            "properties": {"p50": _SECONDS, "p95": _SECONDS},
        },
        "wall_seconds": {"type": "number"},
    },
}
"""The JSON Schema of ``summary.json``: what ``summary_lines`` reads (``summarize`` writes)."""
_SCHEMA = Schema(SUMMARY)


def check_summary(data: Any) -> dict[str, Any]:
    """``data`` when it is a summary ``summary_lines`` can show; else ``ValueError``."""
    _SCHEMA.check(data)
    result: dict[str, Any] = data
    return result


@dataclass(frozen=True)
class Counts:
    """The tasks of this invocation that have no record (yet)."""

    tasks: int
    """Tasks in the file (malformed lines excluded)."""
    malformed: int = 0
    cancelled: int = 0
    """Stopped by Ctrl-C in this invocation (no record: a resumed run redoes them)."""
    ran: int = 0
    """Records this invocation added."""
    wall_seconds: float = 0.0


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _rounded(values: Sequence[float], share: float) -> float | None:
    found = percentile(values, share)
    return None if found is None else round(found, 3)


def _key(record: Record) -> str:
    return record.status if record.code is None else f"{record.status}/{record.code}"


def _verdicts(records: Sequence[Record]) -> Counter[str]:
    """The succeeded records by verdict (``none``: a record written before verdicts)."""
    kinds = ((r.verdict or {}).get("kind") for r in records if r.status == "succeeded")
    return Counter(str(kind or "none") for kind in kinds)


def summarize(records: Sequence[Record], counts: Counts) -> dict[str, Any]:
    """``summary.json``'s document."""
    succeeded = sum(r.status == "succeeded" for r in records)
    verdicts = _verdicts(records)
    judged = [r.correct for r in records if r.correct is not None]
    traced = [r.traced for r in records if r.traced is not None]
    seconds = [r.seconds for r in records]
    tokens: Counter[str] = Counter()
    for record in records:
        tokens.update(record.tokens)
    return {
        "tasks": counts.tasks,
        "finished": len(records),
        "pending": max(counts.tasks - len(records), 0),
        "malformed_lines": counts.malformed,
        "cancelled": counts.cancelled,
        "ran_now": counts.ran,
        "succeeded": succeeded,
        "success_rate": _rate(succeeded, len(records)),
        "backed": verdicts["backed"],
        "backed_rate": _rate(verdicts["backed"], len(records)),
        "verdicts": dict(verdicts.most_common()),
        "correct": sum(judged),
        "judged": len(judged),
        "correct_rate": _rate(sum(judged), len(judged)),
        "traced": sum(traced),
        "with_figures": len(traced),
        "traced_rate": _rate(sum(traced), len(traced)),
        "statuses": dict(Counter(_key(r) for r in records).most_common()),
        "tokens": {k: tokens.get(k, 0) for k in ("input", "output", "cached")},
        "seconds_per_task": {"p50": _rounded(seconds, 0.5), "p95": _rounded(seconds, 0.95)},
        "wall_seconds": round(counts.wall_seconds, 3),
    }


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def summary_lines(summary: dict[str, Any], chinese: bool = False) -> list[str]:
    """The closing lines a person reads, in English or (``chinese``) in Chinese."""

    def say(key: str, **facts: SaidValue) -> str:
        return Said.of(f"batch_{key}", **facts).text(chinese)

    head = say("head", tasks=summary["tasks"], finished=summary["finished"], now=summary["ran_now"])
    if summary["pending"]:
        head += say("pending", count=summary["pending"])
    if summary["cancelled"]:
        head += say("cancelled", count=summary["cancelled"])
    if summary["malformed_lines"]:
        count = summary["malformed_lines"]
        head += say("malformed", malformed=count)
    rates = say(
        "rates",
        succeeded=_share(summary["succeeded"], summary["finished"]),
        backed=_share(summary.get("backed", 0), summary["finished"]),
        correct=_share(summary["correct"], summary["judged"]),
        traced=_share(summary["traced"], summary["with_figures"]),
    )
    statuses = ", ".join(f"{k} {v}" for k, v in summary["statuses"].items()) or "-"
    tokens = summary["tokens"]
    spent = say("tokens", input=tokens["input"], output=tokens["output"], cached=tokens["cached"])
    seconds = summary["seconds_per_task"]
    timing = say("no_timing")
    if seconds["p50"] is not None and seconds["p95"] is not None:
        timing = say("timing", p50=f"{seconds['p50']:.2f}", p95=f"{seconds['p95']:.2f}")
    timing += say("wall", wall=f"{summary['wall_seconds']:.1f}")
    shown = say("statuses", statuses=statuses)
    return [head, "  " + rates, "  " + shown, "  " + spent, "  " + timing]
