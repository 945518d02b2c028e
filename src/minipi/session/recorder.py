"""Saving a session as it happens: an ordinary event sink, and a wrapper for the approver.

Persist before acting (RELIABILITY principle 10): the question is saved before the run
starts; each reply's items before their calls run; ``tool_executing`` before a handler runs;
an approval when it is asked and again when answered, before the change it allows; each
result before the next request; each request's usage and seconds; how the run ended. So a
process killed at any point leaves a record from which ``resume`` can tell a call that never
ran from one whose outcome is unknown. Each step is saved as the JSON object ``minipi ask
--json`` writes for its event (``to_json``); a tool's ``tool_result`` is saved with the
``items`` that carry its output, in one transaction.

A save that fails (disk full: ``session_write_failed``; a step that is not plain JSON:
``session_unsavable``) raises ``SessionError`` out of the sink, and again at every later
event, saving nothing more: a record with a gap would look
whole. ``run_agent`` ends the run ``failed`` with that error; the run stays open in the
store and is repaired when the session is next opened. An approval whose record cannot be
saved is a denial, and the failure is raised at the next event.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from minipi.agent.events import (
    AgentEvent,
    ItemsAdded,
    ModelResponded,
    Notice,
    RunEnd,
    ToolExecuting,
    ToolResultReady,
    to_json,
)
from minipi.agent.result import RunResult, RunStatus
from minipi.agent.tools import ApprovalRequest, Approver
from minipi.ai.types import FunctionCallOutput, Message, Usage
from minipi.errors import MiniPiError, SessionError
from minipi.said import Said
from minipi.session.store import SessionInfo, SessionStore

__all__ = ["SessionRecorder", "ended"]

T = TypeVar("T")
_SAVED_AS_IS = (ModelResponded, Notice, ToolExecuting)
_GAPS = frozenset({"session_write_failed", "session_unsavable"})
"""Failed saves after which nothing more is saved (a record with a gap would look whole)."""


class SessionRecorder:
    """The event sink that saves the runs of one session; put it first among the sinks."""

    def __init__(self, store: SessionStore, session: SessionInfo) -> None:
        self.store = store
        self.session = session
        self.run_id: int | None = None
        self._acting: tuple[int, str | None] = (0, None)  # the turn and call whose handler runs
        self._results: dict[str, dict[str, Any]] = {}  # tool_result objects awaiting their item
        self._failure: SessionError | None = None

    def begin_run(self, question: str, model: str) -> None:
        """Save the question as a new run, before the loop starts."""
        first = to_json(ItemsAdded(0, (Message("user", question),)))
        sid = self.session.id
        self.run_id = self._save(lambda: self.store.begin_run(sid, question, model, first))

    def continue_run(self, run_id: int) -> None:
        """Save the next events into the earlier run ``run_id`` (a repair of it)."""
        self.run_id = run_id

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, RunEnd):
            self._end(to_json(event))
            return
        steps: list[dict[str, Any]] = []
        if isinstance(event, ToolResultReady):
            self._results[event.call_id] = to_json(event)
        elif isinstance(event, ItemsAdded):
            outputs = [i.call_id for i in event.items if isinstance(i, FunctionCallOutput)]
            steps = [self._results.pop(c) for c in outputs if c in self._results]
            steps.append(to_json(event))
        elif isinstance(event, _SAVED_AS_IS):
            if isinstance(event, ToolExecuting):  # approvals asked now are this call's
                self._acting = (event.turn, event.call_id)
            steps = [to_json(event)]
        self._append(steps)

    def approver(self, inner: Approver) -> Approver:
        """``inner``, with each question and answer saved before the tool acts on it."""

        def approve(request: ApprovalRequest) -> bool:
            turn, call_id = self._acting
            asked = _approval("asked", turn, call_id, tool=request.tool, summary=request.summary)
            try:
                self._append([{**asked, "details": dict(request.details)}])
                return self._answer(inner, request)
            except SessionError:  # not saved: a denial (the sink raises it at its next event)
                return False

        return approve

    def _answer(self, inner: Approver, request: ApprovalRequest) -> bool:
        """``inner``'s answer to ``request``, saved before it is returned."""
        turn, call_id = self._acting
        try:
            allowed = inner(request) is True
        except BaseException as error:  # closed input or Ctrl-C: nothing was allowed
            with suppress(SessionError):  # the error that ends the run is this one
                by = type(error).__name__
                self._append([_approval("answered", turn, call_id, allowed=False, by=by)])
            raise
        self._append([_approval("answered", turn, call_id, allowed=allowed)])
        return allowed

    def abandon(self, error: BaseException) -> None:
        """End the open run after ``error`` escaped the loop (best effort: calls it left open
        are answered when the session is next opened; nothing is saved after a failed save)."""
        if self.run_id is None:
            return
        cancelled = isinstance(error, KeyboardInterrupt)
        status: RunStatus = "cancelled" if cancelled else "failed"
        code = "cancelled" if cancelled else getattr(error, "code", "internal_error")
        message = str(error) if isinstance(error, MiniPiError) else type(error).__name__
        with suppress(SessionError):
            self(ended(status, code, message))

    def _append(self, steps: list[dict[str, Any]]) -> None:
        run_id, sid = self.run_id, self.session.id
        if run_id is None or not steps:  # nothing to save, or no run open: the check only
            self._save(lambda: None)
        else:
            self._save(lambda: self.store.append(sid, run_id, steps))

    def _end(self, end: dict[str, Any]) -> None:
        run_id, sid = self.run_id, self.session.id
        if run_id is not None:
            self._save(lambda: self.store.end_run(sid, run_id, end))
        self.run_id, self._acting, self._results = None, (0, None), {}

    def _save(self, write: Callable[[], T]) -> T:
        """The one way anything is saved: never after a failed save, and a failure to write
        becomes the error that tells the user what to do."""
        if self._failure is not None:
            raise self._failure
        with _sigint_deferred():
            try:
                return write()
            except SessionError as error:
                if error.code not in _GAPS:
                    raise
                name = self.session.name
                full = error.code == "session_write_failed"
                said = Said.of(
                    "session_disk_full" if full else "session_not_saved",
                    name=name,
                    error=error.said or error.message,
                )
                self._failure = SessionError(said, code=error.code, session=name)
                raise self._failure from None


def ended(
    status: RunStatus,
    code: str,
    error: str,
    usage: Usage | None = None,
    turns: int = 0,
    calls: int = 0,
) -> RunEnd:
    """The end of a run that ``run_agent`` could not end itself (no answer, no items)."""
    return RunEnd(RunResult(status, "", (), usage or Usage(), turns, calls, code, error))


def _approval(kind: str, turn: int, call_id: str | None, **fields: Any) -> dict[str, Any]:
    return {"type": f"approval_{kind}", "turn": turn, "call_id": call_id, **fields}


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Ctrl-C during a save takes effect once the save is committed: a step is saved whole
    or not at all, and the loop's own Ctrl-C handling then closes the run properly."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and callable(previous):
            previous(signal.SIGINT, None)
