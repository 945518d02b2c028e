"""Opening a session again: its lock, its history checked before it is sent (H8), and the
calls a killed process left open answered (principle 10).

Valid means: every tool result answers an earlier call that had none yet, and no question
follows a call that is still unanswered. A history that is not valid is refused (never sent,
never "fixed" by dropping items). Each call without a saved result gets one, decided from
what was saved about it:

- its approval was asked and never answered (H7): asked again, through the tool and the
  approver of this process, when a person answers approvals now (``ask_again``); the change
  happens only if it is granted now. Otherwise (``--approve all``, a batch) it is not run:
  nobody said yes to it, and an approver that says yes to everything must not say it to a
  change asked for in an earlier process;
- its handler had started (``tool_executing``), or its approval was granted: the outcome is
  unknown, and the call is never run again; the model is told to check;
- its approval was refused: not executed, the user did not approve it;
- it never started: not executed, interrupted before it ran.

The repairs are saved through the recorder like the loop's own events, with a notice each,
and the unfinished runs are closed ``cancelled`` (code ``interrupted``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minipi.agent.events import ItemsAdded, Notice, ToolExecuting, ToolResultReady
from minipi.agent.tools import AgentTool, ToolResult, parse_arguments
from minipi.ai.serialize import items_from_json
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.errors import ConfigError, SessionError, SessionStoreError
from minipi.session.location import check_outside_project
from minipi.session.lock import SessionLock
from minipi.session.recorder import SessionRecorder, ended
from minipi.session.store import (
    Entry,
    RunRecord,
    SessionInfo,
    SessionStore,
    saved_totals,
)

__all__ = [
    "NOT_ANSWERED",
    "NOT_RUN",
    "OUTCOME_UNKNOWN",
    "REFUSED",
    "OpenCall",
    "OpenSession",
    "Repair",
    "check_name",
    "open_session",
    "replay",
]

OUTCOME_UNKNOWN = "interrupted: outcome unknown, verify before retrying"
NOT_RUN = "not executed: interrupted before it ran"
NOT_ANSWERED = (
    "not executed: its approval was asked and never answered, nothing was changed; ask for "
    "it again if it is still wanted"
)
REFUSED = "not executed: the user did not approve it; nothing was changed"


@dataclass(frozen=True, slots=True)
class Repair:
    """What was done for one call left open."""

    call_id: str
    name: str
    action: str  # "asked_again", "not_answered", "outcome_unknown", "refused", "not_run"
    output: str


@dataclass(frozen=True, slots=True)
class OpenCall:
    """A call without a saved result: the run, entry and turn it was saved in."""

    call: FunctionCall
    run: int
    seq: int
    turn: int


class OpenSession:
    """A session this process holds (its lock) until ``close()``."""

    def __init__(self, store: SessionStore, lock: SessionLock, info: SessionInfo) -> None:
        self.store = store
        self.lock = lock
        self.info = info
        self.recorder = SessionRecorder(store, info)

    @property
    def name(self) -> str:
        return self.info.name

    def last_question(self) -> str:
        """The question of the latest run ("" for a new session)."""
        runs = self.store.runs(self.info.id)
        return runs[-1].question if runs else ""

    def runs(self) -> int:
        """How many questions the session holds."""
        return len(self.store.runs(self.info.id))

    def unfinished(self) -> list[RunRecord]:
        """The runs without an end (their process was killed, or could not save it):
        ``repair`` closes them."""
        return [r for r in self.store.runs(self.info.id) if r.status is None]

    def history(self) -> list[Item]:
        """Every item saved so far, checked: valid to send again."""
        items, waiting = replay(self.name, self.store.entries(self.info.id))
        if waiting:
            raise SessionError(
                f"session '{self.name}' has calls without results; repair it first",
                code="session_needs_repair",
                session=self.name,
            )
        return items

    def repair(self, tools: Sequence[AgentTool], *, ask_again: bool = True) -> list[Repair]:
        """Answer every call left open and close the unfinished runs; [] if there were none.
        ``tools`` (with this process's approver) ask again for a pending approval when
        ``ask_again`` (a person answers now); else such a call is answered "never answered"."""
        entries = self.store.entries(self.info.id)
        _, waiting = replay(self.name, entries)
        unfinished = self.unfinished()
        by_name = {tool.name: tool for tool in tools}
        if not ask_again:
            by_name = {}
        repairs = [_repair(self.recorder, entries, c, by_name.get(c.call.name)) for c in waiting]
        for run in unfinished:
            usage, turns, calls = saved_totals([e for e in entries if e.run == run.id])
            why = "the process ended before the run did; open calls were answered on resume"
            self.recorder.continue_run(run.id)
            self.recorder(ended("cancelled", "interrupted", why, usage, turns, calls))
        return repairs

    def close(self) -> None:
        self.lock.release()
        self.store.close()


def check_name(name: str) -> str:
    """``name`` if it can name a session: 1-100 printable characters, no outer spaces."""
    if not name or len(name) > 100 or name != name.strip() or not name.isprintable():
        raise ConfigError(
            "a session name is 1 to 100 printable characters without leading or trailing spaces",
            code="invalid_session_name",
        )
    return name


def open_session(data_dir: Path, project: Path, name: str | None) -> OpenSession:
    """Lock and open session ``name`` of ``project`` (created if new), or with ``name=None``
    the session of ``project`` updated last. Fails fast when another process holds it."""
    check_outside_project(data_dir, project)
    root = os.path.realpath(project)
    store = SessionStore.open(data_dir)
    try:
        name = name if name is not None else _latest(store, root)
        lock = SessionLock.acquire(store, check_name(name))
    except BaseException:
        store.close()
        raise
    try:
        info = store.find(name) or store.create(name, root)
        if info.project != root:
            raise ConfigError(
                f"session '{name}' belongs to the project {info.project}; run with "
                f"--project {info.project}, or choose another session name",
                code="session_other_project",
            )
    except BaseException:
        lock.release()
        store.close()
        raise
    return OpenSession(store, lock, info)


def _latest(store: SessionStore, root: str) -> str:
    found = store.sessions(root)
    if not found:
        raise SessionError(
            f"no saved session for the project {root} yet; start one with --session NAME",
            code="session_not_found",
        )
    return found[0].name


def replay(session: str, entries: Sequence[Entry]) -> tuple[list[Item], list[OpenCall]]:
    """The history items in order, and the calls still waiting for a result;
    SessionStoreError (nothing echoed) for a history that is not valid."""
    items: list[Item] = []
    waiting: list[OpenCall] = []
    for entry in entries:
        if entry.type != "items":
            continue
        turn = entry.event.get("turn")
        turn = turn if type(turn) is int else 0
        for item in _items(session, entry):
            problem = _follow(item, waiting, entry, turn)
            if problem is not None:
                raise _invalid(session, entry, problem)
            items.append(item)
    return items, waiting


def _follow(item: Item, waiting: list[OpenCall], entry: Entry, turn: int) -> str | None:
    """Update the calls ``waiting`` with one saved item; what is wrong with it, or None."""
    if isinstance(item, FunctionCall):
        waiting.append(OpenCall(item, entry.run, entry.seq, turn))
    elif isinstance(item, FunctionCallOutput):
        match = next((c for c in waiting if c.call.call_id == item.call_id), None)
        if match is None:
            return "a tool result without a call waiting for it"
        waiting.remove(match)
    elif isinstance(item, Message) and item.role == "user" and waiting:
        return "a question before every call was answered"
    return None


def _items(session: str, entry: Entry) -> list[Item]:
    saved = entry.event.get("items")
    try:
        if not isinstance(saved, list) or not all(isinstance(i, dict) for i in saved):
            raise ValueError("not a list of items")
        return items_from_json(saved)
    except ValueError:
        raise _invalid(session, entry, "a malformed item") from None


def _invalid(session: str, entry: Entry, what: str) -> SessionStoreError:
    return SessionStoreError(
        f"session '{session}' cannot be resumed: entry #{entry.seq} is {what}; it was left "
        "as is (minipi sessions show lists it; start a new session with another name)",
        code="session_store_malformed",
    )


def _repair(
    recorder: SessionRecorder, entries: Sequence[Entry], open_call: OpenCall, tool: AgentTool | None
) -> Repair:
    """Answer ``open_call`` (asking again through ``tool`` for a pending approval), and save
    the answer as the loop would: its tool_result and items, then a notice."""
    call, turn = open_call.call, open_call.turn
    recorder.continue_run(open_call.run)
    action = _state(entries, open_call)
    if action == "asked_again" and tool is not None:
        result = _ask_again(recorder, tool, open_call)
    else:
        action = "not_answered" if action == "asked_again" else action
        texts = {
            "outcome_unknown": OUTCOME_UNKNOWN,
            "refused": REFUSED,
            "not_answered": NOT_ANSWERED,
        }
        text = texts.get(action, NOT_RUN)
        result = ToolResult(text, is_error=True, code=action)
    output = FunctionCallOutput(
        call.call_id, result.content, is_error=result.is_error, details=result.details
    )
    recorder(ToolResultReady(turn, call.call_id, call.name, result, 0.0))
    recorder(ItemsAdded(turn, (output,)))
    fix = Repair(call.call_id, call.name, action, output.output)
    recorder(Notice(turn, f"{fix.name} (call {fix.call_id}): {fix.output}", "repaired"))
    return fix


def _state(entries: Sequence[Entry], open_call: OpenCall) -> str:
    """What to do, from what was saved about ``open_call`` after it: started, asked,
    answered (and how)."""
    mine = [e for e in entries if _after(e, open_call)]
    kinds = [e.type for e in mine]
    answers = [e.event.get("allowed") is True for e in mine if e.type == "approval_answered"]
    if kinds.count("approval_asked") > len(answers):
        return "asked_again"
    return _outcome(answers, started="tool_executing" in kinds)


def _outcome(answers: Sequence[bool], *, started: bool) -> str:
    """A call no longer waiting for approval: refused by its last answer, or maybe run (it
    was allowed or started), or not run."""
    if answers and not answers[-1]:
        return "refused"
    return "outcome_unknown" if answers or started else "not_run"


def _after(entry: Entry, open_call: OpenCall) -> bool:
    """Whether ``entry`` was saved about ``open_call``, after it, in its run."""
    same_call = entry.call_id == open_call.call.call_id
    return same_call and entry.run == open_call.run and entry.seq > open_call.seq


def _ask_again(recorder: SessionRecorder, tool: AgentTool, open_call: OpenCall) -> ToolResult:
    """Run the call whose approval was pending: the tool asks again, nothing else is implied."""
    call, turn = open_call.call, open_call.turn
    arguments = parse_arguments(call.arguments, allow_empty=False)
    if isinstance(arguments, ToolResult):
        return arguments
    message = f"asking again for the approval of {call.name} ({call.call_id})"
    recorder(Notice(turn, message, "approval_again"))
    recorder(ToolExecuting(turn, call.call_id, call.name))
    return tool.execute(arguments)
