"""Sessions that survive: every step of every run saved in SQLite as it happens.

    opened = open_session(data_dir, project, "demo")   # locked until close()
    opened.repair(tools)                                 # answer calls a killed run left open
    opened.recorder.begin_run(question, model)           # save the question
    run_agent(client, tools, config, [*opened.history(), Message("user", question)],
              on_event=opened.recorder)                  # save each step before the next

The store lives in the user's data directory, never inside a project (``location``); one
process holds a session at a time (``lock``); ``transcript`` checks a history before it is
sent again; ``repair`` never re-runs a call whose outcome is unknown.
"""

from __future__ import annotations

from minipi.session.handle import OpenSession, check_name, open_session
from minipi.session.lock import SessionLock
from minipi.session.recorder import SessionRecorder
from minipi.session.records import Entry, RunRecord, SessionInfo
from minipi.session.repair import NOT_RUN, OUTCOME_UNKNOWN, Repair
from minipi.session.store import SCHEMA_VERSION, SessionStore

__all__ = [
    "NOT_RUN",
    "OUTCOME_UNKNOWN",
    "SCHEMA_VERSION",
    "Entry",
    "OpenSession",
    "Repair",
    "RunRecord",
    "SessionInfo",
    "SessionLock",
    "SessionRecorder",
    "SessionStore",
    "check_name",
    "open_session",
]
