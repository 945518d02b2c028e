"""One run read back from its saved events: what a page or a table shows of it.

The events are those ``minipi ask --json`` writes (``minipi.agent.events.to_json``), as a
session saves them (``minipi sessions show --json``) and a trace holds them (``--trace``,
a batch's ``traces/ID.json``). Everything here is data from a file: it is read defensively
(a missing or mistyped field is left out, never raised on) and shown by the caller only
through its escaping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minipi.cli.words import Words
from minipi.evidence.verdict import Verdict

__all__ = [
    "Call",
    "Transcript",
    "Turn",
    "saved_verdict",
    "status_said",
    "tone",
    "transcript_of",
    "verdict_said",
]


@dataclass
class Call:
    """One tool call and its result (``output`` None: no result was saved)."""

    call_id: str
    name: str
    arguments: str
    output: str | None = None
    is_error: bool = False
    code: str | None = None
    seconds: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    changed: bool = False
    """Its tool said it changed something (``tool_result``'s ``changed``)."""

    @property
    def change(self) -> str | None:
        """What the call changed (a move), or None: a result that says it moved something."""
        if self.output is None or self.is_error:
            return None
        source, target = self.details.get("source"), self.details.get("destination")
        if isinstance(source, str) and isinstance(target, str):
            return f"{source} → {target}"
        return self.output.strip() if self.changed else None


@dataclass
class Turn:
    """One model request: its text (if any) and the calls it asked for."""

    number: int
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


@dataclass
class Transcript:
    """A run: its question, turns, and how it ended."""

    question: str
    turns: list[Turn] = field(default_factory=list)
    status: str | None = None
    code: str | None = None
    error: str | None = None
    answer: str = ""
    evidence: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] = field(default_factory=dict)
    verdict: Verdict | None = None
    """What the answer rests on, as the run judged it (None: not succeeded, or saved before
    verdicts were)."""
    facts: list[str] = field(default_factory=list)
    """The facts minipi cited under the answer (guided mode), as saved."""

    @property
    def calls(self) -> list[Call]:
        return [call for turn in self.turns for call in turn.calls]

    @property
    def changes(self) -> list[str]:
        return [c for c in (call.change for call in self.calls) if c is not None]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def transcript_of(question: str, events: Iterable[Any]) -> Transcript:
    """The run that ``events`` (in order) record; ``question`` as saved with it."""
    run = Transcript(question)
    calls: dict[str, Call] = {}
    for event in events:
        if isinstance(event, dict):
            _take(run, calls, event)
    return run


def _turn(run: Transcript, number: Any) -> Turn:
    at = number if isinstance(number, int) and not isinstance(number, bool) else 0
    if not run.turns or run.turns[-1].number != at:
        run.turns.append(Turn(at))
    return run.turns[-1]


def _take(run: Transcript, calls: dict[str, Call], event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "items" and isinstance(event.get("items"), list):
        for item in event["items"]:
            if isinstance(item, dict):
                _item(run, calls, event.get("turn"), item)
    elif kind == "tool_result":
        _result(calls.get(_text(event.get("call_id"))), event)
    elif kind == "notice":
        _turn(run, event.get("turn")).notices.append(_text(event.get("message")))
    elif kind == "run_end":
        _end(run, event)


def _result(call: Call | None, event: dict[str, Any]) -> None:
    """What the ``tool_result`` event adds to its call: seconds, error code."""
    if call is None:
        return
    seconds, code = event.get("seconds"), event.get("code")
    call.seconds = float(seconds) if isinstance(seconds, int | float) else None
    call.code = code if isinstance(code, str) else None
    call.is_error = call.is_error or event.get("is_error") is True
    call.changed = event.get("changed") is True


def _item(run: Transcript, calls: dict[str, Call], turn: Any, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "function_call":
        call = Call(
            _text(item.get("call_id")), _text(item.get("name")), _text(item.get("arguments"))
        )
        calls[call.call_id] = call
        _turn(run, turn).calls.append(call)
    elif kind == "function_call_output":
        _output(run, calls, turn, item)
    elif kind == "message" and item.get("role") == "assistant":
        _turn(run, turn).text += _text(item.get("text"))
    elif kind == "message" and item.get("role") == "user" and not run.question:
        run.question = _text(item.get("text"))


def _output(run: Transcript, calls: dict[str, Call], turn: Any, item: dict[str, Any]) -> None:
    found = calls.get(_text(item.get("call_id")))
    if found is None:  # an answer without its call (a repaired session): shown alone
        found = Call(_text(item.get("call_id")), "?", "")
        _turn(run, turn).calls.append(found)
    found.output = _text(item.get("output"))
    found.is_error = found.is_error or item.get("is_error") is True
    details = item.get("details")
    found.details = details if isinstance(details, dict) else {}


def _end(run: Transcript, event: dict[str, Any]) -> None:
    run.status = _text(event.get("status")) or None
    run.code = _text(event.get("code")) or None
    run.error = _text(event.get("error")) or None
    run.answer = _text(event.get("answer"))
    evidence = event.get("evidence")
    if isinstance(evidence, dict) and isinstance(evidence.get("claims"), list):
        run.evidence = evidence
    usage = event.get("usage")
    run.usage = usage if isinstance(usage, dict) else {}
    run.verdict = saved_verdict(event.get("verdict"))
    facts = event.get("facts")
    run.facts = [f for f in facts if isinstance(f, str)] if isinstance(facts, list) else []
    for turn in run.turns:  # the answer is shown as the answer, not again as a turn's text
        if run.status == "succeeded" and turn.text.strip() == run.answer.strip():
            turn.text = ""


def saved_verdict(value: Any) -> Verdict | None:
    """The verdict saved as ``value`` (``Verdict.to_json()``); None when none was saved (a
    run that did not succeed, one saved before verdicts) or it is malformed: never guessed."""
    if not isinstance(value, dict):
        return None
    kind, reason = value.get("kind"), value.get("reason")
    if kind not in ("backed", "weak", "unbacked"):
        return None
    if reason is not None and not isinstance(reason, str):
        return None
    return Verdict(kind, reason)


_STATUS_KEYS = {"failed": "failed_run"}
"""The word of a status whose key in ``minipi.cli.words`` is not the status itself."""


def status_said(status: str | None, verdict: Verdict | None, words: Words) -> str:
    """The run's status in ``words``' language, with its verdict when it has one
    (``succeeded · weak``): a success is never shown plain when its answer is not backed."""
    if status is None:
        return words("saved_unfinished")
    try:
        said = words(_STATUS_KEYS.get(status, status))
    except KeyError:  # a status of a later minipi: shown as saved
        said = status
    return said if verdict is None else f"{said} · {words(f'verdict_{verdict.kind}')}"


def verdict_said(verdict: Verdict, words: Words) -> str:
    """The verdict and, unless ``backed``, why (``weak: nothing was read ...``); a reason
    this minipi has no words for is shown as its code."""
    kind = words(f"verdict_{verdict.kind}")
    if verdict.reason is None:
        return kind
    try:
        why = words(f"why_{verdict.reason}")
    except KeyError:
        why = verdict.reason
    return words("verdict_why", verdict=kind, why=why)


def tone(status: str | None, verdict: Verdict | None) -> str:
    """How a run's end is coloured: ``ok`` (green) only for a backed answer, ``warn``
    (amber) for a weak one, ``err`` (red) for an unbacked answer or a failure, ``mute``
    (grey) for a run cancelled, unfinished or succeeded without a verdict."""
    if verdict is not None:
        return {"backed": "ok", "weak": "warn"}.get(verdict.kind, "err")
    return "err" if status in ("failed", "budget_exhausted") else "mute"
