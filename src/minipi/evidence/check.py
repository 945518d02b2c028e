"""The verdict: each claim of an answer judged against the run's sources, in answer order.

``check_evidence`` extracts the claims (``claims``), collects the sources (``sources``) and
judges each distinct figure once (``_judge``). Order of a verdict (never upgraded): weak
claims are not looked up. Content of tool results, usual renderings first, then the rest
(``Matcher.more_hits``) only if nothing was found. Exact and normalized places win over
rounded ones; two or more of the best kind make the claim ``ambiguous`` (at most
``MAX_SOURCES`` listed); this question's results win over an earlier question's. Then
``derived`` (quoted pieces), ``path``, ``from_question``, last ``unsupported`` (with the
nearest number as a hint).

A ``path`` claim is ``exact`` where a tool showed that path (listed, found, moved, or a path
argument of a call that did not fail), not only where content names it; a name glued to
Chinese text before it (``文件猫咪小花.txt``) matches a shown path's last name. A ``change`` claim
is ``exact`` when a change (``sources.Change``) is called by a word its sentence holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from minipi.ai.types import Item
from minipi.evidence.absent import absence_clause, confirmed_missing, missing_paths
from minipi.evidence.claims import extract_claims, is_name
from minipi.evidence.context import FIGURES, label_words
from minipi.evidence.derive import Reads, Term, derive, difference_of, fraction
from minipi.evidence.elsewhere import Rereads, argument_hits, question_hits
from minipi.evidence.locate import Locator, change_source
from minipi.evidence.match import (
    Hit,
    HitTier,
    Matcher,
    Piece,
    TextMatcher,
    Views,
    derive_text,
)
from minipi.evidence.match_dates import DateMatcher, TimeMatcher
from minipi.evidence.match_numbers import NumberMatcher, nearest
from minipi.evidence.sources import Change, Output, RunSources, collect_sources
from minipi.evidence.types import (
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
from minipi.reading.paths import path_spans
from minipi.reading.question import Question

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_CLAIMS",
    "MAX_SOURCES",
    "MAX_WORK",
    "Verdict",
    "check_evidence",
    "checked_claims",
    "matcher_for",
]


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


def check_evidence(
    answer: str, items: Sequence[Item], question: Question | None = None
) -> Evidence:
    """The claims of ``answer`` checked against the run that ends ``items``, for
    ``question`` (the run's, as read once; None: the caller's last question of ``items``).

    ``items`` is the history as ``RunResult.items`` has it: the run is what follows its last
    user message (earlier turns of a chat are other runs); its sources are the tool results
    there that are not errors. Equal figures are looked up once. The check is bounded: a
    runaway answer is checked up to ``MAX_ANSWER_CHARS`` and ``MAX_CLAIMS``,
    and the figures are judged in answer order while their searches fit ``MAX_WORK``; the
    claims from the first one not examined on are left out, and ``Evidence.unchecked_from``
    says where they begin (never a silent pass).
    """
    run = collect_sources(items)
    claims, cut = checked_claims(answer, _names(run))
    asked = question if question is not None else Question.of(run.question or "")
    check = _Check(run, answer, claims, asked.words)
    check.missing = missing_paths(items)
    checked = []
    for claim in claims:
        verdict = check.verdict(claim)
        if verdict is None:
            cut = claim.span[0]
            break
        checked.append(CheckedClaim(claim, verdict.status, verdict.sources, verdict.nearest))
    return Evidence(_differences(tuple(checked)), check.run.tool_results, cut)


MAX_ANSWER_CHARS = 20_000
"""The characters of an answer examined for claims (cut back to a space or line break near
there): extraction costs about 10 µs a character of figure-dense text, so a runaway answer of
megabytes would take minutes; 20 000 characters is a long report."""
MAX_CLAIMS = 100
"""The claims checked, in answer order: each distinct figure costs a search of every output
(up to ~10 ms when a megabyte holds none of it)."""


def _names(run: RunSources) -> frozenset[str]:
    """The values this question's reads of files hold that read as names
    (``claims.is_name``), from its reads in order while they add up to ``MAX_NAMES_READ``
    characters; a search's hits or a listing say nothing of what their values are."""
    from minipi.evidence.records import values

    names: set[str] = set()
    budget = MAX_NAMES_READ
    from minipi.evidence.scope import is_file

    for output in (o for o in run.outputs if o.question is None and is_file(o.path or "")):
        budget -= len(output.text)
        if budget < 0:
            break
        names.update(v for v in values(output.text) if is_name(v))
    return frozenset(names)


MAX_NAMES_READ = 256 * 1024
"""The characters of reads whose fields and cells are read for names: parsing 4 MB of results
for them took 1-3 s (``bench/perf_evidence.py``); the files a person asks about are smaller."""


def checked_claims(
    answer: str, names: frozenset[str] = frozenset()
) -> tuple[tuple[Claim, ...], int | None]:
    """The claims to check: those of the first ``MAX_ANSWER_CHARS`` of ``answer``, at most
    ``MAX_CLAIMS``; and the position of the answer from which figures were not examined (the
    cut), or None when the whole answer was."""
    examined = _examined(answer)
    claims = extract_claims(answer[:examined], names)
    cut = examined if examined < len(answer) else None
    if len(claims) > MAX_CLAIMS:
        cut = claims[MAX_CLAIMS].span[0]
        claims = claims[:MAX_CLAIMS]
    return claims, cut


_BREAKS = " \n\t\u3000，。；、！？"
"""Where a cut splits no figure: blanks and the Chinese punctuation that ends a phrase."""


def _examined(answer: str) -> int:
    """How much of ``answer`` is examined: all of it, or up to the last break (``_BREAKS``)
    before the limit, within 200 characters of it, else exactly the limit."""
    if len(answer) <= MAX_ANSWER_CHARS:
        return len(answer)
    lowest = MAX_ANSWER_CHARS - 200
    cut = max(answer.rfind(c, lowest, MAX_ANSWER_CHARS + 1) for c in _BREAKS)
    return cut if cut > 0 else MAX_ANSWER_CHARS


MAX_WORK = 700_000_000
"""What the searches of one check may cost, in estimated nanoseconds of this machine
(``Matcher.cost``): with what extraction and locators add, a check stays under about 1 s
whatever the answer and the results hold (``python bench/perf_evidence.py`` builds the
worst cases)."""


class _Check:
    """The verdicts of one check: equal figures judged once, the searches counted against
    ``MAX_WORK``; and what the searches share (locators, lowered texts, quoted pieces)."""

    def __init__(
        self,
        run: RunSources,
        answer: str = "",
        claims: Sequence[Claim] = (),
        asked: frozenset[str] = frozenset(),
    ) -> None:
        self.run = run
        self.answer = answer
        self.spans = [c.span for c in claims if c.kind in FIGURES]
        self.asked = asked
        texts = [o.document or o.text if o.question is None else None for o in run.outputs]
        self.reads = Reads(texts)
        self.locator = Locator()
        self.views = Views()
        self.pieces: dict[str, list[Piece]] = {}
        self.rereads = Rereads(run.outputs)
        self._verdicts: dict[tuple[str, Figure, bool], Verdict] = {}
        self._texts = [o.text for o in run.outputs] + [a.path for a in run.path_arguments]
        self._texts += [run.question] if run.question else []
        self._work = 0
        self.missing: dict[str, Source] = {}
        """The paths a tool of this question answered ``not_found`` (``absent``)."""

    def verdict(self, claim: Claim) -> Verdict | None:
        """The claim's verdict, or None when its search would pass ``MAX_WORK``."""
        key = (claim.kind, claim.figure, claim.weak)
        verdict = self._verdicts.get(key)
        if verdict is None and claim.weak:
            verdict = self._verdicts[key] = self.derived(claim) or Verdict("weak")
        if verdict is None and claim.kind == "change":
            verdict = self._verdicts[key] = _judge_change(claim, self.run.changes)
        if verdict is None:
            verdict = self._searched(claim)
            if verdict is not None:
                self._verdicts[key] = verdict
        return verdict

    def _searched(self, claim: Claim) -> Verdict | None:
        """The verdict of a claim looked up in the reads (then recomputed from them when no
        read holds it), or None when the search would pass ``MAX_WORK``."""
        matcher = matcher_for(claim.figure, self.views)
        usual = rest = 0
        for text in self._texts:
            a, b = matcher.cost(text)
            usual, rest = usual + a * len(text), rest + b * len(text)
        if self._work + usual + rest + self.rereads.cost(matcher) > MAX_WORK:
            return None
        spent = self.rereads.spent
        verdict, further = _judge(claim, self, matcher)
        if verdict.status == "unsupported":
            verdict = self.derived(claim) or verdict
        self._work += usual + (rest if further else 0) + self.rereads.spent - spent
        return verdict

    def derived(self, claim: Claim) -> Verdict | None:
        """``derived`` when a number of the answer is a count, sum, mean or difference over
        this question's reads (``derive``), selected by the words beside it and the
        question's."""
        figure = _derivable(claim)
        if figure is None:
            return None
        others = [span for span in self.spans if span != claim.span]
        beside = label_words(self.answer, claim.span, others)
        chosen = sorted(beside) + sorted(self.asked - beside)
        outputs = self.run.outputs
        terms: tuple[Term, ...] | None
        if figure.percent:
            found = fraction(figure.value, self.reads.texts)
            terms = None if found is None else (found,)
        else:
            terms = derive(figure.value, figure.decimals, self.reads, chosen)
        if terms is None:
            return None
        hits = ((outputs[t.output], Hit(t.start, t.end, "exact")) for t in terms)
        sources = tuple(self.locator.source(o, h, "content") for o, h in hits)
        return Verdict("derived", sources[:MAX_SOURCES])


def _derivable(claim: Claim) -> NumberFigure | None:
    """A number that is not approximate (no interval) and not one or two: one or two rows
    of a read hold almost any word, so such a count would back anything."""
    figure = claim.figure
    if not isinstance(figure, NumberFigure) or figure.interval:
        return None
    return None if claim.weak and figure.value < 3 else figure


def _differences(claims: tuple[CheckedClaim, ...]) -> tuple[CheckedClaim, ...]:
    """An unsupported number that is the difference of two supported numbers the answer
    states (450 and 380: 70 more) is ``derived`` from their sources."""
    values = [
        (figure.value, c)
        for c in claims
        if c.supported and isinstance(figure := c.claim.figure, NumberFigure)
    ]
    checked = []
    for claim in claims:
        figure = claim.claim.figure
        if claim.status == "unsupported" and isinstance(figure, NumberFigure):
            pair = difference_of(figure.value, values)
            if pair is not None:
                claim = CheckedClaim(claim.claim, "derived", pair[0].sources + pair[1].sources)
        checked.append(claim)
    return tuple(checked)


def matcher_for(figure: Figure, views: Views | None = None) -> Matcher:
    """The matcher of a figure's kind."""
    if isinstance(figure, NumberFigure):
        return NumberMatcher(figure)
    if isinstance(figure, DateFigure):
        return DateMatcher(figure, views)
    if isinstance(figure, TimeFigure):
        return TimeMatcher(figure)
    return TextMatcher(figure, views)


def _judge(claim: Claim, check: _Check, matcher: Matcher) -> tuple[Verdict, bool]:
    """The verdict on a claim that is not weak against one run's sources (see the module
    docstring), and whether it took the slower search (``Matcher.more_hits``)."""
    run, locator = check.run, check.locator
    places = _scan(matcher.hits, run)
    further = not _content(places)
    if further:
        places += _scan(matcher.more_hits, run)
    if not _content(places):  # the outputs in the usual forms (玖仟陆佰, ٩٦٠٠, 9\u200b600)
        again = ((o, h, o.origin_at(h.start)) for o, h in check.rereads.hits(matcher))
        places += [_Place(o, h, origin) for o, h, origin in again if origin is not None]
    content = _content(places)
    if content:
        return _supported(content, locator), further
    if claim.kind == "path":
        return _judge_path(claim, check, matcher), further
    if claim.kind in ("quote", "identifier"):
        derived = _derived(claim, check)
        if derived is not None:
            return derived, further
    paths = [locator.source(p.output, p.hit, p.origin) for p in places if p.origin == "path"]
    paths += argument_hits(matcher, run)
    if paths:
        return Verdict("path", _unique_paths(paths)), further
    asked = list(question_hits(matcher, run.question))
    if asked:
        return Verdict("from_question", tuple(asked[:MAX_SOURCES])), further
    return Verdict("unsupported", (), _hint(claim, places, locator)), further


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
    group = _best(content)
    places: dict[tuple[str, int, int], _Place] = {}
    for place in group:  # the same file read twice is one place
        places.setdefault((place.output.identity, place.hit.start, place.hit.end), place)
    unique = list(places.values())
    status: Status = "ambiguous" if len(unique) > 1 else _STATUS_OF[unique[0].hit.tier]
    sources = tuple(locator.source(p.output, p.hit, p.origin) for p in unique[:MAX_SOURCES])
    return Verdict(status, sources)


def _judge_path(claim: Claim, check: _Check, matcher: Matcher) -> Verdict:
    """A path claim no content names: ``exact`` where a tool showed the path, or a path
    whose last name the claim ends with after Chinese text it is glued to."""
    places = _scan(matcher.hits, check.run)
    shown = [check.locator.source(p.output, p.hit, p.origin) for p in places]
    shown += argument_hits(matcher, check.run)
    shown = shown or list(_glued(claim.value, check))
    if not shown:
        return _missing(claim, check)
    current = [s for s in shown if s.question is None] or shown
    return Verdict("exact", _unique_paths(current))


def _missing(claim: Claim, check: _Check) -> Verdict:
    """A path no tool showed is backed by the tool's own ``not_found`` for it where the
    answer's sentence says it is not there ("weekly.json does not exist"), else unsupported
    (``minipi.evidence.absent``)."""
    confirmed = confirmed_missing(claim.value, check.missing)
    if confirmed is not None and absence_clause(check.answer, claim.span):
        return Verdict("exact", (confirmed,))
    return Verdict("unsupported")


def _glued(value: str, check: _Check) -> Iterator[Source]:
    """The paths shown whose last name ends ``value`` right after a non-ASCII character
    (``文件猫咪小花.txt`` and ``inbox/猫咪小花.txt``): one pass over the path regions."""
    for output in check.run.outputs:
        for start, end, origin in output.regions:
            text = output.text[start:end]
            name = text.rstrip("/").rsplit("/", 1)[-1]
            cut = len(value) - len(name)
            glued = cut > 0 and value.endswith(name) and not value[cut - 1].isascii()
            if origin == "path" and name and glued:
                at = start + text.rindex(name)
                yield check.locator.source(output, Hit(at, at + len(name), "exact"), "path")


def _judge_change(claim: Claim, changes: tuple[Change, ...]) -> Verdict:
    """A claimed change: ``exact`` when a change this run made is called by a word of it (an
    earlier question's change only if the sentence names a file it touched: ``Change``), and
    every file the sentence names is one a change touched (one move of ``cat.txt`` does not
    back "moved cat.txt and dog.txt")."""
    said = claim.text.lower()
    if _untouched(claim.text, changes):
        return Verdict("unsupported")
    for change in changes:
        if change.output.question is not None and not change.names_a_file(said):
            continue
        if any(word.lower() in said for word in change.words):
            return Verdict("exact", (change_source(change.output),))
    return Verdict("unsupported")


def _untouched(said: str, changes: tuple[Change, ...]) -> bool:
    """Whether ``said`` names a file (a name with an extension) that no change's record
    names."""
    names = (value.rstrip("/").rsplit("/", 1)[-1].lower() for _, _, value in path_spans(said))
    files = [name for name in names if "." in name[1:]]
    return any(not any(name in c.output.text.lower() for c in changes) for name in files)


def _best(content: list[_Place]) -> list[_Place]:
    """The places of the best kind (exact or normalized, else rounded); of them, this
    question's when there are any."""
    best = [p for p in content if p.hit.tier in ("exact", "normalized")]
    group = best or [p for p in content if p.hit.tier == "rounded"]
    return [p for p in group if p.output.question is None] or group


def _derived(claim: Claim, check: _Check) -> Verdict | None:
    outputs, locator = check.run.outputs, check.locator
    target = claim.value
    pieces = derive_text(
        target,
        [o.text for o in outputs],
        lambda index, start: outputs[index].origin_at(start) == "content",
        check.pieces,
    )
    if pieces is None:
        return None
    sources = tuple(
        locator.source(outputs[i], Hit(start, end, "exact"), "content") for i, start, end in pieces
    )
    return Verdict("derived", sources)


def _unique_paths(sources: list[Source]) -> tuple[Source, ...]:
    """The path sources, once each (the same directory listed twice is one place)."""
    seen: dict[tuple[object, ...], Source] = {}
    for s in sources:
        seen.setdefault((s.tool, s.path, s.line, s.column, s.range), s)
    return tuple(seen.values())[:MAX_SOURCES]


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
