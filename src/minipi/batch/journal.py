"""The journal of a task that may change things (``--approve all``): a session
(``minipi.session``) per task in ``DIR/journal/``, every step saved before the next.

A task killed before its record ran part of its way, and may have changed files. It is not
run again from scratch: it resumes like a session does. A call whose handler had started, or
whose approval was given, is answered "interrupted: outcome unknown, verify before retrying"
and never run again, unless the journal and the disk prove it made (a whole ``move_file``:
``minipi.batch.moves``), when it is answered as the tool would have; a call that never started
is answered "not executed"; then the question is asked again on that history, so the model
checks what happened instead of redoing it.
A read-only task keeps no journal: it changed nothing, so running it again is harmless.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from minipi.agent import AgentTool
from minipi.ai.types import Item, Message
from minipi.batch.moves import settle_moves
from minipi.batch.tasks import Task
from minipi.session import OpenSession, Repair, open_session

__all__ = ["JOURNAL_DIR", "history_for", "open_journal"]

JOURNAL_DIR = "journal"


def _name(task: Task) -> str:
    """The task's session name: what it asks and its id (a session name is at most 100)."""
    shown = task.id if len(task.id) <= 60 else hashlib.sha256(task.id.encode()).hexdigest()[:32]
    return f"{task.digest}-{shown}"


@contextmanager
def open_journal(directory: Path | None, task: Task, root: Path) -> Iterator[OpenSession | None]:
    """The journal of ``task`` in ``directory`` (locked while it runs); None without one."""
    if directory is None:
        yield None
        return
    book = open_session(directory, root, _name(task))
    try:
        yield book
    finally:
        book.close()


def history_for(
    book: OpenSession, tools: Sequence[AgentTool], question: str
) -> tuple[list[Item], list[Repair]]:
    """What the task's run starts from: the journal's history, its open calls answered
    (a move proven made as made; the others never re-run: nobody is asked again in a batch),
    then the question; and the repairs."""
    repairs: list[Repair] = []
    if book.runs():
        settle_moves(book)
        repairs = book.repair(tools, ask_again=False)
    return [*book.history(), Message("user", question)], repairs
