"""The session store: one SQLite database (WAL) in the user's data directory.

Each write is one transaction, committed before the caller takes its next step: the loop's
sink saves an item before the loop acts on it. ``synchronous=FULL`` makes each commit durable
against power loss too (NORMAL is only durable against a crash of the process): the record
that a move was approved must never be lost while the move itself survives. That costs one
fsync per step, a few per model request, which is nothing next to the model's seconds.

Nothing here resets or rewrites a store it cannot read: a file that is not a database, a
schema version it does not know, or a malformed row raise ``SessionStoreError`` and leave the
file as it is. No value from the file is echoed in a message (H4).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, TypeVar

from minipi.ai.types import Usage
from minipi.errors import SessionError, SessionStoreError
from minipi.session.location import DB_NAME, create_private_file, open_private_dir
from minipi.session.records import KINDS, Entry, EntryKind, RunRecord, SessionInfo
from minipi.session.schema import (
    ENTRY_TYPES,
    RUN_COLUMNS,
    RUN_TYPES,
    SCHEMA,
    SCHEMA_VERSION,
    SESSION_COLUMNS,
    SESSION_TYPES,
)

__all__ = ["SCHEMA_VERSION", "NewEntry", "SessionStore"]

NewEntry = tuple[EntryKind, str | None, dict[str, Any]]
"""(kind, call_id, data) of an entry to append."""
T = TypeVar("T")


class SessionStore:
    """The sessions of one data directory. Use ``SessionStore.open(dir)``; ``close()`` after."""

    def __init__(self, connection: sqlite3.Connection, data_dir: Path, dir_fd: int) -> None:
        self.connection = connection
        self.data_dir = data_dir
        self.dir_fd = dir_fd
        self.path = data_dir / DB_NAME

    @classmethod
    def open(cls, data_dir: Path) -> SessionStore:
        """Open (creating if needed) the store in ``data_dir``; SessionError if unsafe or
        unreadable."""
        data_dir = Path(os.path.abspath(data_dir))
        dir_fd = open_private_dir(data_dir)
        try:
            created = create_private_file(dir_fd, DB_NAME, data_dir)
            path = data_dir / DB_NAME
            connection = sqlite3.connect(path, timeout=5.0, isolation_level=None)
        except sqlite3.Error as error:
            os.close(dir_fd)
            raise SessionError(
                f"cannot open the session store {data_dir / DB_NAME} ({error})",
                code="session_read_failed",
            ) from None
        except BaseException:
            os.close(dir_fd)
            raise
        store = cls(connection, data_dir, dir_fd)
        try:
            now = os.stat(path, follow_symlinks=False)
            if (now.st_dev, now.st_ino) != (created.st_dev, created.st_ino):
                raise SessionError(
                    f"{path} changed while it was opened", code="unsafe_session_path"
                )
            with store._reading():
                store._prepare()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        if self.dir_fd >= 0:
            self.connection.close()
            os.close(self.dir_fd)
            self.dir_fd = -1

    def _prepare(self) -> None:
        db = self.connection
        db.execute("PRAGMA trusted_schema = OFF")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA synchronous = FULL")
        fresh = not self._tables()
        if fresh:
            db.execute("PRAGMA journal_mode = WAL")  # stays set in the file
            self._write(self._create_schema)
        rows = db.execute("SELECT version FROM schema_version").fetchall()
        version = rows[0][0] if len(rows) == 1 else None
        if version != SCHEMA_VERSION:
            newer = isinstance(version, int) and version > SCHEMA_VERSION
            what = "a newer schema version" if newer else "a missing or unknown schema version"
            hint = "upgrade minipi" if newer else "move it away to start a new store"
            raise SessionStoreError(
                f"the session store {self.path} has {what} (this minipi reads version "
                f"{SCHEMA_VERSION}); it was left as is: {hint}",
                code="session_store_version",
            )
        if not fresh:
            db.execute("PRAGMA journal_mode = WAL")  # a no-op unless changed by hand

    def _tables(self) -> set[str]:
        rows = self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {str(r[0]) for r in rows}
        if tables and "schema_version" not in tables:
            raise SessionStoreError(
                f"{self.path} is an SQLite database but not a minipi session store; "
                "it was left as is: move it away, or set MINIPI_DATA_DIR elsewhere",
                code="session_store_version",
            )
        return tables

    def _create_schema(self, db: sqlite3.Connection) -> None:
        if self._tables():  # another process created it first
            return
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))

    # --- reading --------------------------------------------------------------------------

    def sessions(self, project: str | None = None) -> list[SessionInfo]:
        """Every session (of ``project`` if given), the most recently updated first."""
        where, args = ("WHERE s.project = ?", (project,)) if project else ("", ())
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions s {where} ORDER BY s.updated DESC, s.id DESC"
        with self._reading():
            rows = self.connection.execute(sql, args).fetchall()
        return [SessionInfo(*self._typed(r, SESSION_TYPES, "session row")) for r in rows]

    def find(self, name: str) -> SessionInfo | None:
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.name = ?"
        with self._reading():
            row = self.connection.execute(sql, (name,)).fetchone()
        return None if row is None else SessionInfo(*self._typed(row, SESSION_TYPES, "session row"))

    def runs(self, session_id: int) -> list[RunRecord]:
        sql = f"SELECT {RUN_COLUMNS} FROM runs WHERE session = ? ORDER BY id"
        with self._reading():
            rows = self.connection.execute(sql, (session_id,)).fetchall()
        return [self._run(row) for row in rows]

    def entries(self, session_id: int) -> list[Entry]:
        sql = "SELECT seq, run, kind, call_id, data, at FROM entries WHERE session = ? ORDER BY seq"
        with self._reading():
            rows = self.connection.execute(sql, (session_id,)).fetchall()
        return [self._entry(row) for row in rows]

    def _run(self, row: Sequence[Any]) -> RunRecord:
        values = list(self._typed(row, RUN_TYPES, "run row"))
        usage = self._json(values[9], "run usage") if values[9] is not None else {}
        counts = [usage.get(f.name, 0) for f in fields(Usage)]  # what asdict() saved
        if not all(isinstance(c, int) and c >= 0 for c in counts):
            raise self._malformed("run usage")
        values[9] = Usage(*counts)
        return RunRecord(*values)

    def _entry(self, row: Sequence[Any]) -> Entry:
        seq, run, kind, call_id, data, at = self._typed(row, ENTRY_TYPES, "entry row")
        if kind not in KINDS:
            raise self._malformed(f"entry (#{seq})")
        return Entry(seq, run, kind, self._json(data, f"entry (#{seq})"), at, call_id)

    def _json(self, text: str, what: str) -> dict[str, Any]:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            raise self._malformed(what) from None
        if not isinstance(value, dict):
            raise self._malformed(what)
        return value

    def _typed(self, row: Sequence[Any], types: Sequence[Any], what: str) -> Sequence[Any]:
        if len(row) != len(types) or not all(
            isinstance(v, t) for v, t in zip(row, types, strict=True)
        ):
            raise self._malformed(what)
        return row

    def _malformed(self, what: str) -> SessionStoreError:
        return SessionStoreError(
            f"the session store {self.path} has a malformed {what}; it was left as is "
            "(move it away to start a new store)",
            code="session_store_malformed",
        )

    # --- writing: one transaction each ----------------------------------------------------

    def create(self, name: str, project: str, model: str = "") -> SessionInfo:
        now = time.time()
        sql = "INSERT INTO sessions (name, project, model, created, updated) VALUES (?, ?, ?, ?, ?)"
        self._write(lambda db: db.execute(sql, (name, project, model, now, now)))
        found = self.find(name)
        assert found is not None
        return found

    def delete(self, session_id: int) -> None:
        self._write(lambda db: db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)))

    def begin_run(self, session_id: int, question: str, model: str, first: NewEntry) -> int:
        """Start a run and save its first entry (the question) in one transaction."""

        def work(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "INSERT INTO runs (session, question, model, started) VALUES (?, ?, ?, ?)",
                (session_id, question, model, time.time()),
            )
            run_id = cursor.lastrowid
            assert run_id is not None
            db.execute("UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))
            self._append(db, session_id, run_id, [first])
            return run_id

        return self._write(work)

    def append(self, session_id: int, run_id: int, entries: Sequence[NewEntry]) -> None:
        self._write(lambda db: self._append(db, session_id, run_id, entries))

    def end_run(self, session_id: int, run_id: int, record: RunRecord) -> None:
        """Save how the run ended (``record``'s status and what follows it)."""
        usage = json.dumps(asdict(record.usage))
        sql = """UPDATE runs SET ended = ?, status = ?, code = ?, error = ?, answer = ?,
            usage = ?, turns = ?, tool_calls = ? WHERE id = ? AND session = ?"""
        values = (time.time(), record.status, record.code, record.error, record.answer, usage)
        counts = (record.turns, record.tool_calls, run_id, session_id)

        def work(db: sqlite3.Connection) -> None:
            db.execute(sql, values + counts)
            self._touch(db, session_id)

        self._write(work)

    def _append(
        self, db: sqlite3.Connection, session_id: int, run_id: int, entries: Sequence[NewEntry]
    ) -> None:
        row = db.execute("SELECT MAX(seq) FROM entries WHERE session = ?", (session_id,))
        seq = int(row.fetchone()[0] or 0)
        now = time.time()
        db.executemany(
            "INSERT INTO entries (session, run, seq, kind, call_id, data, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    session_id,
                    run_id,
                    seq + i,
                    kind,
                    call_id,
                    json.dumps(data, ensure_ascii=False),
                    now,
                )
                for i, (kind, call_id, data) in enumerate(entries, start=1)
            ],
        )
        self._touch(db, session_id)

    @staticmethod
    def _touch(db: sqlite3.Connection, session_id: int) -> None:
        db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        db = self.connection
        with self._sqlite_errors(writing=True):
            db.execute("BEGIN IMMEDIATE")
            try:
                value = work(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    with suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise
        return value

    def _reading(self) -> AbstractContextManager[None]:
        return self._sqlite_errors(writing=False)

    @contextmanager
    def _sqlite_errors(self, *, writing: bool) -> Iterator[None]:
        """sqlite3's errors as SessionError: a refused change, a failed read or write (busy,
        disk full, I/O), or a file that cannot be read as a store."""
        try:
            yield
        except sqlite3.IntegrityError as error:
            raise SessionError(
                f"the session store refused a change ({error})", code="session_conflict"
            ) from None
        except sqlite3.OperationalError as error:
            doing, code = (
                ("save to", "session_write_failed") if writing else ("read", "session_read_failed")
            )
            raise SessionError(
                f"could not {doing} the session store {self.path} ({error})", code=code
            ) from None
        except sqlite3.DatabaseError as error:
            raise SessionStoreError(
                f"the session store {self.path} cannot be read ({error}); it was left as is. "
                f"Move it away to start a new store (mv {self.path} {self.path}.corrupt)",
                code="session_store_unreadable",
            ) from None
