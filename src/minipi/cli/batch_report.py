"""A batch directory read back: ``minipi batch report DIR --html FILE`` and ``batch show DIR``.

The report is a page: the totals of ``summary.json`` on top, a breakdown by status, then a
table of every task (id, status, end code, correct, traced / unsupported figures, turns,
seconds, the answer's first line), sortable by a click on a heading; each task's row opens
its transcript, a page of its own made from its trace (``FILE``'s folder, ``STEM.tasks/``),
as ``minipi sessions export`` makes one. ``show`` prints the same table on the terminal, in id
order, its columns fitted to the width. Nothing in DIR is changed (no lock is taken: a batch
may be running there).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from minipi.batch.checked import load_json
from minipi.batch.records import Record, parse_record
from minipi.batch.summary import check_summary
from minipi.batch.tasks import LineProblem, counted
from minipi.cli.terminal import columns, pad, safe
from minipi.errors import ConfigError

__all__ = ["BatchView", "href", "read_batch", "report_batch", "show_batch"]

_MAX_TASK_FILE = 256 * 1024 * 1024
"""The largest task file a report reads the questions of tasks without a trace from."""
_HEAD = ("id", "status", "code", "correct", "traced", "unsup", "turns", "secs", "answer")
"""The terminal's headings (the page says ``unsupported`` and ``seconds``)."""


@dataclass(frozen=True)
class BatchView:
    """What a batch directory holds: its records in id order and its summary."""

    path: Path
    records: list[Record]
    summary: dict[str, Any]


def read_batch(path: Path) -> BatchView:
    """The records of ``path/results.jsonl`` (the last line of an id wins) and
    ``summary.json`` (empty if none). A line that is not a record is skipped, and said on
    stderr with its line number (the same error on many lines: counted); so is a summary
    that is not one. A last line without its newline is one being written, or cut by a
    crash: skipped, as a resumed batch cuts it off."""
    results = path / "results.jsonl"
    try:
        data = results.read_bytes()
    except OSError as error:
        raise ConfigError(
            f"{results}: {error.strerror}: give the directory a `minipi batch ... --out DIR` wrote",
            code="batch_not_found",
        ) from None
    records, problems = _records(results, data)
    for line in counted(problems, "skipped "):
        click.echo(safe(f"minipi batch: {line}"), err=True)
    ordered = [records[key] for key in sorted(records)]
    return BatchView(path, ordered, _summary(path / "summary.json"))


def _records(results: Path, data: bytes) -> tuple[dict[str, Record], list[LineProblem]]:
    records: dict[str, Record] = {}
    problems: list[LineProblem] = []
    whole = data[: data.rfind(b"\n") + 1]
    for number, line in enumerate(whole.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_record(line)
        except ValueError as error:
            problems.append(LineProblem(results, number, f"not a result ({error})"))
            continue
        records[record.id] = record
    return records, problems


def _summary(target: Path) -> dict[str, Any]:
    """``summary.json`` when it is one; else empty, said on stderr unless there is none."""
    try:
        return check_summary(load_json(target.read_bytes()))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        why = error.strerror if isinstance(error, OSError) else str(error)
        click.echo(
            safe(
                f"minipi batch: {target} is not a batch summary ({why}): its totals "
                "are not shown; run the batch again to write it"
            ),
            err=True,
        )
        return {}


def cells(record: Record) -> list[str]:
    """A task's row, as text."""
    evidence = record.evidence or {}
    correct = "" if record.correct is None else ("yes" if record.correct else "no")
    answer = (record.answer or record.error or "").strip().split("\n", 1)[0]
    return [
        record.id,
        record.shown_status,
        record.code or "",
        correct,
        str(evidence.get("supported", "")),
        str(evidence.get("unsupported", "")),
        str(record.turns),
        f"{record.seconds:.2f}",
        answer,
    ]


def show_batch(path: Path, width: int | None = None) -> int:
    """The table on stdout, in id order, fitted to ``width`` (the terminal's by default)."""
    view = read_batch(path)
    from minipi.batch.summary import summary_lines

    if view.summary:
        click.echo(safe("\n".join(summary_lines(view.summary))))
        click.echo("  (traced: succeeded answers whose every figure a tool result holds)")
    if not view.records:
        click.echo(f"no finished task in {path}", err=True)
        return 0
    rows = [list(_HEAD), *([_one_line(c) for c in cells(r)] for r in view.records)]
    from minipi.cli.render import colour_allowed

    colours = [_ANSI[_tone(r)] for r in view.records] if colour_allowed(sys.stdout) else []
    _table(rows, width or shutil.get_terminal_size((120, 24)).columns, colours)
    return 0


_ANSI = {"ok": "32", "warn": "33", "err": "31", "mute": "2"}
"""``transcript.tone``'s colours on a terminal: green, yellow, red, dim."""


def _tone(record: Record) -> str:
    from minipi.cli.transcript import saved_verdict, tone

    return tone(record.status, saved_verdict(record.verdict))


def _table(rows: list[list[str]], width: int, colours: Sequence[str] = ()) -> None:
    """``rows`` in padded columns, the last one (the answer) cut to what is left of
    ``width``, or left out when too little is; each task's status cell in its colour from
    ``colours`` (none: plain)."""
    widths = [max(columns(row[i]) for row in rows) for i in range(len(_HEAD) - 1)]
    room = width - sum(widths) - 2 * len(widths)
    for number, row in enumerate(rows):
        head = [pad(cell, widths[i]) for i, cell in enumerate(row[:-1])]
        if number and colours:  # not the heading
            head[1] = f"\x1b[{colours[number - 1]}m{head[1]}\x1b[0m"
        answer = [_fit(row[-1], room)] if room >= 8 else []  # no room: no answer column
        click.echo("  ".join([*head, *answer]).rstrip())


def _one_line(text: str) -> str:
    return safe(text.replace("\r", " ").replace("\n", " "))


def _fit(text: str, room: int) -> str:
    """``text`` in at most ``room`` columns (an ellipsis says it was cut)."""
    if columns(text) <= room:
        return text
    out, used = [], 0
    for char in text:
        used += columns(char)
        if used > room - 1:
            break
        out.append(char)
    return "".join(out) + "…"


def report_batch(path: Path, html: Path) -> int:
    """Write the report page ``html`` and one transcript page per task beside it."""
    from minipi.cli.batch_page import batch_page, task_page

    view = read_batch(path)
    folder = html.with_name(html.stem + ".tasks")
    os.makedirs(folder, exist_ok=True)
    links: dict[str, str] = {}
    asked = _questions(view)
    for number, record in enumerate(view.records, start=1):
        trace = _trace(view.path, record)
        name = f"{number:05d}.html"
        question = asked.get((record.id, record.task), "")
        _write(folder / name, task_page(record, trace, href("..", html.name), question))
        links[record.id] = href(".", folder.name, name)
    _write(html, batch_page(view, links, _statuses(view.records)))
    click.echo(safe(f"wrote {html} ({len(view.records)} tasks; their pages in {folder})"), err=True)
    return 0


def href(*parts: str) -> str:
    """The relative URL of the path ``parts`` (``.``, ``..`` or names): each name
    percent-encoded, its bytes as the file system has them, so that no name is read as
    something else: ``a:b.html`` as a URL of the scheme ``a``, a ``#`` or ``?`` as the end
    of the path, a ``%`` as an escape."""
    return "/".join(p if p in (".", "..") else quote(os.fsencode(p), safe="") for p in parts)


def _statuses(records: Sequence[Record]) -> list[tuple[str, int]]:
    counted = Counter(r.status if r.code is None else f"{r.status}/{r.code}" for r in records)
    return counted.most_common()


def _questions(view: BatchView) -> dict[tuple[str, str], str]:
    """The question of each task of the batch's task file (``batch.json`` names it), by id
    and digest: what the page of a task without a trace (its project was refused) shows. A
    task changed since it ran (another digest) is not the one its record is of."""
    if not any(record.trace is None for record in view.records):
        return {}
    from minipi.batch.tasks import load_tasks

    try:
        config = load_json((view.path / "batch.json").read_bytes())
        named = config.get("tasks_file") if isinstance(config, dict) else None
        if not isinstance(named, str) or not _plain_file(Path(named)):
            return {}
        tasks, _ = load_tasks(Path(named))
    except (OSError, ValueError):
        return {}
    return {(task.id, task.digest): task.question for task in tasks}


def _plain_file(path: Path) -> bool:
    """A regular file of at most ``_MAX_TASK_FILE`` bytes (``batch.json`` is data: never a
    device or a pipe that reads forever)."""
    try:
        found = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size <= _MAX_TASK_FILE


def _trace(path: Path, record: Record) -> dict[str, Any] | None:
    """The task's trace, or None (a task that never ran its loop has none)."""
    if record.trace is None:
        return None
    target = (path / record.trace).resolve()
    if path.resolve() not in target.parents:  # a record is data: never read outside DIR
        return None
    try:
        data = load_json(target.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, body: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as out:
            out.write(body)
    except OSError as error:
        raise ConfigError(f"cannot write {path}: {error.strerror}; choose another file") from None
