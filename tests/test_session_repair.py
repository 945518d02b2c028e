"""Saving as it happens and resuming into a valid history (principle 10, H3, H7, F7).

The real loop and the real move tool on a copy of the shelter example; "the process dies"
is a BaseException raised where a save would happen, so the store holds exactly what a
killed process would have left (each save is its own committed transaction).
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, RunResult, run_agent
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.files import ProjectFiles, create_project_tools
from minipi.session import NOT_RUN, OUTCOME_UNKNOWN, OpenSession, SessionStore, open_session
from minipi.session.store import NewEntry
from support.cli import copy_example
from support.files import Approvals

CONFIG = AgentConfig()
CAT = "inbox/猫咪小花.txt"
MOVE = ("move_file", {"source": CAT, "target": "archive"}, "call_move")


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


def on_append(
    monkeypatch: pytest.MonkeyPatch, matches: Callable[[NewEntry], bool], act: Callable[[], None]
) -> None:
    """``act()`` inside the transaction that saves an entry ``matches`` accepts, before it is
    written (if ``act`` raises, nothing of that save is committed)."""
    real = SessionStore._append

    def append(self: SessionStore, db: Any, sid: int, run: int, entries: Any) -> None:
        if any(matches(e) for e in entries):
            act()
        real(self, db, sid, run, entries)

    monkeypatch.setattr(SessionStore, "_append", append)


def raise_when(
    monkeypatch: pytest.MonkeyPatch, matches: Callable[[NewEntry], bool], error: BaseException
) -> None:
    """Saving an entry ``matches`` accepts raises ``error`` (a kill, a full disk)."""

    def act() -> None:
        raise error

    on_append(monkeypatch, matches, act)


def output_of(call_id: str) -> Callable[[NewEntry], bool]:
    return lambda e: e[0] == "item" and e[2]["type"] == "function_call_output" and (e[1] == call_id)


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


def test_every_step_is_saved_in_order(data: Path, project: Path, processes: list[Process]) -> None:
    process = start(processes, data, project, Approvals(True))
    model = ScriptedModel(
        [reply_calls(("list_files", {"path": "inbox"}, "c1"), MOVE), reply_text("done")]
    )
    result = process.ask(model, "adopt the cat")
    assert result.status == "succeeded"
    store, sid = process.session.store, process.session.recorder.session.id
    kinds = [(e.kind, e.call_id) for e in store.entries(sid)]
    assert kinds == [
        ("item", None),
        ("response", None),
        ("item", "c1"),
        ("item", "call_move"),
        ("tool_executing", "c1"),
        ("item", "c1"),
        ("tool_executing", "call_move"),
        ("approval_asked", "call_move"),
        ("approval_answered", "call_move"),
        ("item", "call_move"),
        ("response", None),
        ("item", None),
    ]
    assert process.session.history() == list(result.items)
    (run,) = store.runs(sid)
    assert (run.status, run.answer, run.turns, run.tool_calls) == ("succeeded", "done", 2, 2)
    assert run.usage == result.usage


def test_killed_after_the_move_before_its_result_was_saved(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    raise_when(monkeypatch, output_of("call_move"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE), reply_text("done")]), "adopt the cat")
    stop(processes, first, monkeypatch)
    assert cat_moved_once(project)

    second = start(processes, data, project, never("a move of unknown outcome was asked again"))
    (fix,) = second.session.repair(second.tools)
    assert (fix.call_id, fix.action, fix.output) == (
        "call_move",
        "outcome_unknown",
        OUTCOME_UNKNOWN,
    )
    history = second.session.history()
    assert_valid(history)
    assert outputs(history)["call_move"].is_error
    (run,) = second.session.store.runs(second.session.recorder.session.id)
    assert (run.status, run.code) == ("cancelled", "interrupted")
    assert (run.turns, run.tool_calls, run.usage.requests) == (1, 1, 1)  # counted from entries

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
    raise_when(monkeypatch, lambda e: e[0] == "approval_answered", Killed())
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
    if granted:
        assert cat_moved_once(project)
        assert outputs(history)["call_move"].output.startswith("moved ")
    else:
        assert (project / CAT).exists()
        assert "[user_denied]" in outputs(history)["call_move"].output
    assert second.session.repair(second.tools) == []


def test_calls_that_never_started_are_not_run(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start(processes, data, project, Approvals(True))
    raise_when(monkeypatch, lambda e: e[0] == "tool_executing" and e[1] == "call_move", Killed())
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
    raise_when(monkeypatch, output_of("r1"), Killed())
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
    raise_when(monkeypatch, output_of("call_move"), Killed())
    with pytest.raises(Killed):
        first.ask(ScriptedModel([reply_calls(MOVE)]), "adopt the cat")
    stop(processes, first, monkeypatch)

    second = start(processes, data, project, never("not again"))
    (fix,) = second.session.repair(second.tools)
    assert fix.action == "refused"
    assert (project / CAT).exists()
    assert_valid(second.session.history())


def test_a_failed_save_stops_the_run_before_the_move(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    """H3: disk full when saving that the move starts: the run ends failed before the move
    (the loop turns the sink's error into its result; the CLI reports it); nothing moved."""
    approvals = Approvals(True)
    first = start(processes, data, project, approvals)
    full = sqlite3.OperationalError("database or disk is full")
    raise_when(monkeypatch, lambda e: e[0] == "tool_executing", full)
    result = first.ask(ScriptedModel([reply_calls(MOVE), reply_text("done")]), "adopt the cat")
    assert (result.status, result.code) == ("failed", "session_write_failed")
    assert re.search(r"was not saved.*disk is full.*--session s", result.error or "")
    assert approvals.requests == []
    assert (project / CAT).exists()
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
    raise_when(monkeypatch, lambda e: e[0] == "approval_answered", failed)
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


def test_ctrl_c_during_a_save_lands_after_the_commit(
    data: Path, project: Path, processes: list[Process], monkeypatch: pytest.MonkeyPatch
) -> None:
    """F7: Ctrl-C while the reply is being saved: the reply is saved whole, then the loop
    ends the run cancelled with its call closed, and that is saved too."""
    approvals = Approvals(True)
    process = start(processes, data, project, approvals)
    on_append(
        monkeypatch,
        lambda e: e[0] == "item" and e[2]["type"] == "function_call",
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
    (run,) = process.session.store.runs(process.session.recorder.session.id)
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
    (run,) = process.session.store.runs(process.session.recorder.session.id)
    assert (run.status, run.code, run.error) == ended
    assert process.session.unfinished() == []
