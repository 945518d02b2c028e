"""Locators: 1-based line and column, and the RFC 6901 JSON Pointer of a position in JSON.

A pointer is found without parsing the whole document into objects we keep: from the top,
the children of each container on the way are delimited with the stdlib's C scanner
(``JSONDecoder.scan_once``) and the one holding the position is entered. The children found
are kept, so the next pointer into the same document (an ``ambiguous`` figure has up to ten)
costs a bisection per level. A document cut short (``read_file`` with ``limit``) still gives
the pointers of what precedes the cut.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from json.scanner import make_scanner
from typing import Any, cast

__all__ = ["JsonIndex", "json_pointer", "line_column", "looks_like_json"]

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
        failed_at = error.pos
    if failed_at >= len(text.rstrip()):
        return len(text)
    raise ValueError(f"not JSON at {failed_at}")


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
        self._children: dict[int, _Children | None] = {}

    def pointer(self, offset: int) -> str | None:
        """See ``json_pointer``."""
        text = self.text
        pos = _skip(text, 0)
        tokens: list[str] = []
        while pos < len(text) and text[pos] in "{[":
            children = self._delimit(pos)
            if children is None:
                return None
            index = bisect.bisect_right(children.starts, offset) - 1
            if index < 0 or offset >= children.ends[index]:
                return None
            tokens.append(children.tokens[index])
            if offset < children.values[index]:
                break  # in a member's name
            pos = children.values[index]
        return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)

    def _delimit(self, pos: int) -> _Children | None:
        if pos not in self._children:
            try:
                self._children[pos] = _members(self.text, pos)
            except (ValueError, IndexError, StopIteration, RecursionError):
                self._children[pos] = None  # broken (or absurdly deep) JSON: no pointer
        return self._children[pos]


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
            name, after = _SCAN(text, pos)
            tokens.append(str(name))
            pos = _skip(text, _skip(text, after) + 1)
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
