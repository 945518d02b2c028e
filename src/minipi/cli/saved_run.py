"""One saved run as ``minipi sessions show`` prints it: the live log's steps read back, every
label in the run's question's language, and its status with the verdict its end saved.

Lines are made here and shown by the caller through ``safe``; a saved text's line ends
never begin a line of minipi's (``one_line``, or the gutter of ``_labelled``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from minipi.cli.evidence import cited_lines, evidence_lines
from minipi.cli.render import one_line
from minipi.cli.transcript import saved_verdict, status_said, verdict_said
from minipi.cli.words import Words, words_for
from minipi.evidence.verdict import Verdict
from minipi.session import Entry, RunRecord, saved_totals

__all__ = ["run_facts", "run_verdict", "timeline", "when"]


def timeline(number: int, run: RunRecord, entries: list[Entry]) -> list[str]:
    """One run as the live log showed it, every label in its question's language: its
    status and verdict, steps, answer, cited facts, sources, why the verdict, and totals."""
    words = words_for(run.question)
    verdict = run_verdict(run)
    status = status_said(run.status, verdict, words)
    lines = [words("saved_run", n=number, when=when(run.started), status=status)]
    lines.extend(_labelled(words("saved_question"), run.question))
    seconds: dict[str, object] = {}  # call_id -> its tool's seconds (saved before its output)
    for entry in entries[1:] if entries and entries[0].type == "items" else entries:
        lines.extend(_entry_lines(entry.event, run, seconds, words))
    lines.extend(_outcome_lines(run, words))
    lines.extend(_evidence_block(run, words))
    if verdict is not None:
        lines.append(f"  {words('saved_verdict')}  {verdict_said(verdict, words)}")
    lines.append(_total_line(run, entries, words))
    return lines


def run_verdict(run: RunRecord) -> Verdict | None:
    """The run's verdict as its end saved it (None: none saved)."""
    return saved_verdict(run.end.get("verdict")) if run.end is not None else None


def run_facts(run: RunRecord) -> list[str]:
    """The facts minipi cited under the answer (guided mode), as its end saved them."""
    facts = run.end.get("facts") if run.end is not None else None
    return [f for f in facts if isinstance(f, str)] if isinstance(facts, list) else []


def _outcome_lines(run: RunRecord, words: Words) -> list[str]:
    """The answer (and its cited facts) of a run that succeeded, the error of one that failed."""
    if run.status == "succeeded":
        lines = _labelled(words("saved_answer"), run.answer)
        facts = run_facts(run)
        if facts:  # guided mode's cited facts: minipi's block
            lines.extend("  " + line for line in cited_lines(facts, words))
        return lines
    if run.status is not None:
        return ["  " + words("end", code=run.code, detail=one_line(run.error or ""))]
    return []


def _evidence_block(run: RunRecord, words: Words) -> list[str]:
    """The sources block, as the run showed it (none when it saved none)."""
    evidence = run.end.get("evidence") if run.end is not None else None
    if not isinstance(evidence, dict):
        return []
    return ["  " + line for line in evidence_lines(evidence, words, fancy=False)]


def _total_line(run: RunRecord, entries: list[Entry], words: Words) -> str:
    took = ""
    if run.ended is not None:
        took = words("saved_took", seconds=_duration(run.ended - run.started))
    usage, turns, calls = run.usage, run.turns, run.tool_calls
    if run.status is None:  # no end yet: count what was saved
        usage, turns, calls = saved_totals(entries)
    return words(
        "saved_total",
        turns=turns,
        calls=calls,
        input=usage.input_tokens,
        output=usage.output_tokens,
        cached=usage.cached_tokens,
        took=took,
    )


def _entry_lines(
    event: dict[str, Any], run: RunRecord, seconds: dict[str, object], words: Words
) -> list[str]:
    kind = event.get("type")
    if kind == "tool_result":
        seconds[str(event.get("call_id"))] = event.get("seconds")
        return []
    if kind == "items":
        items = event.get("items")
        if not isinstance(items, list):
            return []
        return [
            line
            for i in items
            if isinstance(i, dict)
            for line in _item_lines(i, run, seconds, words)
        ]
    return _step_lines(kind, event, words)


def _step_lines(kind: object, event: dict[str, Any], words: Words) -> list[str]:
    """The lines of a saved step that holds no items: a request, an approval, a notice."""
    if kind == "model_response":
        saved = event.get("usage")
        usage: dict[str, Any] = saved if isinstance(saved, dict) else {}
        line = words(
            "saved_request",
            turn=event.get("turn"),
            input=usage.get("input_tokens"),
            output=usage.get("output_tokens"),
            cached=usage.get("cached_tokens"),
            took=_duration(event.get("seconds")),
        )
        return [line.rstrip()]
    if kind == "approval_asked":
        return [words("saved_asked", summary=one_line(str(event.get("summary"))))]
    if kind == "approval_answered":
        return [words("saved_granted" if event.get("allowed") is True else "saved_refused")]
    if kind == "notice":
        return [words("saved_notice", message=one_line(str(event.get("message"))))]
    return []


def _item_lines(
    data: dict[str, Any], run: RunRecord, seconds: dict[str, object], words: Words
) -> list[str]:
    kind = data.get("type")
    if kind == "function_call":
        arguments = _short(str(data.get("arguments")), 200, words)
        name, call_id = one_line(str(data.get("name"))), one_line(str(data.get("call_id")))
        return [words("saved_call", name=name, arguments=arguments, call_id=call_id)]
    if kind == "function_call_output":
        return [_output_line(data, seconds, words)]
    if kind == "message":
        return _message_lines(data, run, words)
    if kind == "reasoning":
        return [words("saved_reasoning", n=len(str(data.get("text"))))]
    return []


def _output_line(data: dict[str, Any], seconds: dict[str, object], words: Words) -> str:
    output = str(data.get("output"))
    if data.get("is_error") is True:  # the output says "error [code]: ..." itself
        shown = output if output.startswith("error [") else f"error {output}"
        return f"    {_short(shown, 160, words)}"
    took = _duration(seconds.get(str(data.get("call_id"))))
    return words("saved_ok", output=_short(output, 160, words)) + (f"  {took}" if took else "")


def _duration(seconds: object) -> str:
    """``12.3 s``, ``0.04 s`` under a second; "" for a value not saved."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return ""
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds:.2f} s"


def _message_lines(data: dict[str, Any], run: RunRecord, words: Words) -> list[str]:
    """A model's message (not again when it is the answer shown below), or a user's question."""
    role = data.get("role")
    if role == "assistant":
        text = str(data.get("text")).strip()
        if run.status == "succeeded" and text == run.answer.strip():
            return []
        return [f"  {words('saved_said')}  {_short(text, 160, words)}"] if text else []
    if role == "user":
        return _labelled(words("saved_question"), str(data.get("text")))
    return []


def _labelled(label: str, text: str) -> list[str]:
    """``text`` after its label; its further lines behind the gutter, never a line of ours."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    gutter = "  │ " if encoding == "utf8" else "  | "
    first, *rest = text.split("\n") if text else [""]
    return [f"  {label}  {first}", *(gutter + line for line in rest)]


def _short(text: str, limit: int, words: Words) -> str:
    """The first line of ``text`` (cut at ``limit`` characters), saying how many follow."""
    lines = text.strip().splitlines() or [""]
    first = lines[0] if len(lines[0]) <= limit else lines[0][:limit] + "…"
    more = len(lines) - 1
    return f"{first} {words('saved_more', n=more)}" if more else first


def when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
