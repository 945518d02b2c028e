"""The record a figure was found in, as the structure of its read says: what context checks
a figure's label against (``minipi.evidence.context``).

- JSON: the keys on the figure's pointer, and the short text values of the object it is in
  (``{"name": "api", "memory": "2Gi"}``: ``2Gi`` is api's); the *sections* are the keys that
  hold other keys, and the short text values of objects in a list (the names that tell the
  list's records apart).
- Text: the figure's line, the lines it is under (a YAML or Python line's less indented
  parents, an INI or TOML ``[section]``, a Markdown heading of each higher level), and in a
  table (cells split by ``,``, a tab or ``|``) its column's header; the sections are the
  words of every line that some other line is under.

Every read is parsed once (``lru_cache``); reads over ``MAX_LINES`` lines are read for their
line and column only, and parents are looked for at most ``MAX_UP`` lines up.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from minipi.evidence.types import Source
from minipi.reading.words import words

__all__ = [
    "HIT",
    "MAX_LINES",
    "MAX_UP",
    "NO",
    "YES_NO",
    "Record",
    "field_of",
    "fields",
    "file_of",
    "parents_of",
    "record_fields",
    "record_of",
    "section_lines",
    "values",
]

MAX_LINES = 5000
MAX_UP = 400
MAX_FIELD_LINES = 2000
"""The lines of a text read whose fields are compared across reads (``fields``)."""
_CELL = re.compile(r"\s*[,\t|]\s*")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_HEADING = re.compile(r"^(#{1,6})\s")
_BRACKET = re.compile(r"^\s*\[\[?[^\]]+\]\]?\s*$")
_SHORT = 40
YES_NO = frozenset({"true", "false", "yes", "no", "on", "off"})
"""The values of a yes-or-no field (``primary = true``), casefolded."""
NO = frozenset({"false", "no", "off"})


@dataclass(frozen=True, slots=True)
class Record:
    """``own``: the words of the figure's record (its parents included); ``whole``: of the
    whole read; ``sections``: the words that tell the read's records apart."""

    own: frozenset[str]
    whole: frozenset[str]
    sections: frozenset[str]


def record_of(source: Source, output: str) -> Record:
    """The record ``source`` is in (module docstring)."""
    if source.pointer is not None:
        return _json_record(source.pointer, output)
    lines = _lines(output)
    at = output.count("\n", 0, source.range[0])
    if at >= len(lines):
        return Record(frozenset(), _text_words(output), frozenset())
    column = source.range[0] - (output.rfind("\n", 0, source.range[0]) + 1)
    own = words(lines[at]) | _column(lines, at, column)
    if len(lines) > MAX_LINES:
        return Record(own, _text_words(output), frozenset())
    parents = (lines[n] for n in _parents(lines, at))
    own |= words(" ".join(parents))
    return Record(own, _text_words(output), _text_sections(output))


def _json_record(pointer: str, output: str) -> Record:
    keys = [_unescape(k) for k in pointer.split("/")[1:]]
    own = words(" ".join(k for k in keys if not k.isdigit()))
    node = _object_of(pointer, output)  # the object the figure is in: its short texts name it
    if isinstance(node, Mapping):
        own |= words(" ".join(_short_texts(node)))
    whole, sections = _json_words(output)
    return Record(own, whole, sections)


@functools.lru_cache(maxsize=16)
def _document(output: str) -> object:
    try:
        return json.loads(output)
    except (ValueError, RecursionError):
        return None


@functools.lru_cache(maxsize=16)
def _json_words(output: str) -> tuple[frozenset[str], frozenset[str]]:
    """Every key's words, and the sections' words (module docstring)."""
    keys: list[str] = []
    sections: list[str] = []
    stack: list[tuple[object, bool]] = [(_document(output), False)]
    while stack:
        node, listed = stack.pop()
        if isinstance(node, Mapping):
            keys.extend(str(k) for k in node)
            sections.extend(str(k) for k, v in node.items() if isinstance(v, Mapping | list))
            if listed:
                sections.extend(_short_texts(node))
            stack.extend((v, False) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, True) for v in node)
    return words(" ".join(keys)), words(" ".join(sections))


def _short_texts(node: Mapping[object, object]) -> Iterator[str]:
    return (v for v in node.values() if isinstance(v, str) and len(v) <= _SHORT)


@functools.lru_cache(maxsize=16)
def _lines(output: str) -> tuple[str, ...]:
    return tuple(output.splitlines())


@functools.lru_cache(maxsize=16)
def _text_words(output: str) -> frozenset[str]:
    return words(output)


@functools.lru_cache(maxsize=16)
def _text_sections(output: str) -> frozenset[str]:
    """The words of every line some other line is under (``section_lines``)."""
    return words(" ".join(section_lines(output)))


def _parents(lines: tuple[str, ...], at: int) -> list[int]:
    """The lines ``at`` is under: less indented lines above it, the ``[section]`` above it,
    the Markdown heading of each higher level above it (above a heading or a section,
    indentation says nothing more)."""
    found: list[int] = []
    indent, heading = _indent(lines[at]), _level(lines[at])
    bracket = bool(_BRACKET.match(lines[at]))
    for n in range(at - 1, max(-1, at - 1 - MAX_UP), -1):
        line = lines[n]
        if not line.strip():
            continue
        level, section = _level(line), not bracket and bool(_BRACKET.match(line))
        if level < heading or section:
            found.append(n)
            heading, bracket, indent = min(heading, level), bracket or section, 0
        elif _indent(line) < indent:
            found.append(n)
            indent = _indent(line)
    return found


def _level(line: str) -> int:
    """A Markdown heading's level (1-6); 7 for any other line."""
    match = _HEADING.match(line)
    return len(match.group(1)) if match else 7


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _column(lines: tuple[str, ...], at: int, column: int) -> frozenset[str]:
    """In a table (cells split by ``,``, a tab or ``|``), the header's words of the cell at
    ``column`` of line ``at``: the header is the line above a Markdown table's ``|---|`` rule,
    else the first line."""
    header_at = _header(lines, at)
    if at <= header_at or at >= len(lines):
        return frozenset()
    header = _cells(lines[header_at])
    if len(header) < 2 or len(_cells(lines[at])) != len(header):
        return frozenset()
    row = lines[at]
    index = sum(1 for m in _CELL.finditer(row) if m.end() <= column)
    index -= row.lstrip().startswith("|")
    return words(header[index]) if 0 <= index < len(header) else frozenset()


def _header(lines: tuple[str, ...], at: int) -> int:
    """The line number of the header of the table line ``at`` is in."""
    rule = next((n for n in range(at - 1, 0, -1) if _RULE.match(lines[n])), None)
    return 0 if rule is None else rule - 1


def _cells(line: str) -> list[str]:
    return _CELL.split(line.strip().strip("|").strip())


def _unescape(key: str) -> str:
    return key.replace("~1", "/").replace("~0", "~")


_OPENS = re.compile(r"^\s*(?:-\s+)?([A-Za-z_][\w.\-]*)\s*[:=]")
_KEY_LINE = re.compile(r"^\s*(?:[-*]\s+)?([^\W\d][\w.\-]*)\s*[=:：]\s*(\S.*?)\s*$")
"""A ``key: value`` or ``key = value`` line (a list item's too; a key in any script, a
full-width colon as well: ``负责人：李雷``)."""


HIT = re.compile(r"^([^\s:]+\.[A-Za-z0-9]+):\d+:")
"""A search hit's line: ``path.ext:N:`` before the line's text (the file in group 1)."""


def file_of(source: Source, output: str) -> str | None:
    """The file a figure was read from: the source's path when it names a file (a read's
    path, the file a search hit is in: ``Source``), else the file a search hit's line starts
    with (``docs/a.md:3: …``, in a result no tool marked); None when neither says."""
    path = source.path
    if path is not None and "." in path.rstrip("/").rsplit("/", 1)[-1][1:]:
        return path
    start = output.rfind("\n", 0, source.range[0]) + 1
    match = HIT.match(output, start)
    return match.group(1) if match else None


def field_of(source: Source, output: str) -> tuple[str, ...] | None:
    """The field a figure's source is the value of: its JSON pointer's keys (no indexes), or
    a ``key: value`` / ``key = value`` line's key after the keys of the lines it is under
    (a search hit's line: its key alone); None for a figure in running text."""
    if source.pointer is not None:
        keys = [_unescape(k) for k in source.pointer.split("/")[1:]]
        return tuple(k for k in keys if not k.isdigit()) or None
    lines = _lines(output)
    at = output.count("\n", 0, source.range[0])
    if at >= len(lines) or len(lines) > MAX_LINES:
        return None
    hit = HIT.match(lines[at])
    if hit is not None:  # a search hit: its line alone, after the file it names
        match = _KEY_LINE.match(lines[at][hit.end() :])
        return (match.group(1),) if match else None
    return _text_field(lines, at)


def _text_field(lines: tuple[str, ...], at: int) -> tuple[str, ...] | None:
    match = _KEY_LINE.match(lines[at])
    if match is None:
        return None
    keys = [_key(lines[n]) for n in _parents(lines, at)]
    return (*reversed([k for k in keys if k]), match.group(1))


def _key(line: str) -> str | None:
    """The key a parent line opens: ``database:``, ``- name: api``, ``[smtp]``."""
    match = _OPENS.match(line)
    if match is not None:
        return match.group(1)
    return line.strip(" []") if _BRACKET.match(line) else None


def parents_of(output: str, at: int) -> tuple[str, ...]:
    """The lines line ``at`` of a text read is under (``_parents``); none for JSON and for
    reads over ``MAX_LINES`` lines."""
    lines = _lines(output)
    if at >= len(lines) or _document(output) is not None or len(lines) > MAX_LINES:
        return ()
    return tuple(lines[n] for n in _parents(lines, at))


@functools.lru_cache(maxsize=16)
def section_lines(output: str) -> tuple[str, ...]:
    """The lines of a text read some other line is under: a heading, a ``[section]``, a line
    the next line is more indented than; none for JSON and for reads over ``MAX_LINES``."""
    lines = [line for line in _lines(output) if line.strip()]
    if _document(output) is not None or len(lines) > MAX_LINES:
        return ()
    return tuple(
        line
        for n, line in enumerate(lines)
        if _level(line) < 7
        or _BRACKET.match(line)
        or (n + 1 < len(lines) and _indent(lines[n + 1]) > _indent(line))
    )


def record_fields(source: Source, output: str) -> dict[str, str]:
    """The ``key: value`` pairs of the record a figure is in, itself included: the other
    members of its JSON object; the key lines of its text block (the lines beside it at its
    indentation, under the same parent, up to the next list item, ``[section]`` or heading)."""
    if source.pointer is not None:
        return _json_fields(source.pointer, output)
    lines = _lines(output)
    at = output.count("\n", 0, source.range[0])
    if at >= len(lines) or len(lines) > MAX_LINES:
        return {}
    block = dict(_block(lines, at, range(at, max(-1, at - MAX_UP), -1)))
    block.update(_block(lines, at, range(at + 1, min(len(lines), at + MAX_UP))))
    return block


def _json_fields(pointer: str, output: str) -> dict[str, str]:
    node = _object_of(pointer, output)
    if not isinstance(node, Mapping):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in node.items()}


def _object_of(pointer: str, output: str) -> object:
    """What holds the member ``pointer`` points at in the JSON ``output`` (None when the
    pointer leads nowhere)."""
    node: object = _document(output)
    for key in [_unescape(k) for k in pointer.split("/")[1:]][:-1]:
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _block(lines: tuple[str, ...], at: int, span: range) -> Iterator[tuple[str, str]]:
    """The key lines of ``span`` (walking away from ``at``) at ``at``'s indentation, up to
    the edge of its record (a list item's first line, above, is its own)."""
    indent = _indent(lines[at])
    for n in (n for n in span if lines[n].strip()):
        line = lines[n]
        item = line.lstrip().startswith("- ")
        if n != at and _edge(line, indent, item):
            if item and n < at and _indent(line) + 2 == indent:
                yield from _key_value(line)
            return
        if _indent(line) == indent:
            yield from _key_value(line)
        if item and n < at:
            return


def _edge(line: str, indent: int, item: bool) -> bool:
    """A line that ends a record at ``indent``: less indented, a section, a heading, or the
    next list item at the same indentation."""
    less = _indent(line) < indent or bool(_BRACKET.match(line)) or _level(line) < 7
    return less or (item and _indent(line) == indent)


def _key_value(line: str) -> Iterator[tuple[str, str]]:
    match = _KEY_LINE.match(line)
    if match is not None:
        yield match.group(1), match.group(2).strip("\"'")


@functools.lru_cache(maxsize=16)
def fields(output: str) -> dict[tuple[str, ...], frozenset[str]]:
    """Each field of a read (``field_of``'s keys; a comma-separated table's columns, by
    their header) with the values it holds there."""
    found: dict[tuple[str, ...], set[str]] = {}
    document = _document(output)
    if isinstance(document, Mapping | list):
        for keys, value in _leaves(document):
            found.setdefault(keys, set()).add(value)
    else:
        lines = _lines(output)
        for at, line in enumerate(lines[:MAX_FIELD_LINES]):
            match = _KEY_LINE.match(line)
            key = _text_field(lines, at) if match else None
            if match and key:
                found.setdefault(key, set()).add(match.group(2).strip("\"'"))
        for column, value in _columns(lines[:MAX_FIELD_LINES]):
            found.setdefault((column,), set()).add(value)
    return {k: frozenset(v) for k, v in found.items()}


@functools.lru_cache(maxsize=16)
def values(output: str) -> frozenset[str]:
    """The values a read gives its fields (``fields``) and the cells of its tables (lines of
    two cells or more split by ``,``, a tab or ``|``; not a header row, which names fields):
    what an answer may state by name."""
    found = {value for held in fields(output).values() for value in held}
    lines = _lines(output)[:MAX_FIELD_LINES]
    rows = [n for n, line in enumerate(lines) if len(_cells(line)) >= 2]
    ruled = {n - 1 for n, line in enumerate(lines) if n and _RULE.match(line)}
    headers = ruled or set(rows[:1])  # a Markdown table's header, else a CSV's first row
    for n in rows:
        if n not in headers and not _RULE.match(lines[n]):
            found.update(cell.strip() for cell in _cells(lines[n]))
    return frozenset(found)


def _columns(lines: Sequence[str]) -> Iterator[tuple[str, str]]:
    """A comma-separated table's columns: the header's names with each row's cells."""
    rows = [line.split(",") for line in lines if line.count(",") >= 1]
    if len(rows) < 2 or not all(re.fullmatch(r"[^\W\d][\w ]*", c.strip()) for c in rows[0]):
        return
    width = len(rows[0])
    for row in rows[1:]:
        if len(row) == width:
            yield from zip((c.strip() for c in rows[0]), (c.strip() for c in row), strict=True)


def _leaves(document: object) -> Iterator[tuple[tuple[str, ...], str]]:
    stack: list[tuple[tuple[str, ...], object]] = [((), document)]
    while stack:
        keys, node = stack.pop()
        if isinstance(node, Mapping):
            stack.extend(((*keys, str(k)), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((keys, v) for v in node)
        elif keys and node is not None:
            yield keys, node if isinstance(node, str) else json.dumps(node)
