"""``minipi sessions list|show|delete``, and where the session store lives.

Everything read from the store is shown through ``safe``: names, questions, arguments and
results are data, never terminal control. And nothing saved can pass for a line of minipi's
own (a fake "ok moved …" result, a fake "run 2 … succeeded"): names, ids, arguments and
messages are shown on one line (``\\n`` for a line end), and the lines after the first of a
question or an answer stand behind the gutter (``│``), as the live log shows them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from minipi.cli.render import one_line
from minipi.cli.saved_run import run_facts, run_verdict, timeline, when
from minipi.cli.settings import data_dir
from minipi.cli.terminal import safe, safe_json
from minipi.cli.words import Words, plural, words_for
from minipi.errors import ConfigError, SessionError
from minipi.session import (
    Entry,
    RunRecord,
    SessionInfo,
    SessionLock,
    SessionStore,
    check_name,
)
from minipi.session.store import DB_NAME

__all__ = ["data_dir", "delete_session", "export_session", "list_sessions", "show_session"]


def _store(directory: Path) -> SessionStore | None:
    """The store, or None when no session was ever saved there (nothing is created)."""
    if not os.path.lexists(directory / DB_NAME):
        return None
    return SessionStore.open(directory)


def list_sessions(directory: Path, *, as_json: bool, project: Path | None = None) -> int:
    found = _saved_sessions(directory, project)
    if as_json:
        click.echo(
            safe_json(json.dumps([_session_json(s) for s in found], ensure_ascii=False, indent=1))
        )
        return 0
    if not found:
        click.echo(_none_saved(project), err=True)
        return 0
    for line in _session_table(found):
        click.echo(line)
    return 0


def _none_saved(project: Path | None) -> str:
    """Why the list is empty, naming the project asked about (a mistyped path most often)."""
    if project is None:
        return "no saved sessions (start one with: minipi chat --session NAME)"
    where = safe(str(project))
    if not os.path.isdir(project):
        return (
            f"no saved sessions: the project {where} does not exist "
            "(all projects' sessions: minipi sessions list)"
        )
    return (
        f"no saved sessions for the project {where} (start one with: minipi chat -p "
        f"{where} --session NAME; all projects' sessions: minipi sessions list)"
    )


def _saved_sessions(directory: Path, project: Path | None) -> list[SessionInfo]:
    """The sessions saved in ``directory`` (of ``project`` alone when given)."""
    store = _store(directory)
    if store is None:
        return []
    try:
        return store.sessions(os.path.realpath(project) if project else None)
    finally:
        store.close()


def _session_table(found: list[SessionInfo]) -> list[str]:
    """One line per session under a header, the columns padded to line up."""
    rows = [("NAME", "PROJECT", "RUNS", "UPDATED", "LAST")]
    rows += [
        (
            one_line(s.name),
            one_line(s.project),
            str(s.runs),
            when(s.updated),
            _last(s),
        )
        for s in found
    ]
    widths = [max(len(safe(r[i])) for r in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [safe(cell).ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[4]]))
    return lines


def _last(info: SessionInfo) -> str:
    """The last run's status and its verdict with the reason's code (``succeeded · weak
    (no_reads)``): a success whose answer is not backed never reads as a plain one."""
    if info.last_status is None:
        return "unfinished"
    if info.last_verdict is None:
        return info.last_status
    why = f" ({info.last_reason})" if info.last_reason else ""
    return f"{info.last_status} · {info.last_verdict}{why}"


@contextmanager
def _named(directory: Path, name: str) -> Iterator[tuple[SessionStore, SessionInfo]]:
    """The open store and the session called ``name`` in it (closed on leaving)."""
    store = _store(directory)
    if store is None:
        raise _not_found(name)
    try:
        info = store.find(check_name(name))
        if info is None:
            raise _not_found(name)
        yield store, info
    finally:
        store.close()


def show_session(directory: Path, name: str, *, as_json: bool) -> int:
    with _named(directory, name) as (store, info):
        runs = store.runs(info.id)
        entries = store.entries(info.id)
    by_run: dict[int, list[Entry]] = {}
    for entry in entries:
        by_run.setdefault(entry.run, []).append(entry)
    if as_json:
        record = _session_json(info)
        record["runs"] = [_run_json(run, by_run.get(run.id, [])) for run in runs]
        click.echo(safe_json(json.dumps(record, ensure_ascii=False, indent=1)))
        return 0
    for line in _header(info, words_for(runs[0].question if runs else "")):
        click.echo(safe(line))
    for number, run in enumerate(runs, start=1):
        click.echo("")
        for line in timeline(number, run, by_run.get(run.id, [])):
            click.echo(safe(line))
    return 0


def _header(info: SessionInfo, words: Words) -> list[str]:
    """The session's name, project, model and dates, in its first question's language."""
    return [
        words("saved_session", name=one_line(info.name)),
        words("saved_project", project=one_line(info.project)),
        words("saved_model", model=one_line(info.model)),
        words("saved_dates", created=when(info.created), updated=when(info.updated)),
    ]


def export_session(
    directory: Path, name: str, *, run: int | None, html: Path | None, md: Path | None
) -> int:
    """Write session ``name`` (or its run number ``run``) as a page (``html``) and/or as
    Markdown (``md``); say where on stderr."""
    from minipi.cli.export import markdown, session_page
    from minipi.cli.transcript import transcript_of

    if html is None and md is None:
        raise ConfigError("say what to write: --html FILE, --md FILE, or both")
    with _named(directory, name) as (store, info):
        runs = store.runs(info.id)
        entries = store.entries(info.id)
    numbered = list(enumerate(runs, start=1))
    if run is not None:
        if not 1 <= run <= len(runs):
            raise ConfigError(
                f"session {one_line(name)} has {plural(len(runs), 'run')}: --run takes 1 to "
                f"{len(runs)}"
                if runs
                else f"session {one_line(name)} has no run yet"
            )
        numbered = [numbered[run - 1]]
    made = [
        (
            number,
            transcript_of(record.question, _run_json(record, _of_run(entries, record))["events"]),
        )
        for number, record in numbered
    ]
    words = words_for(made[0][1].question if made else "")
    facts = [line.strip() for line in _header(info, words)[1:]]  # the page's title names it
    if html is not None:
        _write(html, session_page(info.name, facts, made))
    if md is not None:
        _write(md, markdown([t for _, t in made], f"minipi · {info.name}"))
    return 0


def _of_run(entries: list[Entry], run: RunRecord) -> list[Entry]:
    return [entry for entry in entries if entry.run == run.id]


def _write(path: Path, body: str) -> None:
    """Write ``body`` to ``path`` (a page holds the files' contents: the user's alone)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as out:
            out.write(body)
        click.echo(safe(f"wrote {path}"), err=True)
    except OSError as error:
        raise ConfigError(f"cannot write {path}: {error.strerror}; choose another file") from None


def delete_session(directory: Path, name: str) -> int:
    with _named(directory, name) as (store, info):
        lock = SessionLock.acquire(store, name)
        try:
            store.delete(info.id)
        finally:
            lock.release(remove=True)
    click.echo(safe(f"deleted session {name} ({plural(info.runs, 'run')})"), err=True)
    return 0


def _not_found(name: str) -> SessionError:
    return SessionError(
        f"no session named {safe(repr(name))} (minipi sessions list shows them)",
        code="session_not_found",
        session=name,
    )


def _session_json(info: SessionInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "project": info.project,
        "model": info.model,
        "created": info.created,
        "updated": info.updated,
        "runs": info.runs,
        "last_status": info.last_status,
        "last_verdict": (
            {"kind": info.last_verdict, "reason": info.last_reason}
            if info.last_verdict is not None
            else None
        ),
    }


def _run_json(run: RunRecord, entries: list[Entry]) -> dict[str, Any]:
    """One run: its question, then each saved step as ``minipi ask --json`` writes events,
    ending with ``run_end`` once the run has ended."""
    events = [entry.event for entry in entries]
    if run.end is not None:
        events.append(run.end)
    return {
        "question": run.question,
        "model": run.model,
        "started": run.started,
        "ended": run.ended,
        "status": run.status,
        "verdict": verdict.to_json() if (verdict := run_verdict(run)) is not None else None,
        "facts": run_facts(run),
        "events": events,
    }
