"""The session store on disk: a private place outside the project (H6), never reset (H2, H4),
one process per session, and write failures that say so (H3)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from minipi.errors import ConfigError, SessionBusyError, SessionError, SessionStoreError
from minipi.session import SCHEMA_VERSION, SessionLock, SessionStore, open_session
from minipi.session.location import check_outside_project

pytestmark = pytest.mark.reliability

EVIL = "EVIL\x1b]0;pwned\x07"
QUESTION = {"type": "items", "turn": 0, "items": [{"type": "message", "role": "user", "text": "q"}]}


def _filled(data: Path) -> None:
    """A store with one session, one run and its question."""
    opened = open_session(data, Path("/p"), "demo")
    try:
        opened.recorder.begin_run("q", "m")
    finally:
        opened.close()


def _raw(data: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    """Run ``sql`` on the store's file directly (committed), as another program could."""
    with sqlite3.connect(data / "sessions.db") as db:
        rows = db.execute(sql, args).fetchall()
    db.close()
    return rows


def _list(data: Path) -> None:
    store = SessionStore.open(data)
    try:
        store.sessions()
    finally:
        store.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_new_store_is_private_versioned_wal_and_full_sync(tmp_path: Path) -> None:
    data = tmp_path / "share" / "minipi"
    store = SessionStore.open(data)
    try:
        assert store.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        info = store.create("demo", "/p")
        assert store.find("demo") == info
        wal = [p for p in data.iterdir() if p.name.startswith("sessions.db-")]
        assert wal  # WAL and shared-memory files exist while it is open: private too
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in wal)
    finally:
        store.close()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "sessions.db").stat().st_mode) == 0o600
    assert _raw(data, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


def test_a_store_inside_the_project_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(project / "sub")
    for inside in (project, project / "sub" / "data", tmp_path / "link" / "data"):
        with pytest.raises(ConfigError, match="inside the project root") as caught:
            open_session(inside, project, "demo")
        assert caught.value.code == "session_dir_in_project"
    check_outside_project(tmp_path / "proj-data", project)  # a sibling prefix is outside
    assert sorted(p.name for p in project.rglob("*")) == ["sub"]


def test_a_symlinked_data_dir_or_db_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "data").symlink_to(real)
    with pytest.raises(SessionError, match="symbolic link") as caught:
        SessionStore.open(tmp_path / "data")
    assert caught.value.code == "unsafe_session_path"
    assert list(real.iterdir()) == []

    data = tmp_path / "data2"
    data.mkdir(mode=0o700)
    (data / "sessions.db").symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(SessionError, match="symbolic link"):
        SessionStore.open(data)
    assert not (tmp_path / "elsewhere.db").exists()


def test_a_data_dir_others_can_write_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    with pytest.raises(SessionError, match="other users may write"):
        SessionStore.open(data)


def test_a_db_with_wider_mode_is_tightened(tmp_path: Path) -> None:
    _filled(tmp_path / "data")
    (tmp_path / "data" / "sessions.db").chmod(0o644)
    SessionStore.open(tmp_path / "data").close()
    assert stat.S_IMODE((tmp_path / "data" / "sessions.db").stat().st_mode) == 0o600


def test_a_file_that_is_not_a_database_is_kept_and_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    db = data / "sessions.db"
    db.write_bytes(b"half a json file {" + EVIL.encode() + b"\n" * 5000)
    db.chmod(0o600)
    before = _digest(db)
    with pytest.raises(SessionStoreError, match="cannot be read") as caught:
        SessionStore.open(data)
    assert "EVIL" not in str(caught.value)
    assert caught.value.code == "session_store_unreadable"
    assert _digest(db) == before
    assert sorted(p.name for p in data.iterdir()) == ["sessions.db"]  # no reset, no rename


def test_damaged_pages_are_reported_not_reset(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _filled(data)
    db = data / "sessions.db"
    page = 4096
    content = bytearray(db.read_bytes())
    content[page:] = b"\xff" * (len(content) - page)  # every page but the header page
    db.write_bytes(bytes(content))
    with pytest.raises(SessionStoreError, match="cannot be read"):
        _list(data)
    assert db.read_bytes() == bytes(content)


def test_a_future_schema_version_is_refused_and_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _filled(data)
    _raw(data, "UPDATE schema_version SET version = 99")
    with pytest.raises(SessionStoreError, match=r"newer schema version.*upgrade minipi"):
        SessionStore.open(data)
    assert _raw(data, "SELECT version FROM schema_version") == [(99,)]
    assert _raw(data, "SELECT name FROM sessions") == [("demo",)]


def test_an_older_schema_version_is_refused_and_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _filled(data)
    _raw(data, "UPDATE schema_version SET version = 1")
    with pytest.raises(SessionStoreError, match=r"an older schema version.*move it away"):
        SessionStore.open(data)
    assert _raw(data, "SELECT version FROM schema_version") == [(1,)]


@pytest.mark.parametrize("version", [EVIL, None, 1.5, 0])
def test_an_unreadable_schema_version_is_refused_without_echo(
    tmp_path: Path, version: object
) -> None:
    data = tmp_path / "data"
    _filled(data)
    if version is None:
        _raw(data, "DELETE FROM schema_version")
    else:
        _raw(data, "UPDATE schema_version SET version = ?", version)
    with pytest.raises(SessionStoreError, match="unknown schema version") as caught:
        SessionStore.open(data)
    assert "EVIL" not in str(caught.value)
    assert _raw(data, "SELECT name FROM sessions") == [("demo",)]


def test_another_sqlite_database_is_not_taken_over(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    _raw(data, "CREATE TABLE notes (text TEXT)")
    with pytest.raises(SessionStoreError, match="not a minipi session store"):
        SessionStore.open(data)
    assert _raw(data, "SELECT name FROM sqlite_master") == [("notes",)]


ENDED = '{"type": "run_end", "status": "failed", "answer": "", "turns": 1, "tool_calls": 0, '


@pytest.mark.parametrize(
    ("sql", "read"),
    [
        ("UPDATE sessions SET created = ?", "sessions"),
        ('UPDATE runs SET "end" = ?', "runs"),
        ("UPDATE runs SET status = 'failed', \"end\" = ?", "runs"),
        ("UPDATE entries SET event = ?", "entries"),
        ("UPDATE entries SET event = '{\"type\": \"' || ? || '\"}'", "entries"),
    ],
)
@pytest.mark.parametrize(
    "value",
    [
        EVIL,
        ENDED + '"code": "x", "error": "x", "usage": "EVIL"}',
        ENDED + '"code": 5, "error": "EVIL", "usage": {}}',
        '["EVIL"]',
    ],
)
def test_malformed_rows_are_refused_without_echo(
    tmp_path: Path, sql: str, read: str, value: str
) -> None:
    data = tmp_path / "data"
    _filled(data)
    _raw(data, sql, value)
    store = SessionStore.open(data)
    readers: dict[str, Callable[[], object]] = {
        "sessions": store.sessions,
        "runs": lambda: store.runs(1),
        "entries": lambda: store.entries(1),
    }
    reader = readers[read]
    try:
        with pytest.raises(SessionStoreError, match="malformed") as caught:
            reader()
    finally:
        store.close()
    assert "EVIL" not in str(caught.value)
    assert _raw(data, "SELECT COUNT(*) FROM entries") == [(1,)]


def test_a_run_end_is_read_back_as_saved(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _filled(data)
    end = ENDED + '"code": "x", "error": "why", "usage": {"input_tokens": 3}, "evidence": []}'
    _raw(data, "UPDATE runs SET status = 'failed', ended = 1.0, \"end\" = ?", end)
    store = SessionStore.open(data)
    try:
        (run,) = store.runs(1)
    finally:
        store.close()
    assert (run.status, run.code, run.error, run.turns, run.usage.input_tokens) == (
        "failed",
        "x",
        "why",
        1,
        3,
    )
    assert run.end is not None
    assert run.end["evidence"] == []  # kept whole: what a newer run_end holds is shown too


def test_a_malformed_item_stops_the_resume_without_echo(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _filled(data)
    item = '{"type": "EVIL\\u001b[31m", "text": "x"}'
    _raw(data, """UPDATE entries SET event = '{"type": "items", "items": [' || ? || ']}'""", item)
    opened = open_session(data, Path("/p"), "demo")
    try:
        with pytest.raises(SessionStoreError, match="entry #1 is a malformed item") as caught:
            opened.history()
    finally:
        opened.close()
    assert "EVIL" not in str(caught.value)


def test_one_process_per_session(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "data")
    try:
        first = SessionLock.acquire(store, "demo")
        with pytest.raises(SessionBusyError, match=f"'demo' is in use .*pid {os.getpid()}") as e:
            SessionLock.acquire(store, "demo")
        assert e.value.pid == os.getpid()
        other = SessionLock.acquire(store, "other")  # not blocked
        other.release()
        first.release(remove=True)
        assert len(list((tmp_path / "data" / "locks").iterdir())) == 1  # only "other" is left
        again = SessionLock.acquire(store, "demo")
        again.release()
    finally:
        store.close()


def test_a_full_disk_is_a_write_failure_and_nothing_half_saved(tmp_path: Path) -> None:
    """SQLite's own "database or disk is full" (the file may not grow: ``max_page_count``)."""
    store = SessionStore.open(tmp_path / "data")
    try:
        info = store.create("demo", "/p")
        pages = store.connection.execute("PRAGMA page_count").fetchone()[0]
        store.connection.execute(f"PRAGMA max_page_count = {pages}")
        big = {**QUESTION, "items": [{"type": "message", "role": "user", "text": "x" * 50_000}]}
        with pytest.raises(SessionError, match="disk is full") as caught:
            store.begin_run(info.id, "q", "m", big)
        assert caught.value.code == "session_write_failed"
        assert store.runs(info.id) == []  # the transaction was rolled back whole
        assert store.entries(info.id) == []
    finally:
        store.close()


def test_a_data_dir_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SessionError, match="cannot keep sessions in") as caught:
        SessionStore.open(tmp_path / "file" / "minipi")
    assert caught.value.code == "unsafe_session_path"


def test_a_hard_linked_or_special_db_file_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    other.chmod(0o600)
    os.link(other, data / "sessions.db")
    with pytest.raises(SessionError, match="other hard links") as caught:
        SessionStore.open(data)
    assert caught.value.code == "unsafe_session_path"
    (data / "sessions.db").unlink()
    os.mkfifo(data / "sessions.db", 0o600)
    with pytest.raises(SessionError, match="not a regular file"):
        SessionStore.open(data)
    assert other.read_bytes() == b""


@pytest.mark.parametrize("name", ["", " s", "s ", "s\x1b[31m", "s" * 101])
def test_a_session_name_is_printable_and_trimmed(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="1 to 100 printable") as caught:
        open_session(tmp_path / "data", tmp_path / "proj", name)
    assert caught.value.code == "invalid_session_name"
