"""The session store: one SQLite database (WAL) in the private directory of ``location``.

What it holds (schema version 2): ``sessions`` (one per name and project), ``runs`` (one per
question; ``status`` and ``end`` stay NULL until the run ended) and ``entries``: each saved
step of a run as the JSON object ``minipi ask --json`` writes for its event (``to_json``),
or an ``approval_asked`` / ``approval_answered`` step in the same style. A run's end is its
``run_end`` object. A change of these tables or shapes is a new ``SCHEMA_VERSION``; a store
of another version is refused, never converted. (Version 1 saved steps in shapes of its own,
without their turn: they cannot be shown as events, and one reader is simpler than two.)

Each write is one transaction, committed before the caller takes its next step.
``synchronous=FULL`` makes each commit durable against power loss too (NORMAL is only durable
against a crash of the process): the record that a move was approved must never be lost
while the move itself survives. That costs one fsync per step, nothing next to the model.

Nothing here resets or rewrites a store it cannot read: a file that is not a database, a
schema version it does not know, or a malformed row raise ``SessionStoreError`` and leave the
file as it is. No value from the file is echoed in a message (H4). No secret an endpoint was
sent is written, whatever quoted it (``minipi.ai.secrets.redact``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from minipi.ai.secrets import redact
from minipi.errors import SessionError, SessionStoreError
from minipi.session.location import create_private_file, open_private_dir, refused
from minipi.session.records import Entry, RunRecord, SessionInfo, read_usage, saved_totals

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "STEP_TYPES",
    "Entry",
    "RunRecord",
    "SessionInfo",
    "SessionStore",
    "saved_totals",
]

DB_NAME = "sessions.db"
SCHEMA_VERSION = 2
STEP_TYPES = frozenset(
    {"items", "tool_executing", "tool_result", "model_response", "notice"}
    | {"approval_asked", "approval_answered"}
)
"""The ``type`` of every saved step (``run_end`` is kept with its run)."""

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, project TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    question TEXT NOT NULL, model TEXT NOT NULL, started REAL NOT NULL,
    ended REAL, status TEXT, "end" TEXT);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, event TEXT NOT NULL, UNIQUE (session, seq));
CREATE INDEX runs_of_session ON runs (session, id);
"""
_LAST_RUN = "(SELECT {} FROM runs r WHERE r.session = s.id ORDER BY r.id DESC LIMIT 1)"
_SAVED_TEXT = """CASE WHEN json_valid(r."end") AND json_type(r."end", '{0}') = 'text'
    THEN json_extract(r."end", '{0}') END"""
"""The text at the JSON path ``{0}`` of a run's end; NULL when it holds none there."""
_SESSION_SQL = f"""SELECT s.id, s.name, s.project, s.model, s.created, s.updated,
    (SELECT COUNT(*) FROM runs r WHERE r.session = s.id),
    {_LAST_RUN.format("r.status")},
    {_LAST_RUN.format(_SAVED_TEXT.format("$.verdict.kind"))},
    {_LAST_RUN.format(_SAVED_TEXT.format("$.verdict.reason"))}
    FROM sessions s"""
_OPT_STR, _NUM = (str, type(None)), (int, float)
_SESSION_TYPES = (int, str, str, str, _NUM, _NUM, int, _OPT_STR, _OPT_STR, _OPT_STR)
_RUN_TYPES = (int, str, str, _NUM, (int, float, type(None)), _OPT_STR, _OPT_STR)
_END_TYPES = {"code": _OPT_STR, "error": _OPT_STR, "answer": str, "turns": int, "tool_calls": int}
T = TypeVar("T")


# --- the database -------------------------------------------------------------------------


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
            connection = sqlite3.connect(data_dir / DB_NAME, timeout=5.0, isolation_level=None)
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
            now = os.stat(store.path, follow_symlinks=False)
            if (now.st_dev, now.st_ino) != (created.st_dev, created.st_ino):
                raise refused(store.path, "it changed while it was opened")
            with store._errors(writing=False):
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
        if not self._tables():
            db.execute("PRAGMA journal_mode = WAL")  # kept in the file
            self._write(self._create_schema)
        rows = db.execute("SELECT version FROM schema_version").fetchall()
        version = rows[0][0] if len(rows) == 1 else None
        if version != SCHEMA_VERSION:
            raise _version_error(self.path, version)
        db.execute("PRAGMA journal_mode = WAL")  # only once it is ours: a no-op unless reset

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
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))

    # --- reading ------------------------------------------------------------------------

    def sessions(self, project: str | None = None) -> list[SessionInfo]:
        """Every session (of ``project`` if given), the most recently updated first."""
        where, args = (" WHERE s.project = ?", (_sql_text(project),)) if project else ("", ())
        rows = self._read(f"{_SESSION_SQL}{where} ORDER BY s.updated DESC, s.id DESC", args)
        return [SessionInfo(*self._typed(r, _SESSION_TYPES, "session row")) for r in rows]

    def find(self, name: str) -> SessionInfo | None:
        rows = self._read(f"{_SESSION_SQL} WHERE s.name = ?", (_sql_text(name),))
        return SessionInfo(*self._typed(rows[0], _SESSION_TYPES, "session row")) if rows else None

    def runs(self, session_id: int) -> list[RunRecord]:
        sql = """SELECT id, question, model, started, ended, status, "end" FROM runs
            WHERE session = ? ORDER BY id"""
        return [self._run(row) for row in self._read(sql, (session_id,))]

    def entries(self, session_id: int) -> list[Entry]:
        sql = "SELECT seq, run, event FROM entries WHERE session = ? ORDER BY seq"
        return [self._entry(row) for row in self._read(sql, (session_id,))]

    def _read(self, sql: str, args: Sequence[object]) -> list[Any]:
        with self._errors(writing=False):
            return self.connection.execute(sql, args).fetchall()

    def _run(self, row: Sequence[Any]) -> RunRecord:
        *head, end_text = self._typed(row, _RUN_TYPES, "run row")
        run = RunRecord(*head)
        if end_text is None:
            return run
        end = self._json(end_text, "run end")
        values: dict[str, Any] = {name: end.get(name) for name in _END_TYPES}
        usage = read_usage(end.get("usage"))
        if usage is None or end.get("status") != run.status:
            raise self._malformed("run end")
        self._typed(list(values.values()), list(_END_TYPES.values()), "run end")
        return replace(run, end=end, usage=usage, **values)

    def _entry(self, row: Sequence[Any]) -> Entry:
        seq, run, text = self._typed(row, (int, int, str), "entry row")
        event = self._json(text, f"entry (#{seq})")
        if event.get("type") not in STEP_TYPES:
            raise self._malformed(f"entry (#{seq})")
        return Entry(seq, run, event)

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

    # --- writing: one transaction each --------------------------------------------------

    def create(self, name: str, project: str) -> SessionInfo:
        now = time.time()
        sql = "INSERT INTO sessions (name, project, created, updated) VALUES (?, ?, ?, ?)"
        name, project = _sql_text(name), _sql_text(project)
        self._write(lambda db: db.execute(sql, (name, project, now, now)))
        found = self.find(name)
        assert found is not None
        return found

    def delete(self, session_id: int) -> None:
        self._write(lambda db: db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)))

    def begin_run(self, session_id: int, question: str, model: str, first: dict[str, Any]) -> int:
        """Start a run and save its first step (the question) in one transaction."""

        question, model = _sql_text(question), _sql_text(model)

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

    def append(self, session_id: int, run_id: int, events: Sequence[dict[str, Any]]) -> None:
        """Save ``events`` (steps of run ``run_id``, in order) in one transaction."""
        self._write(lambda db: self._append(db, session_id, run_id, events))

    def end_run(self, session_id: int, run_id: int, end: dict[str, Any]) -> None:
        """Save how the run ended: ``end`` is its ``run_end`` object."""
        sql = 'UPDATE runs SET ended = ?, status = ?, "end" = ? WHERE id = ? AND session = ?'
        values = (time.time(), end["status"], _dumps(end), run_id, session_id)

        def work(db: sqlite3.Connection) -> None:
            db.execute(sql, values)
            _touch(db, session_id)

        self._write(work)

    @staticmethod
    def _append(
        db: sqlite3.Connection, session_id: int, run_id: int, events: Sequence[dict[str, Any]]
    ) -> None:
        row = db.execute("SELECT MAX(seq) FROM entries WHERE session = ?", (session_id,))
        seq = int(row.fetchone()[0] or 0)
        db.executemany(
            "INSERT INTO entries (session, run, seq, event) VALUES (?, ?, ?, ?)",
            [(session_id, run_id, seq + i, _dumps(e)) for i, e in enumerate(events, start=1)],
        )
        _touch(db, session_id)

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        db = self.connection
        with self._errors(writing=True):
            db.execute("BEGIN IMMEDIATE")
            try:
                value = work(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise
        return value

    @contextlib.contextmanager
    def _errors(self, *, writing: bool) -> Iterator[None]:
        """sqlite3's errors as SessionError: a refused change, a failed read or write (busy,
        disk full, I/O), or a file that cannot be read as a store."""
        try:
            yield
        except sqlite3.IntegrityError as error:
            raise SessionError(
                f"the session store refused a change ({error})", code="session_conflict"
            ) from None
        except sqlite3.OperationalError as error:
            doing, code = ("save to", "write") if writing else ("read", "read")
            raise SessionError(
                f"could not {doing} the session store {self.path} ({error})",
                code=f"session_{code}_failed",
            ) from None
        except sqlite3.DatabaseError as error:
            raise SessionStoreError(
                f"the session store {self.path} cannot be read ({error}); it was left as is. "
                f"Move it away to start a new store (mv {self.path} {self.path}.corrupt)",
                code="session_store_unreadable",
            ) from None


def _version_error(path: Path, version: object) -> SessionStoreError:
    """The refusal of a store whose schema version is not ours (``version`` never shown)."""
    what, hint = "a missing or unknown schema version", "move it away to start a new store"
    if type(version) is int and version > SCHEMA_VERSION:
        what, hint = "a newer schema version", "upgrade minipi"
    elif type(version) is int and version > 0:
        what = "an older schema version"
        hint += " (the minipi that wrote it can still read it)"
    return SessionStoreError(
        f"the session store {path} has {what} (this minipi reads version "
        f"{SCHEMA_VERSION}); it was left as is: {hint}",
        code="session_store_version",
    )


def _dumps(value: dict[str, Any]) -> str:
    """``value`` as JSON text SQLite can store: UTF-8 as is, but a lone surrogate (a
    ``"\\ud800"`` escape in a reply, an undecodable file name) kept escaped, so that it reads
    back as the same string. A value that cannot be JSON at all (nested past the recursion
    limit) is a ``SessionError``, never a traceback."""
    try:
        text = redact(json.dumps(value, ensure_ascii=False))  # whatever echoed a key
        if not text.isascii():
            text.encode()  # SQLite takes UTF-8 only: a surrogate raises here
        return text
    except UnicodeEncodeError:
        return redact(json.dumps(value))  # \uXXXX escapes throughout: ASCII, as read back
    except (RecursionError, ValueError, TypeError) as error:
        raise SessionError(
            f"a step could not be saved: it is not plain JSON ({type(error).__name__}); the "
            "run stopped so that the record has no gap",
            code="session_unsavable",
        ) from None


def _sql_text(value: str) -> str:
    """``value`` as text SQLite can store (a lone surrogate written as ``\\udcff``): for the
    columns that name a session, project, question or model."""
    value = redact(value)
    try:
        value.encode()
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode()
    return value


def _touch(db: sqlite3.Connection, session_id: int) -> None:
    db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))
