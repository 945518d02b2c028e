"""The conversation's tool results as sources: which parts of each output are content, which
are paths, and which changes this run made.

The conversation is every item; its questions are its user messages, numbered from 1. The run
is what follows the last one (all of the items if there is none): its results are this
question's (``Output.question`` None), those after an earlier question are that question's
(its number). Outputs are listed this run's first, in call order, then each earlier question's,
newest first: where a figure is in both, this question's results are preferred.

What is content: a tool says it with ``details["marks"]``, a list of ``[start, end, origin]``
(``origin`` ``"content"`` or ``"path"``) into its output (minipi's file tools,
``minipi.files.tools``): the rest (notices, ``no matches for '…'``, echoes of the arguments,
line numbers) is the tool's own words and never a source. When the loop cut the output
(``details["cut_at"]``, where its notice begins), regions end there. A result without marks
(another tool, an MCP tool, an older session's record) is content as a whole, less every
occurrence of its call's own argument values (strings and numbers of two or more characters,
at any depth): what the model wrote is never a source, through any tool. A result of an older
record whose ``details["output"]`` is ``"paths"`` is a path a line.

A change is a result of this run with ``details["changed"]`` true; the tool names its change
in ``details["change_words"]`` (``{"en": [...], "zh": [...]}``).

What a region names (``Output.named_at``): a source names the file a reader would open to
check the figure, so a region of a result that lists or finds files is traced to the file it
names, not to the call: a ``path`` region names the path it shows (a listed entry, a found
file, a moved file's old or new path; unquoted, without a folder's ``/``), with no line (the
figure is in the name); a ``content`` region right after a ``path`` region on its line,
joined by ``:N: `` (a search hit, ``reports/daily.json:4:   "refunds": 12``), is line N of
that file. Any other region (a read, another tool's output) names nothing of its own: its
source is the call's ``path`` argument and the line in the output.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message, is_question
from minipi.evidence.types import Origin

__all__ = ["Change", "Named", "Output", "PathArgument", "RunSources", "collect_sources"]

Region = tuple[int, int, Origin]
_MAX_ECHOES = 10_000
"""Occurrences of argument values cut out of one unmarked output, at most (a bound)."""
_HIT_LINE = re.compile(r":([1-9][0-9]*): ")
"""What joins a search hit's file to its line's text: ``:N: ``."""


@dataclass(frozen=True, slots=True)
class Named:
    """The file a region of an output names (``Output.named_at``): ``path`` as the project
    names it, and ``line`` the 1-based line of it the region is (None: the region is the
    name itself)."""

    path: str
    line: int | None = None


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
    question: int | None = None
    """The number of the earlier question whose run made it; None: this question's."""
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

    def named_at(self, start: int) -> Named | None:
        """The file the region holding ``start`` names (module docstring), or None."""
        index = bisect.bisect_right(self._starts, start) - 1
        if index < 0 or start >= self.regions[index][1]:
            return None
        region_start, region_end, origin = self.regions[index]
        if origin == "path":
            return Named(_unquoted(self.text[region_start:region_end]))
        if index == 0 or self.regions[index - 1][2] != "path":
            return None
        name_start, name_end, _ = self.regions[index - 1]
        joined = _HIT_LINE.fullmatch(self.text, name_end, region_start)
        if joined is None:
            return None
        return Named(_unquoted(self.text[name_start:name_end]), int(joined.group(1)))


@dataclass(frozen=True, slots=True)
class PathArgument:
    """A call's ``path`` argument, whose result was not an error: a source of origin ``path``."""

    call_id: str
    tool: str | None
    path: str
    question: int | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A change a tool of this conversation made: its result (``output.question`` says an
    earlier question's), and the words the tool names it with."""

    output: Output
    words: tuple[str, ...]

    def names_a_file(self, said: str) -> bool:
        """Whether ``said`` (lower-cased) names a file of this change's result (``moved
        a/x.txt -> b/x.txt``), by its name or its name without the extension: what lets an
        earlier question's change back a claim (a resumed task, a chat's "did you move it?")
        without an earlier move of the cat backing "moved the dog"."""
        for token in self.output.text.split():
            name = token.rstrip("/").rsplit("/", 1)[-1].lower()
            stem = name.rsplit(".", 1)[0]
            if len(stem) >= 2 and ("." in name or "/" in token) and (name in said or stem in said):
                return True
        return False


@dataclass(frozen=True, slots=True)
class RunSources:
    """What one answer may be traced to: the conversation's reads, this run's changes."""

    question: str | None
    outputs: tuple[Output, ...]
    path_arguments: tuple[PathArgument, ...]
    changes: tuple[Change, ...] = ()

    @property
    def tool_results(self) -> int:
        """This run's results that are not errors (earlier questions' not counted)."""
        return sum(1 for o in self.outputs if o.question is None)


def collect_sources(items: Sequence[Item]) -> RunSources:
    """The sources of the conversation that ends ``items`` (see the module docstring)."""
    asked = _questions(items)
    question = _text(items[asked[-1]]) if asked else None
    calls = {item.call_id: item for item in items if isinstance(item, FunctionCall)}
    runs: list[list[Output]] = [[] for _ in range(len(asked) + 1)]
    changes: list[Change | None] = []
    for number, item in _results(items, asked):
        current = number == len(asked)
        output = _output(item, calls.get(item.call_id), None if current else number)
        runs[number].append(output)
        changes.append(_change(output, item.details))  # an earlier question's too
    outputs = _newest_first(runs)
    made = tuple(c for c in changes if c is not None)
    return RunSources(question, tuple(outputs), _path_arguments(outputs), made)


def _newest_first(runs: list[list[Output]]) -> list[Output]:
    """This run's outputs in call order, then each earlier question's, newest first."""
    return runs[-1] + [o for run in reversed(runs[:-1]) for o in run]


def _questions(items: Sequence[Item]) -> list[int]:
    return [i for i, item in enumerate(items) if is_question(item)]


def _path_arguments(outputs: list[Output]) -> tuple[PathArgument, ...]:
    return tuple(
        PathArgument(o.call_id, o.tool, o.path, o.question) for o in outputs if o.path is not None
    )


def _text(item: Item) -> str | None:
    return item.text if isinstance(item, Message) else None


def _results(items: Sequence[Item], asked: list[int]) -> Iterator[tuple[int, FunctionCallOutput]]:
    """Each result that is not an error, with how many questions came before it."""
    number = 0
    for index, item in enumerate(items):
        while number < len(asked) and asked[number] <= index:
            number += 1
        if isinstance(item, FunctionCallOutput) and not item.is_error:
            yield number, item


def _change(output: Output, details: Mapping[str, Any]) -> Change | None:
    if details.get("changed") is not True:
        return None
    declared = details.get("change_words")
    words: list[str] = []
    if isinstance(declared, dict):
        for values in declared.values():
            if isinstance(values, list):
                words += [w for w in values if isinstance(w, str) and w]
    return Change(output, tuple(words))


def _output(item: FunctionCallOutput, call: FunctionCall | None, question: int | None) -> Output:
    tool = call.name if call else None
    arguments = _arguments(call)
    path = arguments.get("path")
    path = path if isinstance(path, str) else None
    identity = path if path is not None else json.dumps(arguments, sort_keys=True)
    regions = tuple(_regions(item, arguments))
    return Output(
        call_id=item.call_id,
        tool=tool,
        arguments=arguments,
        path=path,
        identity=f"{tool}\x00{identity}",
        text=item.output,
        regions=regions,
        first_line=_first_line(tool, arguments),
        question=question,
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


def _regions(item: FunctionCallOutput, arguments: Mapping[str, Any]) -> Iterator[Region]:
    """The regions of an output: as the tool marked them, else the whole (less echoes)."""
    text, details = item.output, item.details
    end = details.get("cut_at")
    end = end if isinstance(end, int) and 0 <= end <= len(text) else len(text)
    marks = _marks(details.get("marks"))
    if marks is not None:
        for start, stop, origin in marks:
            if start < min(stop, end):
                yield (start, min(stop, end), origin)
    elif details.get("output") == "paths":  # an older record of a file tool's listing
        for start, stop in _lines(text[:end]):
            yield (start, stop, "path")
    else:
        yield from _less_echoes(text, end, list(_values(arguments)))


def _marks(marks: object) -> list[Region] | None:
    """``details["marks"]`` as sorted, disjoint regions, or None when absent or malformed."""
    if not isinstance(marks, list):
        return None
    regions = sorted(r for r in map(_mark, marks) if r is not None)
    if len(regions) < len(marks) or any(a[1] > b[0] for a, b in itertools.pairwise(regions)):
        return None
    return regions


def _mark(mark: object) -> Region | None:
    if not (isinstance(mark, list | tuple) and len(mark) == 3):
        return None
    start, end, origin = mark
    if not (isinstance(start, int) and isinstance(end, int) and origin in ("content", "path")):
        return None
    return (start, end, "content" if origin == "content" else "path")


def _values(value: object) -> Iterator[str]:
    """The argument values a tool may echo: strings and numbers of 2+ characters."""
    if isinstance(value, Mapping):
        for inner in value.values():
            yield from _values(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _values(inner)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        shown = str(value).strip()
        if len(shown) >= 2:
            yield shown


def _less_echoes(text: str, end: int, values: list[str]) -> Iterator[Region]:
    """``[0, end)`` as content, less every occurrence of an argument value."""
    echoes: list[tuple[int, int]] = []
    for value in values:
        at = text.find(value, 0, end)
        while at >= 0 and len(echoes) < _MAX_ECHOES:
            echoes.append((at, at + len(value)))
            at = text.find(value, at + 1, end)
    start = 0
    for a, b in sorted(echoes):
        if a > start:
            yield (start, a, "content")
        start = max(start, b)
    if start < end:
        yield (start, end, "content")


def _lines(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end > start:
            yield start, end
        start = end + 1


def _unquoted(shown: str) -> str:
    """A path as a tool showed it, as the project names it: without a folder's ``/``, and a
    JSON string literal (``paths.quote_path``) read back."""
    name = shown[:-1] if len(shown) > 1 and shown.endswith("/") else shown
    if len(name) > 1 and name[0] == name[-1] == '"':
        try:
            loaded = json.loads(name)
        except ValueError:
            return name
        return loaded if isinstance(loaded, str) and loaded else name
    return name
