"""The task file: one JSON object per line, ``{"id", "question", "project", "expect"?,
"max_turns"?, "schema"?}`` (``schema``: the answer as JSON of that shape, each field traced:
a JSON Schema object, or text as ``minipi ask --schema`` takes it).

    tasks, problems = load_tasks(Path("tasks.jsonl"))
    for problem in problems:
        print(problem)          # "tasks.jsonl:7: no "question": ..." (the rest still run)

A line that cannot be a task (not JSON, nested too deep, not UTF-8, a missing or wrong
field, an id seen before or too long for a file name) is a ``LineProblem`` naming its line
number; the other lines are still tasks. ``counted`` says them the way a person can read:
the same error on many lines is said for the first few, then counted. Blank lines and lines
starting with ``#`` are skipped. A relative ``project`` is taken from the task file's
directory, so a task file and its projects can move together.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_ID_CHARS", "LineProblem", "Task", "counted", "load_tasks", "parse_task"]

MAX_ID_CHARS = 128
MAX_NAME_BYTES = 255
"""The longest file name (in bytes) of Linux's file systems: ``ID.json`` must fit."""
_FIELDS = frozenset({"id", "question", "project", "expect", "max_turns", "schema"})


@dataclass(frozen=True)
class Task:
    """One question about one project."""

    id: str
    """Unique in the file; names ``DIR/traces/ID.json`` (letters, digits, ``.``, ``_``, ``-``)."""
    question: str
    project: Path
    """The project root (absolute)."""
    expect: tuple[str, ...] | None = None
    """Strings the answer must hold for the task to count as ``correct`` (None: not judged)."""
    max_turns: int | None = None
    """This task's model-request budget (None: the batch's ``--max-turns``)."""
    schema: str | None = None
    """The shape of a structured answer, as JSON text or ``--schema``'s text (None: prose)."""

    @property
    def digest(self) -> str:
        """A short hash of what the task asks (a resumed batch notices a changed task)."""
        expect = list(self.expect) if self.expect is not None else None
        data: list[Any] = [self.question, str(self.project), expect, self.max_turns]
        data += [self.schema] if self.schema is not None else []  # older digests unchanged
        text = json.dumps(data, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def judge(self, answer: str) -> bool | None:
        """Whether ``answer`` holds every expected string (None when nothing is expected)."""
        if self.expect is None:
            return None
        return bool(answer) and all(text in answer for text in self.expect)


@dataclass(frozen=True)
class LineProblem:
    """A line of the task file that is not a task, and why."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def counted(problems: Sequence[LineProblem], prefix: str = "", shown: int = 3) -> list[str]:
    """Each problem as a line (``prefix`` before it), but of those with the same message
    only the first ``shown``, then ``... and N more lines with the same error``: a file of
    100,000 lines with one misspelled field says so in four lines, not 100,000."""
    alike: dict[str, list[LineProblem]] = {}
    for problem in problems:
        alike.setdefault(problem.message, []).append(problem)
    lines: list[str] = []
    for same in alike.values():
        lines += [f"{prefix}{problem}" for problem in same[:shown]]
        if len(same) > shown:
            more = len(same) - shown
            lines.append(f"... and {more} more line{'s' if more > 1 else ''} with the same error")
    return lines


class _Bad(Exception):
    """A field that makes a line unusable (its message says how to fix it)."""


def load_tasks(path: Path) -> tuple[list[Task], list[LineProblem]]:
    """The tasks of ``path`` in file order and the lines that are not tasks.

    Raises ``OSError`` when the file cannot be read at all (the caller says so)."""
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        lines = handle.read().splitlines()
    return _parse_lines(path, lines)


def _parse_lines(path: Path, lines: Iterable[str]) -> tuple[list[Task], list[LineProblem]]:
    base = path.resolve().parent
    tasks: list[Task] = []
    problems: list[LineProblem] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            task = parse_task(line, base)
            if task.id in seen:
                raise _Bad(f"id {task.id!r} was already used on line {seen[task.id]}")
        except _Bad as bad:
            problems.append(LineProblem(path, number, str(bad)))
            continue
        seen[task.id] = number
        tasks.append(task)
    return tasks, problems


def parse_task(line: str, base: Path) -> Task:
    """One line as a ``Task`` (relative projects from ``base``); ``_Bad`` says why not."""
    try:
        data: Any = json.loads(line)
    except RecursionError:
        raise _Bad("nested too deep to be a task; write one flat JSON object per line") from None
    except ValueError as error:
        raise _Bad(f"not JSON ({error}); write one JSON object per line") from None
    if not isinstance(data, dict):
        raise _Bad('not a JSON object; write {"id": ..., "question": ..., "project": ...}')
    if _has_surrogate(json.dumps(data, ensure_ascii=False)):  # a bad byte, or "\ud800"
        raise _Bad(_NOT_UTF8)
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise _Bad(f"unknown field {unknown[0]!r}; a task has {', '.join(sorted(_FIELDS))}")
    return Task(
        id=_task_id(data.get("id")),
        question=_text(data, "question"),
        project=base / _text(data, "project"),
        expect=_expect(data.get("expect")),
        max_turns=_max_turns(data.get("max_turns")),
        schema=_schema(data.get("schema")),
    )


_NOT_UTF8 = "holds text that is not UTF-8 (a bad byte, or a lone surrogate); fix the line"


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _task_id(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise _Bad('no "id": give each task a unique string id')
    if not _names_a_file(value):
        raise _Bad(
            f"id {value[:40]!r} cannot name a trace file: use up to {MAX_ID_CHARS} letters, "
            f"digits, '.', '_' or '-' ({MAX_NAME_BYTES - 5} bytes in UTF-8), not starting "
            "with '.'"
        )
    return value


def _names_a_file(value: str) -> bool:
    """Whether ``ID.json`` is a plain file name of at most 255 bytes (CJK: 3 a character)."""
    usable = all(c.isalnum() or c in "._-" for c in value) and not value.startswith(".")
    fits = len(value) <= MAX_ID_CHARS and len(f"{value}.json".encode()) <= MAX_NAME_BYTES
    return usable and fits


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f'no "{key}": give it as a non-empty string')
    if "\x00" in value:
        raise _Bad(f'"{key}" holds a NUL character')
    return value.strip()


def _expect(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _Bad('"expect" must be a list of non-empty strings the answer must hold')
    return tuple(value)


def _max_turns(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise _Bad('"max_turns" must be a whole number from 1 to 100000')
    return value


def _schema(value: Any) -> str | None:
    """The task's shape as text ``shape_of`` reads (checked now: a bad one is this line's)."""
    if value is None:
        return None
    if not isinstance(value, (str, dict)):
        raise _Bad('"schema" must be a JSON Schema object or text such as "date, orders:int"')
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    from minipi.errors import ConfigError
    from minipi.structured import shape_of

    try:
        shape_of(text)
    except ConfigError as error:
        said = error.message.removeprefix("schema: ")
        raise _Bad(f'"schema": {said}') from None
    return text
