"""The store's tables (version 1), and the Python types their rows must have when read.

sessions: one row per named session (its project and last model).
runs: one row per question; ``status`` and the rest are NULL until the run's end is saved.
entries: every saved step of a run, in ``seq`` order (see ``records.Entry`` for the kinds).
A change of these tables is a new ``SCHEMA_VERSION``; an older minipi refuses a newer store.
"""

from __future__ import annotations

__all__ = [
    "ENTRY_TYPES",
    "RUN_COLUMNS",
    "RUN_TYPES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SESSION_COLUMNS",
    "SESSION_TYPES",
]

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, project TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '', created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    question TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', started REAL NOT NULL,
    ended REAL, status TEXT, code TEXT, error TEXT, answer TEXT NOT NULL DEFAULT '',
    usage TEXT, turns INTEGER NOT NULL DEFAULT 0, tool_calls INTEGER NOT NULL DEFAULT 0);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, kind TEXT NOT NULL, call_id TEXT, data TEXT NOT NULL,
    at REAL NOT NULL, UNIQUE (session, seq));
CREATE INDEX runs_of_session ON runs (session, id);
"""
SESSION_COLUMNS = """s.id, s.name, s.project, s.model, s.created, s.updated,
    (SELECT COUNT(*) FROM runs r WHERE r.session = s.id),
    (SELECT r.status FROM runs r WHERE r.session = s.id ORDER BY r.id DESC LIMIT 1)"""
RUN_COLUMNS = (
    "id, question, model, started, ended, status, code, error, answer, usage, turns, tool_calls"
)
_OPT_STR, _OPT_NUM, _NUM = (str, type(None)), (int, float, type(None)), (int, float)
SESSION_TYPES = (int, str, str, str, _NUM, _NUM, int, _OPT_STR)
RUN_TYPES = (int, str, str, _NUM, _OPT_NUM, _OPT_STR, _OPT_STR, _OPT_STR, str, _OPT_STR, int, int)
ENTRY_TYPES = (int, int, str, _OPT_STR, str, _NUM)
