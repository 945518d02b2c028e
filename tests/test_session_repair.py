"""Saving as it happens and resuming into a valid history (principle 10, H3, H7, F7).

The real loop and the real move tool on a copy of the shelter example. Faults strike inside
the SQLite transaction that saves a chosen step, through the store's connection (the
library's boundary, as a full disk would): "the process dies" is a BaseException raised
there, so the store holds exactly what a killed process would have left (each save is its
own committed transaction); "the disk is full" is SQLite's own ``OperationalError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, Notice, RunResult, run_agent
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.errors import SessionError
from minipi.files import ProjectFiles, create_project_tools
from minipi.session import NOT_RUN, OUTCOME_UNKNOWN, Entry, OpenSession, open_session
from support.cli import copy_example
from support.files import Approvals

pytestmark = pytest.mark.reliability

CONFIG = AgentConfig()
CAT = "inbox/猫咪小花.txt"
MOVE = ("move_file", {"source": CAT, "target": "archive"}, "call_move")
Step = dict[str, Any]


class Killed(BaseException):
    """The process dies here (SIGKILL runs no handler, so nothing else is saved)."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_example("shelter", tmp_path)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def never(why: str) -> Approvals:
    """An approver that fails the test if it is asked (a BaseException: no tool catches it)."""
    return Approvals(pytest.fail.Exception(why))


class Process:
    """What one minipi process holds: the session (locked), the project's files, the tools."""

    def __init__(self, data: Path, project: Path, approvals: Approvals) -> None:
        self.session: OpenSession = open_session(data, project, "s")
        self.files = ProjectFiles(project)
        self.tools = create_project_tools(self.files, self.session.recorder.approver(approvals))

    def ask(self, model: ScriptedModel, question: str) -> RunResult:
        history = self.session.history()
        self.session.recorder.begin_run(question, "m")
        items = [*history, Message("user", question)]
        return run_agent(model, self.tools, CONFIG, items, self.session.recorder)

    def entries(self) -> list[Entry]:
        return self.session.store.entries(self.session.info.id)

    def close(self) -> None:  # what the kernel does for a killed process
        self.files.close()
        self.session.close()


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        process.close()


def start(processes: list[Process], data: Path, project: Path, approvals: Approvals) -> Process:
    process = Process(data, project, approvals)
    processes.append(process)
    return process


def stop(processes: list[Process], process: Process, monkeypatch: pytest.MonkeyPatch) -> None:
    """``process`` has ended (its session is free) and saves stop failing for the next one."""
    process.close()
    processes.remove(process)
    monkeypatch.undo()


class FaultyConnection:
    """The store's SQLite connection, calling ``act()`` inside the transaction that saves a
    step ``matches`` accepts, before it is written (if ``act`` raises, nothing of that save
    is committed). Everything else goes to the real connection."""

    def __init__(
        self, real: sqlite3.Connection, matches: Callable[[Step], bool], act: Callable[[], None]
    ) -> None:
        self.real, self.matches, self.act = real, matches, act

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        self._check([args])
        return self.real.execute(sql, args)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        rows = list(rows)
        self._check(rows)
        return self.real.executemany(sql, rows)

    def _check(self, rows: Sequence[Sequence[Any]]) -> None:
        if any(self.matches(step) for row in rows for step in _steps(row)):
            self.act()


def _steps(values: Sequence[Any]) -> list[Step]:
    """The saved steps among an SQL statement's parameters (JSON objects with a type)."""
    found = []
    for value in values:
        with contextlib.suppress(ValueError, TypeError):
            step = json.loads(value)
            if isinstance(step, dict) and "type" in step:
                found.append(step)
    return found


def on_save(
    monkeypatch: pytest.MonkeyPatch,
    process: Process,
    matches: Callable[[Step], bool],
    act: Callable[[], None],
) -> None:
    """``act()`` while ``process`` saves a step that ``matches`` accepts."""
    store = process.session.store
    monkeypatch.setattr(store, "connection", FaultyConnection(store.connection, matches, act))


def raise_when(
    monkeypatch: pytest.MonkeyPatch,
    process: Process,
    matches: Callable[[Step], bool],
    error: BaseException,
) -> None:
    """Saving a step ``matches`` accepts raises ``error`` (a kill, a full disk)."""

    def act() -> None:
        raise error

    on_save(monkeypatch, process, matches, act)


def output_of(call_id: str) -> Callable[[Step], bool]:
    return lambda step: (
        step["type"] == "items"
        and any(
            i["type"] == "function_call_output" and i["call_id"] == call_id for i in step["items"]
        )
    )


def step_of(kind: str, call_id: str | None = None) -> Callable[[Step], bool]:
    return lambda step: step["type"] == kind and call_id in (None, step.get("call_id"))


def assert_valid(items: Sequence[Item]) -> None:
    """Every call answered exactly once, after it, in the model's order; no question while
    a call waits."""
    waiting: list[str] = []
    answered: list[str] = []
    for item in items:
        if isinstance(item, FunctionCall):
            waiting.append(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            assert waiting, item.call_id
            assert waiting[0] == item.call_id, (waiting, item.call_id)
            answered.append(waiting.pop(0))
        elif isinstance(item, Message) and item.role == "user":
            assert not waiting
    assert not waiting
    calls = [i.call_id for i in items if isinstance(i, FunctionCall)]
    assert answered == calls


def outputs(items: Sequence[Item]) -> dict[str, FunctionCallOutput]:
    return {i.call_id: i for i in items if isinstance(i, FunctionCallOutput)}


def cat_moved_once(project: Path) -> bool:
    return not (project / CAT).exists() and (project / "archive" / "猫咪小花.txt").is_file()


def described(entries: Sequence[Entry]) -> list[str]:
    """Each saved step as ``type call_id``, an ``items`` step as the items it holds."""
    return [
        "items " + " ".join(i.get("call_id") or i["type"] for i in e.event["items"])
        if e.type == "items"
        else f"{e.type} {e.call_id or ''}".strip()
        for e in entries
    ]


def test_every_step_is_saved_in_order(data: Path, project: Path, processes: list[Process]) -> None:
    process = start(processes, data, project, Approvals(True))
    model = ScriptedModel(
        [reply_calls(("list_files", {"path": "inbox"}, "c1"), MOVE), reply_text("done")]
    )
    result = process.ask(model, "adopt the cat")
    assert result.status == "succeeded"
    assert described(process.entries()) == [
        "items message",
        "model_response",
        "items c1 call_move",
        "tool_executing c1",
        "tool_result c1",
        "items c1",
        "tool_executing call_move",
        "approval_asked call_move",
        "approval_answered call_move",
        "tool_result call_move",
        "items call_move",
        "model_response",
        "items message",
    ]
    assert process.session.history() == list(result.items)
    (run,) = process.session.store.runs(process.session.info.id)
    assert (run.status, run.answer, run.turns, run.tool_calls) == ("succeeded", "done", 2, 2)
    assert run.usage == result.usage
    assert process.session.unfinished() == []


def test_killed_after_the_move_before_its_result_was_saved(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    raise_when(monkeypatch, first, output_of("call_move"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE), reply_text("done")]), "adopt the cat")
    stop(processes, first, monkeypatch)
    assert cat_moved_once(project)

    second = start(processes, data, project, never("a move of unknown outcome was asked again"))
    assert [r.question for r in second.session.unfinished()] == ["adopt the cat"]
    (fix,) = second.session.repair(second.tools)
    assert (fix.call_id, fix.action, fix.output) == (
        "call_move",
        "outcome_unknown",
        OUTCOME_UNKNOWN,
    )
    history = second.session.history()
    assert_valid(history)
    assert outputs(history)["call_move"].is_error
    (run,) = second.session.store.runs(second.session.info.id)
    assert (run.status, run.code) == ("cancelled", "interrupted")
    assert (run.turns, run.tool_calls, run.usage.requests) == (1, 1, 1)  # counted from entries
    assert described(second.entries())[-3:] == [
        "tool_result call_move",  # the repair is saved as the loop saves a result
        "items call_move",
        "notice",
    ]

    model = ScriptedModel([reply_text("the cat may have moved; I will check")])
    assert second.ask(model, "did it work?").status == "succeeded"
    sent = outputs(model.requests[0].items)
    assert sent["call_move"].output == OUTCOME_UNKNOWN
    assert cat_moved_once(project)
    assert second.session.repair(second.tools) == []  # nothing left to repair


@pytest.mark.parametrize("granted", [True, False])
def test_a_pending_approval_is_asked_again_and_moves_only_if_granted(
    data: Path,
    project: Path,
    processes: list[Process],
    monkeypatch: pytest.MonkeyPatch,
    granted: bool,
) -> None:
    first = start(processes, data, project, Approvals(Killed()))
    raise_when(monkeypatch, first, step_of("approval_answered"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE)]), "adopt the cat")
    stop(processes, first, monkeypatch)
    assert (project / CAT).exists()

    approvals = Approvals(granted)
    second = start(processes, data, project, approvals)
    (fix,) = second.session.repair(second.tools)
    assert len(approvals.requests) == 1  # asked again, once
    assert approvals.requests[0].details["destination"] == "archive/猫咪小花.txt"
    assert fix.action == "asked_again"
    history = second.session.history()
    assert_valid(history)
    moved = outputs(history)["call_move"]
    if granted:
        assert cat_moved_once(project)
        assert moved.output.startswith("moved ")
        # saved as the loop saves it: guided mode offers the cat where it is now
        expected = {
            "choices": {"file": ["archive/猫咪小花.txt"]},
            "gone": {"file": [CAT]},
            "output": "paths",
            "changed": True,
        }
        assert {k: moved.details[k] for k in expected} == expected
    else:
        assert (project / CAT).exists()
        assert "[user_denied]" in moved.output
        assert moved.details == {}
    assert second.session.repair(second.tools) == []


def test_a_pending_approval_is_not_granted_by_an_approver_that_grants_everything(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed with --approve all, a move whose approval nobody answered is not made."""
    first = start(processes, data, project, Approvals(Killed()))
    raise_when(monkeypatch, first, step_of("approval_answered"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE)]), "adopt the cat")
    stop(processes, first, monkeypatch)

    approvals = Approvals(True)
    second = start(processes, data, project, approvals)
    (fix,) = second.session.repair(second.tools, ask_again=False)
    assert approvals.requests == []
    assert fix.action == "not_answered"
    assert (project / CAT).exists()
    history = second.session.history()
    assert_valid(history)
    assert "never answered, nothing was changed" in outputs(history)["call_move"].output


def test_calls_that_never_started_are_not_run(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    raise_when(monkeypatch, first, step_of("tool_executing", "call_move"), Killed())
    reply = reply_calls(
        ("read_file", {"path": "archive/README.txt"}, "c1"), MOVE, ("list_files", {}, "c3")
    )
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply]), "adopt the cat")
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, never("not to be run"))
    fixes = second.session.repair(second.tools)
    assert [(f.call_id, f.action) for f in fixes] == [("call_move", "not_run"), ("c3", "not_run")]
    history = second.session.history()
    assert_valid(history)
    assert not outputs(history)["c1"].is_error  # saved before the kill: kept as it was
    assert outputs(history)["call_move"].output == NOT_RUN
    assert (project / CAT).exists()


def test_parallel_reads_killed_before_their_results_were_saved(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    raise_when(monkeypatch, first, output_of("r1"), Killed())
    reply = reply_calls(
        ("list_files", {"path": "inbox"}, "r1"), ("list_files", {"path": "."}, "r2")
    )
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply]), "what is there?")
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, Approvals(True))
    fixes = second.session.repair(second.tools)
    assert [(f.call_id, f.action) for f in fixes] == [
        ("r1", "outcome_unknown"),
        ("r2", "outcome_unknown"),
    ]
    assert_valid(second.session.history())


def test_a_refused_move_whose_result_was_not_saved_stays_refused(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(False))
    raise_when(monkeypatch, first, output_of("call_move"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE)]), "adopt the cat")
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, never("not again"))
    (fix,) = second.session.repair(second.tools)
    assert fix.action == "refused"
    assert fix.output == "not executed: the user did not approve it; nothing was changed"
    assert (project / CAT).exists()
    assert_valid(second.session.history())


def test_a_failed_save_stops_the_run_and_nothing_after_it_is_saved(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    """H3: disk full when saving that the move starts: the sink's error ends the run failed
    before the move; the later events (the closed call, the end) are not saved either, and
    the sink raises the same error for each; the next process repairs the run."""
    approvals = Approvals(True)
    first = start(processes, data, project, approvals)
    full = sqlite3.OperationalError("database or disk is full")
    raise_when(monkeypatch, first, step_of("tool_executing"), full)
    result = first.ask(ScriptedModel([reply_calls(MOVE), reply_text("done")]), "adopt the cat")
    assert (result.status, result.code) == ("failed", "session_write_failed")
    assert re.search(
        r"was not saved.*disk is full.*free some space.*--session s", result.error or ""
    )
    assert approvals.requests == []
    assert (project / CAT).exists()
    monkeypatch.undo()  # the disk has room again: still nothing more is saved by this run
    saved = described(first.entries())
    assert saved == ["items message", "model_response", "items call_move"]
    with pytest.raises(SessionError, match="was not saved") as again:
        first.session.recorder(Notice(1, "later", "retry"))
    assert again.value.code == "session_write_failed"
    assert described(first.entries()) == saved
    assert [r.status for r in first.session.unfinished()] == [None]
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, never("not run"))
    (fix,) = second.session.repair(second.tools)
    assert fix.action == "not_run"
    assert_valid(second.session.history())


def test_a_failed_save_of_an_approval_denies_the_move(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    failed = sqlite3.OperationalError("disk I/O error")
    raise_when(monkeypatch, first, step_of("approval_answered"), failed)
    result = first.ask(ScriptedModel([reply_calls(MOVE), reply_text("done")]), "adopt the cat")
    assert (result.status, result.code) == ("failed", "session_write_failed")
    assert "disk I/O error" in (result.error or "")
    assert (project / CAT).exists()  # an unsaved "yes" moves nothing
    stop(processes, first, monkeypatch)

    approvals = Approvals(True)
    second = start(processes, data, project, approvals)
    (fix,) = second.session.repair(second.tools)
    assert fix.action == "asked_again"
    assert len(approvals.requests) == 1
    assert cat_moved_once(project)


def test_a_failed_save_during_the_repair_stops_it_before_the_move(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(Killed()))
    raise_when(monkeypatch, first, step_of("approval_answered"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE)]), "adopt the cat")
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, Approvals(True))
    full = sqlite3.OperationalError("database or disk is full")
    raise_when(monkeypatch, second, step_of("approval_answered"), full)
    with pytest.raises(SessionError, match="session 's' was not saved") as caught:
        second.session.repair(second.tools)
    assert caught.value.code == "session_write_failed"
    assert (project / CAT).exists()  # the "yes" was not saved: nothing moved
    stop(processes, second, monkeypatch)

    third = start(processes, data, project, Approvals(True))
    (fix,) = third.session.repair(third.tools)
    assert fix.action == "asked_again"
    assert cat_moved_once(project)


def test_a_run_whose_end_was_not_saved_is_closed_when_next_opened(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    raise_when(monkeypatch, first, step_of("run_end"), sqlite3.OperationalError("disk full"))
    with contextlib.suppress(SessionError):  # raised by the sink at the run's end
        first.ask(ScriptedModel([reply_text("three animals")]), "who is there?")
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, never("nothing to ask"))
    assert [r.question for r in second.session.unfinished()] == ["who is there?"]
    assert second.session.repair(second.tools) == []  # every call had its result
    (run,) = second.session.store.runs(second.session.info.id)
    assert (run.status, run.code, run.turns) == ("cancelled", "interrupted", 1)
    assert second.session.history()[-1] == Message("assistant", "three animals")


def test_ctrl_c_during_a_save_lands_after_the_commit(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    """F7: Ctrl-C while the reply is being saved: the reply is saved whole, then the loop
    ends the run cancelled with its call closed, and that is saved too."""
    approvals = Approvals(True)
    process = start(processes, data, project, approvals)
    on_save(
        monkeypatch,
        process,
        lambda step: step["type"] == "items" and step["items"][0]["type"] == "function_call",
        lambda: os.kill(os.getpid(), signal.SIGINT),
    )
    result = process.ask(ScriptedModel([reply_calls(MOVE)]), "adopt the cat")
    monkeypatch.undo()
    assert result.status == "cancelled"
    assert approvals.requests == []
    assert (project / CAT).exists()
    history = process.session.history()
    assert history == list(result.items)
    assert_valid(history)
    assert outputs(history)["call_move"].output == NOT_RUN  # the move never began
    assert process.session.repair(process.tools) == []
    (run,) = process.session.store.runs(process.session.info.id)
    assert run.status == "cancelled"


@pytest.mark.parametrize(
    ("error", "ended"),
    [
        (RuntimeError("a bug"), ("failed", "internal_error", "RuntimeError")),
        (KeyboardInterrupt(), ("cancelled", "cancelled", "KeyboardInterrupt")),
    ],
)
def test_an_error_that_escaped_the_loop_ends_the_run(
    data: Path,
    project: Path,
    processes: list[Process],
    error: BaseException,
    ended: tuple[str, str, str],
) -> None:
    process = start(processes, data, project, Approvals(True))
    process.session.recorder.begin_run("adopt the cat", "m")
    process.session.recorder.abandon(error)
    (run,) = process.session.store.runs(process.session.info.id)
    assert (run.status, run.code, run.error) == ended
    assert process.session.unfinished() == []
