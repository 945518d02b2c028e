"""A claim's status: where its figure is among this run's sources, and how well it matches.

Order (never upgraded): weak claims are not looked up. Content of tool results, usual
renderings first, then the rest (``Matcher.more_hits``) only if nothing was found. Among the
places found, exact and normalized ones win over rounded ones; two or more places of the best
kind make the claim ``ambiguous``, all listed (at most ``MAX_SOURCES``). Then ``derived``
(text from quoted pieces), ``path`` (listed paths, path arguments), ``from_question``, and
last ``unsupported`` with the nearest number shown as a hint.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from minipi.agent.evidence.hits import Hit, HitTier, Matcher
from minipi.agent.evidence.locate import JsonIndex, line_column, looks_like_json
from minipi.agent.evidence.match_dates import DateMatcher, TimeMatcher
from minipi.agent.evidence.match_numbers import NumberMatcher, nearest
from minipi.agent.evidence.match_text import TextMatcher, derive_text
from minipi.agent.evidence.sources import Output, RunSources
from minipi.agent.evidence.types import (
    Claim,
    DateFigure,
    Figure,
    Nearest,
    NumberFigure,
    Origin,
    Source,
    Status,
    TimeFigure,
)

__all__ = ["MAX_SOURCES", "Locator", "Verdict", "judge", "matcher_for"]

MAX_SOURCES = 10
"""The most sources listed for one claim (an ``ambiguous`` figure may be in hundreds)."""


_STATUS_OF: dict[HitTier, Status] = {
    "exact": "exact",
    "normalized": "normalized",
    "rounded": "rounded",
    "near": "unsupported",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A claim's status, sources and hint (without the claim: equal figures share one)."""

    status: Status
    sources: tuple[Source, ...] = ()
    nearest: Nearest | None = None


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
        line, column = self.line_column(output, hit.start)
        line += output.first_line - 1  # the file's line when read_file started at an offset
        pointer = self.pointer(output, hit.start) if origin == "content" else None
        return Source(
            call_id=output.call_id,
            tool=output.tool,
            path=output.path,
            origin=origin,
            pointer=pointer,
            line=line,
            column=column,
            range=(hit.start, hit.end),
            text=output.text[hit.start : hit.end],
        )


@dataclass(frozen=True, slots=True)
class _Place:
    output: Output
    hit: Hit
    origin: Origin


def matcher_for(figure: Figure) -> Matcher:
    """The matcher of a figure's kind."""
    if isinstance(figure, NumberFigure):
        return NumberMatcher(figure)
    if isinstance(figure, DateFigure):
        return DateMatcher(figure)
    if isinstance(figure, TimeFigure):
        return TimeMatcher(figure)
    return TextMatcher(figure)


def judge(claim: Claim, run: RunSources, locator: Locator) -> Verdict:
    """The verdict on one claim against one run's sources (see the module docstring)."""
    if claim.weak:
        return Verdict("weak")
    matcher = matcher_for(claim.figure)
    places = _scan(matcher.hits, run)
    if not _content(places):
        places += _scan(matcher.more_hits, run)
    content = _content(places)
    if content:
        return _supported(content, locator)
    if claim.kind in ("quote", "identifier"):
        derived = _derived(claim, run, locator)
        if derived is not None:
            return derived
    paths = [locator.source(p.output, p.hit, p.origin) for p in places if p.origin == "path"]
    paths += _argument_hits(matcher, run)
    if paths:
        return Verdict("path", _unique_paths(paths))
    asked = list(_question_hits(matcher, run.question))
    if asked:
        return Verdict("from_question", tuple(asked[:MAX_SOURCES]))
    return Verdict("unsupported", (), _hint(claim, places, locator))


def _scan(find: Callable[[str], Iterator[Hit]], run: RunSources) -> list[_Place]:
    """The places ``find`` reports in the outputs. It stops once more than ``MAX_SOURCES``
    distinct exact or normalized places of content are known: more cannot change the status
    (``ambiguous``) nor the list, and a store name may be on every line of a megabyte."""
    places: list[_Place] = []
    best: set[tuple[str, int, int]] = set()
    for output in run.outputs:
        for hit in find(output.text):
            origin = output.origin_at(hit.start)
            if origin is None:
                continue
            places.append(_Place(output, hit, origin))
            if origin == "content" and hit.tier in ("exact", "normalized"):
                best.add((output.identity, hit.start, hit.end))
                if len(best) > MAX_SOURCES:
                    return places
    return places


def _content(places: list[_Place]) -> list[_Place]:
    return [p for p in places if p.origin == "content" and p.hit.tier != "near"]


def _supported(content: list[_Place], locator: Locator) -> Verdict:
    best = [p for p in content if p.hit.tier in ("exact", "normalized")]
    group = best or [p for p in content if p.hit.tier == "rounded"]
    places: dict[tuple[str, int, int], _Place] = {}
    for place in group:  # the same file read twice is one place
        places.setdefault((place.output.identity, place.hit.start, place.hit.end), place)
    unique = list(places.values())
    status: Status = "ambiguous" if len(unique) > 1 else _STATUS_OF[unique[0].hit.tier]
    sources = tuple(locator.source(p.output, p.hit, p.origin) for p in unique[:MAX_SOURCES])
    return Verdict(status, sources)


def _derived(claim: Claim, run: RunSources, locator: Locator) -> Verdict | None:
    outputs = run.outputs
    target = claim.value
    pieces = derive_text(
        target,
        [o.text for o in outputs],
        lambda index, start: outputs[index].origin_at(start) == "content",
    )
    if pieces is None:
        return None
    sources = tuple(
        locator.source(outputs[i], Hit(start, end, "exact"), "content") for i, start, end in pieces
    )
    return Verdict("derived", sources)


def _argument_hits(matcher: Matcher, run: RunSources) -> Iterator[Source]:
    for argument in run.path_arguments:
        for hit in _all_hits(matcher, argument.path):
            yield Source(
                call_id=argument.call_id,
                tool=argument.tool,
                path=argument.path,
                origin="path",
                pointer=None,
                line=None,
                column=None,
                range=(hit.start, hit.end),
                text=argument.path[hit.start : hit.end],
            )


def _all_hits(matcher: Matcher, text: str) -> Iterator[Hit]:
    found = [h for h in matcher.hits(text) if h.tier != "near"]
    yield from found or [h for h in matcher.more_hits(text) if h.tier != "near"]


def _unique_paths(sources: list[Source]) -> tuple[Source, ...]:
    """The path sources, once each (the same directory listed twice is one place)."""
    seen: dict[tuple[object, ...], Source] = {}
    for s in sources:
        seen.setdefault((s.tool, s.path, s.line, s.column, s.range), s)
    return tuple(seen.values())[:MAX_SOURCES]


def _question_hits(matcher: Matcher, question: str | None) -> Iterator[Source]:
    if not question:
        return
    for hit in _all_hits(matcher, question):
        line, column = line_column(question, hit.start)
        yield Source(
            call_id=None,
            tool=None,
            path=None,
            origin="question",
            pointer=None,
            line=line,
            column=column,
            range=(hit.start, hit.end),
            text=question[hit.start : hit.end],
        )


def _hint(claim: Claim, places: list[_Place], locator: Locator) -> Nearest | None:
    figure = claim.figure
    if not isinstance(figure, NumberFigure):
        return None
    near = [p for p in places if p.origin == "content"]
    best = nearest((p.hit for p in near), figure.value)
    if best is None:
        return None
    place = next(p for p in near if p.hit is best)
    source = locator.source(place.output, best, "content")
    return Nearest(source.text, source)
