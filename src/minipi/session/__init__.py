"""Sessions that survive: every step of every run saved in SQLite as it happens.

    opened = open_session(data_dir, project, "demo")   # locked until close()
    opened.repair(tools)                                 # answer calls a killed run left open
    opened.recorder.begin_run(question, model)           # save the question
    run_agent(client, tools, config, [*opened.history(), Message("user", question)],
              on_event=opened.recorder)                  # save each step before the next

``store``: where the database lives (never inside a project) and what it holds; ``recorder``:
the event sink and the approver wrapper that save each step; ``resume``: opening a session,
its history checked, the calls a killed process left open answered (never re-run when their
outcome is unknown); ``lock``: one process per session.
"""

from __future__ import annotations

from minipi.session.lock import SessionLock
from minipi.session.recorder import SessionRecorder
from minipi.session.resume import (
    NOT_RUN,
    OUTCOME_UNKNOWN,
    REFUSED,
    OpenSession,
    Repair,
    check_name,
    open_session,
)
from minipi.session.store import (
    SCHEMA_VERSION,
    Entry,
    RunRecord,
    SessionInfo,
    SessionStore,
    saved_totals,
)

__all__ = [
    "NOT_RUN",
    "OUTCOME_UNKNOWN",
    "REFUSED",
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
    "saved_totals",
]
