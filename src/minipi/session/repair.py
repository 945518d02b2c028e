"""Resuming a session that a killed process left open, into a valid history (principle 10).

Each call that has no saved result gets one, decided from what was saved about it:

- its approval was asked and never answered (H7): asked again, through the tool and the
  approver of this process; the change happens only if it is granted now;
- its handler had started (``tool_executing``), or its approval was granted: the outcome is
  unknown, and the call is never run again ("interrupted: outcome unknown, verify before
  retrying"); the model is told to check;
- its approval was refused: "not executed: the user did not approve it";
- it never started: "not executed: interrupted before it ran".

The results are saved like any other, with a notice each, and the unfinished runs are closed
``cancelled`` (code ``interrupted``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minipi.agent.tools import AgentTool, ToolResult, parse_arguments
from minipi.ai.types import FunctionCallOutput
from minipi.session.recorder import SessionRecorder, item_entry
from minipi.session.records import Entry, RunRecord, saved_totals
from minipi.session.transcript import OpenCall, replay

__all__ = ["NOT_RUN", "OUTCOME_UNKNOWN", "Repair", "repair"]

OUTCOME_UNKNOWN = "interrupted: outcome unknown, verify before retrying"
NOT_RUN = "not executed: interrupted before it ran"
REFUSED = "not executed: the user did not approve it; nothing was changed"


@dataclass(frozen=True, slots=True)
class Repair:
    """What was done for one call left open."""

    call_id: str
    name: str
    action: str  # "asked_again", "outcome_unknown", "refused", "not_run"
    output: str


def repair(recorder: SessionRecorder, tools: Sequence[AgentTool]) -> list[Repair]:
    """Answer every open call of the session and close its unfinished runs; [] if none."""
    store, session = recorder.store, recorder.session
    entries = store.entries(session.id)
    _, waiting = replay(session.name, entries)
    unfinished = [run for run in store.runs(session.id) if run.status is None]
    repairs: list[Repair] = []
    by_name = {tool.name: tool for tool in tools}
    for open_call in waiting:
        recorder.run_id = open_call.run
        state = _state(entries, open_call)
        if state == "pending_approval" and open_call.call.name in by_name:
            result = _ask_again(recorder, by_name[open_call.call.name], open_call)
            output = FunctionCallOutput(
                open_call.call.call_id, result.content, result.choices, result.is_error
            )
            action = "asked_again"
        else:
            action, text = {
                "outcome_unknown": ("outcome_unknown", OUTCOME_UNKNOWN),
                "refused": ("refused", REFUSED),
            }.get(state, ("not_run", NOT_RUN))
            output = FunctionCallOutput(open_call.call.call_id, text, is_error=True)
        fix = Repair(open_call.call.call_id, open_call.call.name, action, output.output)
        recorder.append([item_entry(output, {"code": action, "seconds": 0})])
        recorder.note("repaired", f"{fix.name} (call {fix.call_id}): {fix.output}")
        repairs.append(fix)
    for run in unfinished:
        recorder.run_id = run.id
        recorder.end_run(_closed(entries, run.id))
    return repairs


def _state(entries: Sequence[Entry], open_call: OpenCall) -> str:
    """What was saved about ``open_call`` after it: started, asked, answered (and how)."""
    mine = [
        e
        for e in entries
        if e.run == open_call.run and e.seq > open_call.seq and e.call_id == open_call.call.call_id
    ]
    asked = sum(1 for e in mine if e.kind == "approval_asked")
    answers = [e.data.get("allowed") is True for e in mine if e.kind == "approval_answered"]
    if asked > len(answers):
        return "pending_approval"
    if answers and not answers[-1]:
        return "refused"
    if answers or any(e.kind == "tool_executing" for e in mine):
        return "outcome_unknown"
    return "not_run"


def _ask_again(recorder: SessionRecorder, tool: AgentTool, open_call: OpenCall) -> ToolResult:
    """Run the call whose approval was pending: the tool asks again, nothing else is implied."""
    call = open_call.call
    arguments = parse_arguments(call.arguments, allow_empty=False)
    if isinstance(arguments, ToolResult):
        return arguments
    recorder.note(
        "approval_again", f"asking again for the approval of {call.name} ({call.call_id})"
    )
    recorder.executing(call.call_id, call.name)
    result = tool.execute(arguments)
    recorder.raise_failure()
    return result


def _closed(entries: Sequence[Entry], run_id: int) -> RunRecord:
    usage, turns, calls = saved_totals([e for e in entries if e.run == run_id])
    return RunRecord(
        status="cancelled",
        code="interrupted",
        error="the process ended before the run did; open calls were answered on resume",
        usage=usage,
        turns=turns,
        tool_calls=calls,
    )
