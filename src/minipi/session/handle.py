"""Opening a session for a run: the store, the session's lock, the recorder, the history."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from minipi.agent.tools import AgentTool
from minipi.ai.types import Item
from minipi.errors import ConfigError, SessionError
from minipi.session.location import check_outside_project
from minipi.session.lock import SessionLock
from minipi.session.recorder import SessionRecorder
from minipi.session.records import RunRecord
from minipi.session.repair import Repair, repair
from minipi.session.store import SessionStore
from minipi.session.transcript import replay

__all__ = ["OpenSession", "check_name", "open_session"]


class OpenSession:
    """A session this process holds (its lock) until ``close()``."""

    def __init__(self, store: SessionStore, lock: SessionLock, recorder: SessionRecorder) -> None:
        self.store = store
        self.lock = lock
        self.recorder = recorder

    @property
    def name(self) -> str:
        return self.recorder.session.name

    def last_question(self) -> str:
        """The question of the latest run ("" for a new session)."""
        runs = self.store.runs(self.recorder.session.id)
        return runs[-1].question if runs else ""

    def unfinished(self) -> list[RunRecord]:
        """The runs without an end record (a killed process, or one running now elsewhere
        would hold the lock): ``repair`` closes them."""
        return [r for r in self.store.runs(self.recorder.session.id) if r.status is None]

    def repair(self, tools: Sequence[AgentTool]) -> list[Repair]:
        """Answer the calls a killed process left open (see ``minipi.session.repair``)."""
        return repair(self.recorder, tools)

    def history(self) -> list[Item]:
        """Every item saved so far, checked: valid to send again."""
        items, waiting = replay(self.name, self.store.entries(self.recorder.session.id))
        if waiting:
            raise SessionError(
                f"session '{self.name}' has calls without results; repair it first",
                code="session_needs_repair",
                session=self.name,
            )
        return items

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
        if name is None:
            latest = store.sessions(root)
            if not latest:
                raise SessionError(
                    f"no saved session for the project {root} yet; start one with --session NAME",
                    code="session_not_found",
                )
            name = latest[0].name
        lock = SessionLock.acquire(store.dir_fd, store.data_dir, check_name(name))
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
    return OpenSession(store, lock, SessionRecorder(store, info))
