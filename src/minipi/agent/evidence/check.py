"""The verdict: each claim of an answer judged against the run's sources, in answer order.

``check_evidence`` extracts the claims (``claims``), collects the sources (``sources``) and
judges each distinct figure once (``judge``). Order of a verdict (never upgraded): weak
claims are not looked up. Content of tool results, usual renderings first, then the rest
(``Matcher.more_hits``) only if nothing was found. Among the places found, exact and
normalized ones win over rounded ones; two or more places of the best kind make the claim
``ambiguous``, all listed (at most ``MAX_SOURCES``). Then ``derived`` (text from quoted
pieces), ``path`` (listed paths, path arguments), ``from_question``, and last
``unsupported`` with the nearest number shown as a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from minipi.agent.evidence.claims import checked_claims
from minipi.agent.evidence.locate import Locator, line_column
from minipi.agent.evidence.match import (
    DateMatcher,
    Hit,
    HitTier,
    Matcher,
    TextMatcher,
    TimeMatcher,
    derive_text,
)
from minipi.agent.evidence.match_numbers import NumberMatcher, nearest
from minipi.agent.evidence.sources import Output, RunSources, collect_sources
from minipi.agent.evidence.types import (
    CheckedClaim,
    Claim,
    DateFigure,
    Evidence,
    Figure,
    Nearest,
    NumberFigure,
    Origin,
    Source,
    Status,
    TimeFigure,
)
from minipi.ai.types import Item

__all__ = ["MAX_SOURCES", "Verdict", "check_evidence", "judge", "matcher_for"]


def check_evidence(answer: str, items: Sequence[Item]) -> Evidence:
    """The claims of ``answer`` checked against the run that ends ``items``.

    ``items`` is the history as ``RunResult.items`` has it: the run is what follows its last
    user message (earlier turns of a chat are other runs); its sources are the tool results
    there that are not errors. Equal figures are looked up once. A runaway answer is checked
    up to a bound (``claims.MAX_ANSWER_CHARS``, ``claims.MAX_CLAIMS``) and says where it was
    cut (``Evidence.unchecked_from``).
    """
    claims, cut = checked_claims(answer)
    run = collect_sources(items)
    locator = Locator()
    verdicts: dict[tuple[str, Figure, bool], Verdict] = {}
    checked = []
    for claim in claims:
        key = (claim.kind, claim.figure, claim.weak)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = judge(claim, run, locator)
        checked.append(CheckedClaim(claim, verdict.status, verdict.sources, verdict.nearest))
    return Evidence(tuple(checked), run.tool_results, cut)


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
