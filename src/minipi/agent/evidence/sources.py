"""This run's tool results as sources: which parts of each output are content, which are paths.

The run is what follows the last user message of the history (earlier turns of a chat are
other runs). Each result that is not an error is a source, with its call's tool name and
arguments. How an output is read depends on the tool that made it (minipi's file tools,
``minipi.files.tools``): ``read_file`` is the file's text, then notice lines
(``[truncated: …]``, ``[note: …]``) that are not content; every line of an output whose
``details["output"]`` is ``"paths"`` (the file tools' listings and moves) is a path;
``search_files`` lines are ``path:line: text``, the text being content; the output of any
other tool is content as a whole.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minipi.agent.evidence.types import Origin
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message

__all__ = ["Output", "PathArgument", "RunSources", "collect_sources"]

_NOTICE = re.compile(r"\[(?:truncated|note|not searched|search stopped)[^\n]*\]")
_EMPTY_FILE = re.compile(r"\(empty file, \d+ bytes\)")
_SEARCH_LINE = re.compile(r'("(?:[^"\\\n]|\\.)*"|[^\n]*?):(\d+): ')

Region = tuple[int, int, Origin]


@dataclass(frozen=True, slots=True)
class Output:
    """One tool result: ``regions`` (sorted, disjoint) say what is content and what is a
    path; text outside every region (notices, line numbers) is neither."""

    call_id: str
    tool: str | None
    arguments: Mapping[str, Any]
    path: str | None
    identity: str
    """What makes two results the same place: the path read, else the tool and arguments."""
    text: str
    regions: tuple[Region, ...]
    first_line: int = 1
    """The file's line number of the output's first line (``read_file`` with ``offset``)."""
    _starts: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @property
    def document(self) -> str | None:
        """The text a JSON Pointer points into: the output when it is content from its first
        character (a ``read_file`` result: up to its notice lines), else None."""
        if not self.regions or self.regions[0][0] != 0 or self.regions[0][2] != "content":
            return None
        return self.text[: self.regions[0][1]]

    def origin_at(self, start: int) -> Origin | None:
        """``content``, ``path`` or None for the text at ``start``."""
        index = bisect.bisect_right(self._starts, start) - 1
        if index < 0:
            return None
        region_start, region_end, origin = self.regions[index]
        return origin if region_start <= start < region_end else None


@dataclass(frozen=True, slots=True)
class PathArgument:
    """A call's ``path`` argument, whose result was not an error: a source of origin ``path``."""

    call_id: str
    tool: str | None
    path: str


@dataclass(frozen=True, slots=True)
class RunSources:
    """What one run's answer may be traced to."""

    question: str | None
    outputs: tuple[Output, ...]
    path_arguments: tuple[PathArgument, ...]

    @property
    def tool_results(self) -> int:
        return len(self.outputs)


def collect_sources(items: Sequence[Item]) -> RunSources:
    """The sources of the run that ends ``items``: its tool results that are not errors."""
    start = _last_user(items)
    question = None
    if start >= 0:
        message = items[start]
        assert isinstance(message, Message)
        question = message.text
    run = items[start + 1 :]
    calls = {item.call_id: item for item in run if isinstance(item, FunctionCall)}
    outputs: list[Output] = []
    arguments: list[PathArgument] = []
    for item in run:
        if isinstance(item, FunctionCallOutput) and not item.is_error:
            output = _output(item, calls.get(item.call_id))
            outputs.append(output)
            if output.path is not None:
                arguments.append(PathArgument(output.call_id, output.tool, output.path))
    return RunSources(question, tuple(outputs), tuple(arguments))


def _last_user(items: Sequence[Item]) -> int:
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, Message) and item.role == "user":
            return index
    return -1


def _output(item: FunctionCallOutput, call: FunctionCall | None) -> Output:
    tool = call.name if call else None
    arguments = _arguments(call)
    path = arguments.get("path")
    path = path if isinstance(path, str) else None
    identity = path if path is not None else json.dumps(arguments, sort_keys=True)
    # The tool says its output is one path a line with details["output"] == "paths"
    # (``FunctionCallOutput.details``: read with getattr, as results without it exist).
    paths = getattr(item, "details", {}).get("output") == "paths"
    regions = tuple(_regions("paths" if paths else tool, item.output))
    return Output(
        call_id=item.call_id,
        tool=tool,
        arguments=arguments,
        path=path,
        identity=f"{tool}\x00{identity}",
        text=item.output,
        regions=regions,
        first_line=_first_line(tool, arguments),
        _starts=tuple(r[0] for r in regions),
    )


def _first_line(tool: str | None, arguments: Mapping[str, Any]) -> int:
    offset = arguments.get("offset")
    if tool != "read_file" or not isinstance(offset, int) or isinstance(offset, bool):
        return 1
    return max(offset, 1)


def _arguments(call: FunctionCall | None) -> dict[str, Any]:
    if call is None:
        return {}
    try:
        parsed = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _regions(kind: str | None, text: str) -> Iterator[Region]:
    """The regions of ``text`` by its kind: the tool's name, or ``"paths"``."""
    if kind == "paths":
        for start, end in _lines(text):
            if not _NOTICE.fullmatch(text, start, end) and text[start:end] != "(empty directory)":
                yield (start, end, "path")
    elif kind == "read_file":
        end = file_text_end(text)
        if end:
            yield (0, end, "content")
    elif kind == "search_files":
        yield from _search_regions(text)
    elif text:
        yield (0, len(text), "content")


def file_text_end(text: str) -> int:
    """Where the file's text ends in a ``read_file`` output: before its notice lines."""
    if _EMPTY_FILE.fullmatch(text):
        return 0
    end = len(text)
    while end:
        line_start = text.rfind("\n", 0, end) + 1
        if not _NOTICE.fullmatch(text, line_start, end):
            break
        end = max(line_start - 1, 0)
    return end


def _lines(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end > start:
            yield start, end
        start = end + 1


def _search_regions(text: str) -> Iterator[Region]:
    for start, end in _lines(text):
        match = _SEARCH_LINE.match(text, start, end)
        if match is None:
            continue  # "no matches for '…'" and notices
        yield (start, match.end(1), "path")
        yield (match.end(), end, "content")
