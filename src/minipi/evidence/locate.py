"""Locators: a hit as a ``Source`` (``Locator``), with its 1-based line and column and the
RFC 6901 JSON Pointer of its position when the output is JSON.

A source names the file a reader would open to check the figure: a hit in a region of a
result that names a file (a search hit's line, a listed entry, a moved path) is that file's,
at the line the result gives for it, if any (``sources.Output.named_at``); a hit in a read is
the read file's, at its line and column; a change a tool made is the file it changed
(``change_source``: a move's old path, and ``to`` its new one).

A pointer is found without parsing the whole document into objects we keep: from the top,
the children of each container on the way are delimited with the stdlib's C scanner
(``JSONDecoder.scan_once``) and the one holding the position is entered. A document cut
short (``read_file`` with ``limit``) still gives the pointers of what precedes the cut. A
member whose name comes again later in its object (a duplicate key: ``json.loads`` keeps the
last) has no pointer: ``/revenue`` would name the other value.

Cost (a 20 KB report with a ``rows`` array is typical): the top level is delimited whole, each
member scanned to its end, which parses the document once and decides whether it has pointers
at all (a break anywhere but at a cut makes none). Inside a member that scanned, the JSON is
known to be valid up to any cut, so deeper containers are delimited lazily, only as far as the
positions asked for, and a flat child (an object or array holding no container, no escape) is
stepped over with ``str.find`` of its closing bracket instead of being parsed. What has been
delimited is kept, so the next pointer into the same document (an ``ambiguous`` figure has up
to ten) costs a bisection per level. The result is the same as delimiting every level whole
(``tests/test_evidence_locate.py`` checks both ways).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, replace
from json.scanner import make_scanner
from typing import Any, cast

from minipi.evidence.match import Hit
from minipi.evidence.sources import Output
from minipi.evidence.types import Origin, Source

__all__ = [
    "JsonIndex",
    "Locator",
    "change_source",
    "json_pointer",
    "line_column",
    "looks_like_json",
    "whole_pointer",
]

_WS = re.compile(r"[ \t\n\r]*")
_SCAN = make_scanner(cast(Any, json.JSONDecoder()))  # typeshed wants the C type; any decoder works


def line_column(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column (in code points) of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def looks_like_json(text: str) -> bool:
    """Whether ``text`` starts like a JSON object or array (the only JSON we point into)."""
    start = _skip(text, 0)
    return start < len(text) and text[start] in "{["


def json_pointer(text: str, offset: int) -> str | None:
    """The pointer of the innermost member or element of ``text`` that holds ``offset`` (a
    position in a member's name gives that member), or None when the JSON breaks before it."""
    return JsonIndex(text).pointer(offset)


def _skip(text: str, pos: int) -> int:
    blank = _WS.match(text, pos)
    return blank.end() if blank else pos


def _value_end(text: str, start: int) -> int:
    """Where the value at ``start`` ends; the end of ``text`` when the text stops inside it
    (cut short). Raises ``ValueError`` when it is not JSON."""
    try:
        return int(_SCAN(text, start)[1])
    except StopIteration as stop:
        failed_at = int(stop.value)
    except json.JSONDecodeError as error:
        if error.msg.startswith("Unterminated string"):
            return len(text)  # no closing quote up to the end: cut inside a string
        failed_at = error.pos
    if failed_at >= len(text.rstrip()):
        return len(text)
    raise ValueError(f"not JSON at {failed_at}")


def _name(text: str, pos: int) -> tuple[str, int] | None:
    """A member's name and where it ends; None when the text is cut inside it."""
    try:
        name, after = _SCAN(text, pos)
    except json.JSONDecodeError as error:
        if error.msg.startswith("Unterminated string"):
            return None
        raise ValueError(f"not JSON at {error.pos}") from error
    return str(name), int(after)


@dataclass(frozen=True, slots=True)
class _Children:
    """A container's members or elements: each one's token, name start, value start and end."""

    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    values: tuple[int, ...]
    ends: tuple[int, ...]


class JsonIndex:
    """Pointers into one JSON text, remembering the containers it has delimited."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._top: _Children | None = None
        self._top_done = False
        self._lazy: dict[int, _Lazy] = {}

    def pointer(self, offset: int) -> str | None:
        """See ``json_pointer``."""
        text = self.text
        pos = _skip(text, 0)
        if pos >= len(text) or text[pos] not in "{[":
            return ""
        top = self._delimit_top(pos)
        if top is None:
            return None
        index = _child(top, offset, text[pos])
        if index is None:
            return None
        tokens = [top.tokens[index]]
        if offset >= top.values[index]:
            try:
                if not self._descend(top.values[index], offset, tokens):
                    return None
            except RecursionError:
                return whole_pointer(text, offset)  # absurdly deep: the plain way decides
        return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)

    def _descend(self, pos: int, offset: int, tokens: list[str]) -> bool:
        """Append the tokens from the value at ``pos`` down to ``offset``; False: none holds it."""
        text = self.text
        while pos < len(text) and text[pos] in "{[":
            lazy = self._lazy.get(pos)
            if lazy is None:
                lazy = self._lazy[pos] = _Lazy(text, pos)
            child = lazy.child_at(offset)
            if child is None:
                return False
            token, value = child
            tokens.append(token)
            if offset < value:
                break  # in a member's name
            pos = value
        return True

    def _delimit_top(self, pos: int) -> _Children | None:
        if not self._top_done:
            self._top_done = True
            try:
                self._top = _members(self.text, pos)
            except (ValueError, IndexError, StopIteration, RecursionError):
                self._top = None  # broken (or absurdly deep) JSON: no pointer
        return self._top


class _Lazy:
    """The children of a container inside a member that scanned (so valid up to any cut),
    delimited in order as far as asked. The same children as ``_members`` finds."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.is_object = text[pos] == "{"
        self.tokens: list[str] = []
        self.starts: list[int] = []
        self.values: list[int] = []
        self.ends: list[int] = []
        self.pos = _skip(text, pos + 1)  # where the next child starts
        self.done = False

    def child_at(self, offset: int) -> tuple[str, int] | None:
        """(token, value start) of the child whose span holds ``offset``, or None (also for a
        member the parser drops: its name comes again later)."""
        index = self._index(offset)
        if index is None:
            return None
        if self.is_object:
            while not self.done and self._next():
                pass
            if self.tokens[index] in self.tokens[index + 1 :]:
                return None
        return self.tokens[index], self.values[index]

    def _index(self, offset: int) -> int | None:
        index = bisect.bisect_right(self.starts, offset) - 1
        if index >= 0 and offset < self.ends[index]:
            return index
        if index < len(self.starts) - 1:
            return None  # before the first child, or between two
        while not self.done and self.pos <= offset and self._next():
            if offset < self.ends[-1]:
                return len(self.starts) - 1
        return None

    def _next(self) -> bool:
        """Delimit the next child; False when there is none."""
        text = self.text
        pos = start = self.pos
        if pos >= len(text) or text[pos] in "}]":
            self.done = True
            return False
        if self.is_object:
            named = _name(text, pos)
            if named is None:
                self.done = True
                return False
            token, after = named
            pos = _skip(text, _skip(text, after) + 1)
        else:
            token = str(len(self.tokens))
        end = self._value_end(pos)
        self.tokens.append(token)
        self.starts.append(start)
        self.values.append(pos)
        self.ends.append(end)
        pos = _skip(text, end)
        if pos >= len(text) or text[pos] != ",":
            self.done = True
        self.pos = _skip(text, pos + 1)
        return True

    def _value_end(self, pos: int) -> int:
        """Where the value at ``pos`` ends: a flat container's closing bracket is the first one
        after it outside a string (valid JSON, no escapes); anything else is scanned."""
        text = self.text
        if pos < len(text) and text[pos] in "{[":
            close = text.find("}" if text[pos] == "{" else "]", pos)
            if close > 0 and _flat(text, pos + 1, close):
                return close + 1
        return _value_end(text, pos)


def _flat(text: str, start: int, close: int) -> bool:
    """No container, escape or unclosed string between ``start`` and ``close``."""
    return (
        text.find("{", start, close) < 0
        and text.find("[", start, close) < 0
        and text.find("\\", start, close) < 0
        and text.count('"', start, close) % 2 == 0
    )


def whole_pointer(text: str, offset: int) -> str | None:
    """``json_pointer`` the plain way: every container on the way delimited whole. The
    reference ``JsonIndex`` must agree with (and the fallback for absurdly deep JSON)."""
    pos = _skip(text, 0)
    tokens: list[str] = []
    while pos < len(text) and text[pos] in "{[":
        try:
            children = _members(text, pos)
        except (ValueError, IndexError, StopIteration, RecursionError):
            return None
        index = _child(children, offset, text[pos])
        if index is None:
            return None
        tokens.append(children.tokens[index])
        if offset < children.values[index]:
            break
        pos = children.values[index]
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def _child(children: _Children, offset: int, bracket: str) -> int | None:
    """The index of the child that holds ``offset``, or None; None too for a member a JSON
    parser drops (its name comes again later: the parser keeps the last)."""
    index = bisect.bisect_right(children.starts, offset) - 1
    if index < 0 or offset >= children.ends[index]:
        return None
    if bracket == "{" and children.tokens[index] in children.tokens[index + 1 :]:
        return None
    return index


def _members(text: str, pos: int) -> _Children:
    """Delimit the children of the object or array at ``pos`` (up to a cut, if any)."""
    is_object = text[pos] == "{"
    tokens: list[str] = []
    starts: list[int] = []
    values: list[int] = []
    ends: list[int] = []
    pos = _skip(text, pos + 1)
    while pos < len(text) and text[pos] not in "}]":
        start = pos
        if is_object:
            named = _name(text, pos)
            if named is None:
                break
            tokens.append(named[0])
            pos = _skip(text, _skip(text, named[1]) + 1)
        else:
            tokens.append(str(len(tokens)))
        end = _value_end(text, pos)
        starts.append(start)
        values.append(pos)
        ends.append(end)
        pos = _skip(text, end)
        if pos >= len(text) or text[pos] != ",":
            break
        pos = _skip(text, pos + 1)
    return _Children(tuple(tokens), tuple(starts), tuple(values), tuple(ends))


class Locator:
    """Sources with their locators, for one run: the JSON index of an output is made the
    first time a pointer into it is asked for, and kept for the next one; so are the line
    numbers found, so that the next one counts line breaks from the nearest known place
    instead of from the start of a megabyte."""

    def __init__(self) -> None:
        self._indexes: dict[int, JsonIndex | None] = {}
        self._lines: dict[int, tuple[list[int], list[int]]] = {}

    def line_column(self, output: Output, offset: int) -> tuple[int, int]:
        """``line_column(output.text, offset)``, counted from the nearest offset known."""
        offsets, lines = self._lines.setdefault(id(output), ([0], [1]))
        index = bisect.bisect_right(offsets, offset) - 1
        text = output.text
        line = lines[index] + text.count("\n", offsets[index], offset)
        offsets.insert(index + 1, offset)
        lines.insert(index + 1, line)
        return line, offset - (text.rfind("\n", 0, offset) + 1) + 1

    def pointer(self, output: Output, offset: int) -> str | None:
        key = id(output)
        if key not in self._indexes:
            document = output.document
            json_like = document is not None and looks_like_json(document)
            self._indexes[key] = JsonIndex(document) if document and json_like else None
        index = self._indexes[key]
        return index.pointer(offset) if index is not None else None

    def source(self, output: Output, hit: Hit, origin: Origin) -> Source:
        """The source of ``hit``, named by the file a reader would open to check it: the
        file its region names (a search hit's file and line; a listed, found or moved path,
        no line), else the call's ``path`` and the line in the output
        (``minipi.evidence.sources``)."""
        named = output.named_at(hit.start)
        if named is not None:
            return _source(output, hit, origin, named.path, named.line, None, None)
        line, column = self.line_column(output, hit.start)
        line += output.first_line - 1  # the file's line when read_file started at an offset
        pointer = self.pointer(output, hit.start) if origin == "content" else None
        return _source(output, hit, origin, output.path, line, column, pointer)


def _source(
    output: Output,
    hit: Hit,
    origin: Origin,
    path: str | None,
    line: int | None,
    column: int | None,
    pointer: str | None,
) -> Source:
    return Source(
        call_id=output.call_id,
        tool=output.tool,
        path=path,
        origin=origin,
        pointer=pointer,
        line=line,
        column=column,
        range=(hit.start, hit.end),
        text=output.text[hit.start : hit.end],
        question=output.question,
    )


def change_source(output: Output) -> Source:
    """The source of a change a tool made (``sources.Change``), named by the file it changed:
    the first path its result shows, and ``to`` the last when it shows two or more (a move's
    old and new path: ``moved inbox/a.txt -> archive/a.txt``); no line (a change is no place
    in a file), its ``range`` the whole result."""
    names = [output.named_at(start) for start, _, origin in output.regions if origin == "path"]
    paths = [named.path for named in names if named is not None]
    whole = Hit(0, len(output.text), "exact")
    source = _source(output, whole, "content", paths[0] if paths else output.path, None, None, None)
    return replace(source, to=paths[-1]) if len(paths) > 1 else source
