"""Saving a session as it happens: the loop's event sink, and a wrapper for the approver.

Persist before acting (RELIABILITY principle 10): the question is saved before the run
starts; each reply's items before their calls run; ``tool_executing`` before a handler runs;
an approval when it is asked and again when answered, before the change it allows; each
result before the next request. So a process killed at any point leaves a record from which
``repair`` can tell a call that never ran from one whose outcome is unknown.

A save that fails (disk full: ``sqlite3.OperationalError``) raises ``SessionError`` out of
the sink: ``run_agent`` does not catch it, so the run stops before its next step and the CLI
reports it. A save that fails inside an approval denies the change instead, and the sink
raises at its next event.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TypeVar

from minipi.agent.events import (
    AgentEvent,
    ItemsAdded,
    ModelResponded,
    Notice,
    RunEnd,
    ToolExecuting,
    ToolResultReady,
)
from minipi.agent.result import RunResult
from minipi.agent.tools import ApprovalRequest, Approver
from minipi.ai.serialize import item_to_json
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.errors import MiniPiError, SessionError
from minipi.session.records import RunRecord, SessionInfo
from minipi.session.store import NewEntry, SessionStore

__all__ = ["SessionRecorder", "item_entry"]

T = TypeVar("T")


class SessionRecorder:
    """The event sink that saves one session's runs; put it first among the sinks."""

    def __init__(self, store: SessionStore, session: SessionInfo) -> None:
        self.store = store
        self.session = session
        self.run_id: int | None = None
        self.current_call: str | None = None  # the call whose handler runs (approvals)
        self._failure: SessionError | None = None
        self._results: dict[str, dict[str, object]] = {}  # call_id -> code, seconds

    def begin_run(self, question: str, model: str) -> None:
        """Save the question as a new run, before the loop starts."""
        first = item_entry(Message("user", question))
        self.run_id = self._save(
            lambda: self.store.begin_run(self.session.id, question, model, first)
        )

    def __call__(self, event: AgentEvent) -> None:
        self.raise_failure()
        if self.run_id is None:
            return
        if isinstance(event, ToolResultReady):
            self._results[event.call_id] = {
                "code": event.result.code,
                "seconds": round(event.seconds, 4),
            }
        elif isinstance(event, ToolExecuting):
            self.executing(event.call_id, event.name, event.turn)
        elif isinstance(event, ItemsAdded):
            self.append(
                [item_entry(i, self._results.pop(_call_id(i) or "", None)) for i in event.items]
            )
        elif isinstance(event, ModelResponded):
            usage = event.response.usage
            data = {
                "turn": event.turn,
                "seconds": round(event.seconds, 4),
                "finish_reason": event.response.finish_reason,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cached_tokens": usage.cached_tokens,
            }
            self.append([("response", None, data)])
        elif isinstance(event, Notice):
            self.note(event.code, event.message, event.turn)
        elif isinstance(event, RunEnd):
            self.end_run(_record(event.result))

    def executing(self, call_id: str, name: str, turn: int = 0) -> None:
        """Save that ``call_id``'s handler is about to run (approvals asked now are its own)."""
        self.current_call = call_id
        self.append([("tool_executing", call_id, {"turn": turn, "name": name})])

    def note(self, code: str, message: str, turn: int = 0) -> None:
        self.append([("notice", None, {"turn": turn, "code": code, "message": message})])

    def append(self, entries: list[NewEntry]) -> None:
        run_id = self.run_id
        assert run_id is not None, "begin_run first"
        self._save(lambda: self.store.append(self.session.id, run_id, entries))

    def end_run(self, record: RunRecord) -> None:
        run_id = self.run_id
        assert run_id is not None, "begin_run first"
        self._save(lambda: self.store.end_run(self.session.id, run_id, record))
        self.run_id, self.current_call = None, None

    def abandon(self, error: BaseException) -> None:
        """End the open run after ``error`` escaped the loop (best effort; calls it left
        open are answered by ``repair`` when the session is next opened)."""
        if self.run_id is None or isinstance(error, SessionError):
            return
        cancelled = isinstance(error, KeyboardInterrupt)
        record = RunRecord(
            status="cancelled" if cancelled else "failed",
            code="cancelled" if cancelled else getattr(error, "code", "internal_error"),
            error=(str(error) if isinstance(error, MiniPiError) else type(error).__name__),
        )
        with suppress(SessionError):
            self.end_run(record)

    def approver(self, inner: Approver) -> Approver:
        """``inner``, with each question and answer saved before the tool acts on it."""

        def approve(request: ApprovalRequest) -> bool:
            call_id = self.current_call
            asked = {
                "tool": request.tool,
                "summary": request.summary,
                "details": dict(request.details),
            }
            if not self._saved_or_denied([("approval_asked", call_id, asked)]):
                return False
            try:
                allowed = inner(request) is True
            except BaseException as error:  # closed input or Ctrl-C: nothing was allowed
                answer = {"allowed": False, "by": type(error).__name__}
                self._saved_or_denied([("approval_answered", call_id, answer)])
                raise
            answered: list[NewEntry] = [("approval_answered", call_id, {"allowed": allowed})]
            return self._saved_or_denied(answered) and allowed

        return approve

    def raise_failure(self) -> None:
        """Raise the save failure of this run, if any, again and again: once a step could not
        be saved, nothing after it is saved either (a record with a gap would look whole);
        the run is left open, and ``repair`` settles it when the session is next opened."""
        if self._failure is not None:
            raise self._failure

    def _saved_or_denied(self, entries: list[NewEntry]) -> bool:
        try:
            self.append(entries)
        except SessionError as error:
            self._failure = error  # raised by the sink at its next event
            return False
        return True

    def _save(self, work: Callable[[], T]) -> T:
        name = self.session.name
        with _sigint_deferred():
            try:
                return work()
            except SessionError as error:
                if error.code != "session_write_failed":
                    raise
                self._failure = SessionError(
                    f"session '{name}' was not saved: {error}. The run stopped before its "
                    f"next step; free some space, then resume with --session {name} (what "
                    "was not saved is marked interrupted)",
                    code=error.code,
                    session=name,
                )
                raise self._failure from None


def item_entry(item: Item, result: dict[str, object] | None = None) -> NewEntry:
    """The entry that saves ``item`` (with its tool's error code and seconds, if known)."""
    data = item_to_json(item)
    if result is not None:
        data["result"] = result
    return ("item", _call_id(item), data)


def _call_id(item: Item) -> str | None:
    return item.call_id if isinstance(item, FunctionCall | FunctionCallOutput) else None


def _record(result: RunResult) -> RunRecord:
    return RunRecord(
        status=result.status,
        code=result.code,
        error=result.error,
        answer=result.answer,
        usage=result.usage,
        turns=result.turns,
        tool_calls=result.tool_calls,
    )


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
