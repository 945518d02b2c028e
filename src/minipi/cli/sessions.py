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
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from minipi.cli.evidence import cited_lines, evidence_lines
from minipi.cli.render import one_line
from minipi.cli.settings import data_dir
from minipi.cli.terminal import safe, safe_json
from minipi.cli.words import plural, words_for
from minipi.errors import ConfigError, SessionError
from minipi.session import (
    Entry,
    RunRecord,
    SessionInfo,
    SessionLock,
    SessionStore,
    check_name,
    saved_totals,
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
            _when(s.updated),
            s.last_status or "unfinished",
        )
        for s in found
    ]
    widths = [max(len(safe(r[i])) for r in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [safe(cell).ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[4]]))
    return lines


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
    click.echo(safe(f"session {one_line(info.name)}"))
    click.echo(safe(f"  project  {one_line(info.project)}"))
    click.echo(safe(f"  model    {one_line(info.model)}"))
    click.echo(f"  created  {_when(info.created)}   updated {_when(info.updated)}")
    for number, run in enumerate(runs, start=1):
        click.echo("")
        for line in _timeline(number, run, by_run.get(run.id, [])):
            click.echo(safe(line))
    return 0


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
    facts = [
        f"project {info.project}",
        f"model {info.model}",
        f"created {_when(info.created)} · updated {_when(info.updated)}",
    ]
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


def _timeline(number: int, run: RunRecord, entries: list[Entry]) -> list[str]:
    status = run.status or "unfinished (running, or interrupted: repaired when next opened)"
    lines = [f"run {number}  {_when(run.started)}  {status}"]
    lines.extend(_labelled("question", run.question))
    seconds: dict[str, object] = {}  # call_id -> its tool's seconds (saved before its output)
    for entry in entries[1:] if entries and entries[0].type == "items" else entries:
        lines.extend(_entry_lines(entry.event, run, seconds))
    lines.extend(_outcome_lines(run))
    lines.extend(_evidence_block(run))
    lines.append(_total_line(run, entries))
    return lines


def _outcome_lines(run: RunRecord) -> list[str]:
    """The answer (and its cited facts) of a run that succeeded, the error of one that failed."""
    if run.status == "succeeded":
        lines = _labelled("answer", run.answer)
        facts = run.end.get("facts") if run.end is not None else None
        if isinstance(facts, list) and facts:  # guided mode's cited facts: minipi's block
            words = words_for(run.question)
            lines.extend("  " + line for line in cited_lines([str(f) for f in facts], words))
        return lines
    if run.status is not None:
        return [f"  {run.code}: {one_line(run.error or '')}"]
    return []


def _evidence_block(run: RunRecord) -> list[str]:
    """The sources block, as the run showed it (none when it saved none)."""
    evidence = run.end.get("evidence") if run.end is not None else None
    if not isinstance(evidence, dict):
        return []
    words = words_for(run.question)
    return ["  " + line for line in evidence_lines(evidence, words, fancy=False)]


def _total_line(run: RunRecord, entries: list[Entry]) -> str:
    took = f", {_duration(run.ended - run.started)}" if run.ended is not None else ""
    usage, turns, calls = run.usage, run.turns, run.tool_calls
    if run.status is None:  # no end yet: count what was saved
        usage, turns, calls = saved_totals(entries)
    return (
        f"  total  {plural(turns, 'request')}, {plural(calls, 'tool call')}, "
        f"tokens in {usage.input_tokens} / "
        f"out {usage.output_tokens} / cached {usage.cached_tokens}{took}"
    )


def _entry_lines(event: dict[str, Any], run: RunRecord, seconds: dict[str, object]) -> list[str]:
    kind = event.get("type")
    if kind == "tool_result":
        seconds[str(event.get("call_id"))] = event.get("seconds")
        return []
    if kind == "items":
        items = event.get("items")
        if not isinstance(items, list):
            return []
        return [line for i in items if isinstance(i, dict) for line in _item_lines(i, run, seconds)]
    return _step_lines(kind, event)


def _step_lines(kind: object, event: dict[str, Any]) -> list[str]:
    """The lines of a saved step that holds no items: a request, an approval, a notice."""
    if kind == "model_response":
        saved = event.get("usage")
        usage: dict[str, Any] = saved if isinstance(saved, dict) else {}
        line = (
            f"  request {event.get('turn')}  tokens in {usage.get('input_tokens')} / out "
            f"{usage.get('output_tokens')} / cached {usage.get('cached_tokens')}  "
        )
        return [(line + _duration(event.get("seconds"))).rstrip()]
    if kind == "approval_asked":
        return [f"    approval asked: {one_line(str(event.get('summary')))}"]
    if kind == "approval_answered":
        return [f"    approval {'granted' if event.get('allowed') is True else 'refused'}"]
    if kind == "notice":
        return [f"  notice  {one_line(str(event.get('message')))}"]
    return []


def _item_lines(data: dict[str, Any], run: RunRecord, seconds: dict[str, object]) -> list[str]:
    kind = data.get("type")
    if kind == "function_call":
        arguments = _short(str(data.get("arguments")), 200)
        name, call_id = one_line(str(data.get("name"))), one_line(str(data.get("call_id")))
        return [f"  call {name} {arguments}  ({call_id})"]
    if kind == "function_call_output":
        return [_output_line(data, seconds)]
    if kind == "message":
        return _message_lines(data, run)
    if kind == "reasoning":
        return [f"  reasoning  ({len(str(data.get('text')))} characters)"]
    return []


def _output_line(data: dict[str, Any], seconds: dict[str, object]) -> str:
    output = str(data.get("output"))
    if data.get("is_error") is True:  # the output says "error [code]: ..." itself
        shown = output if output.startswith("error [") else f"error {output}"
        return f"    {_short(shown, 160)}"
    took = _duration(seconds.get(str(data.get("call_id"))))
    return f"    ok  {_short(output, 160)}" + (f"  {took}" if took else "")


def _duration(seconds: object) -> str:
    """``12.3 s``, ``0.04 s`` under a second; "" for a value not saved."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return ""
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds:.2f} s"


def _message_lines(data: dict[str, Any], run: RunRecord) -> list[str]:
    """A model's message (not again when it is the answer shown below), or a user's question."""
    role = data.get("role")
    if role == "assistant":
        text = str(data.get("text")).strip()
        if run.status == "succeeded" and text == run.answer.strip():
            return []
        return [f"  model  {_short(text, 160)}"] if text else []
    if role == "user":
        return _labelled("question", str(data.get("text")))
    return []


def _labelled(label: str, text: str) -> list[str]:
    """``text`` after its label; its further lines behind the gutter, never a line of ours."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    gutter = "  │ " if encoding == "utf8" else "  | "
    first, *rest = text.split("\n") if text else [""]
    return [f"  {label}  {first}", *(gutter + line for line in rest)]


def _short(text: str, limit: int) -> str:
    lines = text.strip().splitlines() or [""]
    first = lines[0] if len(lines[0]) <= limit else lines[0][:limit] + "…"
    more = len(lines) - 1
    return f"{first} [+{more} lines]" if more else first


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _session_json(info: SessionInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "project": info.project,
        "model": info.model,
        "created": info.created,
        "updated": info.updated,
        "runs": info.runs,
        "last_status": info.last_status,
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
        "events": events,
    }
