"""Finding a claim's figure in a text: a ``Hit`` (where, and how well), the ``Matcher`` each
kind of figure has, and the matchers of dates, times and text (numbers: ``match_numbers``).

Dates: a date is looked for with one regular expression built for it that starts with its year
(so ``re`` skips ahead to the year's digits): ``2026-09-06``, ``2026/9/6``, ``2026.09.06``,
``2026年9月6日``, ``20260906``. English month names and ``二〇二六年九月六日`` are looked for
only where that found no content. Every component the claim has must be in the source and
agree; a source may say more (``9月6日`` is supported by ``2026-09-06``), never less.

Text: an identifier or quoted text is found exact first, then ignoring case and width; never
fuzzy. And text ``derived`` from 2–3 quoted pieces (``'Agent'`` + ``'Loop'``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache, lru_cache
from typing import Literal, Protocol, TypeAlias

from minipi.agent.evidence.claims import valid_date
from minipi.agent.evidence.numerals import render_chinese
from minipi.agent.evidence.types import DateFigure, TextFigure, TimeFigure

__all__ = [
    "DateMatcher",
    "Hit",
    "HitTier",
    "Matcher",
    "Piece",
    "TextMatcher",
    "TimeMatcher",
    "derive_text",
    "find_all",
    "quoted_pieces",
]

HitTier: TypeAlias = Literal["exact", "normalized", "rounded", "near"]


@dataclass(frozen=True, slots=True)
class Hit:
    """``[start, end)`` of the text holds the figure (``near``: another value, for a hint)."""

    start: int
    end: int
    tier: HitTier
    value: Decimal | None = None


_WIDE = re.compile("[\uff01-\uff5e]")


def _digits_before(text: str, end: int) -> int:
    """The start of the run of ASCII digits that ends at ``end``, after blanks before it."""
    while end and text[end - 1].isspace():
        end -= 1
    while end and "0" <= text[end - 1] <= "9":
        end -= 1
    return end


def _month_starts(text: str) -> Iterator[int]:
    for index in find_all(text, "月"):
        month = _digits_before(text, index)
        if month == index:
            continue
        yield month
        before = month
        while before and text[before - 1].isspace():
            before -= 1
        if before and text[before - 1] == "年":
            yield _digits_before(text, before - 1)


class Views:
    """What is worked out once a text for one check, however many figures look at it: its
    ``str.lower`` and the full-width ASCII forms (``Ａ``) it holds."""

    def __init__(self) -> None:
        self._lower: dict[int, tuple[str, str]] = {}
        self._wide: dict[int, tuple[str, frozenset[str]]] = {}
        self._months: dict[int, tuple[str, tuple[int, ...]]] = {}

    def lower(self, text: str) -> str:
        kept = self._lower.get(id(text))
        if kept is None or kept[0] is not text:
            kept = self._lower[id(text)] = (text, text.lower())
        return kept[1]

    def month_starts(self, text: str) -> tuple[int, ...]:
        """Where a date written with ``月`` may start (``9月6日``, ``2026年 9 月``): the digits
        before each ``月``, and the year before those when ``年`` comes between."""
        kept = self._months.get(id(text))
        if kept is None or kept[0] is not text:
            kept = self._months[id(text)] = (text, tuple(_month_starts(text)))
        return kept[1]

    def wide(self, text: str) -> frozenset[str]:
        kept = self._wide.get(id(text))
        if kept is None or kept[0] is not text:
            kept = self._wide[id(text)] = (text, frozenset(_WIDE.findall(text)))
        return kept[1]


class Matcher(Protocol):
    """Finds one claim's figure in a text. ``hits`` looks for the usual renderings (cheap: a
    few ``str.find`` or one anchored regex over the text); ``more_hits`` for the rest (other
    scripts, rounded values, near values), run only where ``hits`` found no content. ``cost``
    is what each costs at most, in ns a character of ``text`` (the slowest measured by
    ``bench/perf_evidence.py``, rounded up): what the check counts against its bound."""

    def hits(self, text: str) -> Iterator[Hit]: ...

    def more_hits(self, text: str) -> Iterator[Hit]: ...

    def cost(self, text: str) -> tuple[int, int]: ...


def find_all(text: str, needle: str) -> Iterator[int]:
    """Every start of ``needle`` in ``text`` (overlapping ones too).

    A needle with a character whose code unit is rare in memory (``万``, ``三``, full-width
    digits; see ``_probe``) is looked for only if that character is in the text: one search
    for a single character runs at ``memchr`` speed, about 8x faster than one for a short
    string, and most tool output holds no such character (bench/perf_evidence.py).
    """
    probe = _probe(needle)
    if probe and probe not in text:
        return
    index = text.find(needle)
    while index >= 0:
        yield index
        index = text.find(needle, index + 1)


@lru_cache(maxsize=1024)
def _probe(needle: str) -> str:
    """A character of ``needle`` that a single-character search skips to fast, or "".

    CPython looks for one character of a 2- or 4-byte string with ``memchr`` of its low byte,
    so a character is a good probe when that byte is rare in such text: not 0, not printable
    ASCII, not the high byte of common CJK (0x4E-0x9F), CJK punctuation (0x30) or full-width
    forms (0xFF). ASCII needles have no probe: their characters are everywhere.
    """
    for char in needle:
        low = ord(char) & 0xFF
        common = low in (0, 0x30, 0xFF) or 0x20 <= low <= 0x7E or 0x4E <= low <= 0x9F
        if ord(char) > 0x7F and not common:
            return char
    return ""


_SOURCE_DATE = re.compile(
    r"([0-9]{4})(?:([-/.])([0-9]{1,2})(?:\2([0-9]{1,2}))?"
    r"|\s*年\s*([0-9]{1,2})\s*月(?:\s*([0-9]{1,2})\s*[日号])?|([0-9]{2})([0-9]{2}))(?![0-9])"
    r"|([0-9]{1,2})\s*月\s*([0-9]{1,2})\s*[日号]"
)
_MONTH_WORDS = (
    "jan(?:uary)?",
    "feb(?:ruary)?",
    "mar(?:ch)?",
    "apr(?:il)?",
    "may",
    "june?",
    "july?",
    "aug(?:ust)?",
    "sep(?:t(?:ember)?)?",
    "oct(?:ober)?",
    "nov(?:ember)?",
    "dec(?:ember)?",
)
_ORD = "(?:st|nd|rd|th)?"
_SOURCE_TIME = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?(?![0-9])")
_HAN_YEAR = str.maketrans("0123456789", "〇一二三四五六七八九")

YMD = tuple[int | None, int | None, int | None]


def _number_regex(figure: DateFigure) -> re.Pattern[str]:
    year, month, day = figure.year, figure.month, figure.day
    m = f"0?{month}"
    d = f"0?{day}"
    if year is None:
        return re.compile(
            rf"(?<![0-9])[0-9]{{4}}(?P<s>[-/.]){m}(?P=s){d}(?![0-9])"
            rf"|(?<![0-9])(?:[0-9]{{4}}\s*年\s*)?{m}\s*月\s*{d}\s*[日号]"
        )
    if day is None:
        return re.compile(rf"{year}(?:[-/.]{m}(?![0-9])|\s*年\s*{m}\s*月)")
    compact = f"{month:02d}{day:02d}"
    return re.compile(
        rf"{year}(?:(?P<s>[-/.]){m}(?P=s){d}|\s*年\s*{m}\s*月\s*{d}\s*[日号]|{compact})(?![0-9])"
    )


def _separated(figure: DateFigure) -> tuple[str, ...]:
    """What follows the year in a match of a date without a year that has separators:
    ``-9-6``, ``/09/06``, ``.9.06``…"""
    if figure.year is not None or figure.month is None or figure.day is None:
        return ()
    months, days = (str(figure.month), f"0{figure.month}"), (str(figure.day), f"0{figure.day}")
    return tuple(f"{s}{m}{s}{d}" for s in "-/." for m in months for d in days)


def _english_regex(figure: DateFigure) -> re.Pattern[str] | None:
    if figure.month is None:
        return None
    mon = _MONTH_WORDS[figure.month - 1]
    tail = rf"(?:,\s*|\s+){figure.year}(?![0-9])" if figure.year else ""
    if figure.day is None:
        any_day = rf"(?:[0-9]{{1,2}}{_ORD},?\s+)?"
        return re.compile(rf"\b{mon}\.?,?\s+{any_day}{figure.year}(?![0-9])", re.I)
    day = f"0?{figure.day}"
    dmy_tail = rf",?\s+{figure.year}(?![0-9])" if figure.year else r"\b"
    return re.compile(
        rf"\b{mon}\.?\s+{day}{_ORD}{tail}(?![0-9])|(?<![0-9]){day}{_ORD}\s+{mon}\.?{dmy_tail}",
        re.I,
    )


def _han(figure: DateFigure) -> str | None:
    if figure.month is None or figure.day is None:
        return None
    year = f"{figure.year}".translate(_HAN_YEAR) + "年" if figure.year else ""
    return f"{year}{render_chinese(figure.month)}月{render_chinese(figure.day)}日"


def _components(match: re.Match[str]) -> YMD:
    groups = match.groups()
    if groups[8] is not None:
        return None, int(groups[8]), int(groups[9])
    year = int(groups[0])
    month = next((int(g) for g in (groups[2], groups[4], groups[6]) if g), None)
    day = next((int(g) for g in (groups[3], groups[5], groups[7]) if g), None)
    return year, month, day


def _agrees(figure: DateFigure, source: YMD) -> bool:
    wanted = (figure.year, figure.month, figure.day)
    return all(w is None or w == s for w, s in zip(wanted, source, strict=True)) and valid_date(
        *source
    )


class DateMatcher:
    """Finds a ``DateFigure`` in a text."""

    def __init__(self, figure: DateFigure, views: Views | None = None) -> None:
        self.figure = figure
        self._regex = _number_regex(figure)
        self._english = _english_regex(figure)
        self._month = _MONTH_WORDS[figure.month - 1][:3] if figure.month else ""
        self._separated = _separated(figure)
        self._views = views or Views()
        self._han = _han(figure)

    def _tier(self, text: str, start: int, end: int) -> HitTier:
        return "exact" if text[start:end] == self.figure.literal else "normalized"

    def _matches(self, text: str) -> Iterator[re.Match[str]]:
        """``self._regex.finditer(text)``. Without a year the regex starts with no literal, and
        ``re`` tries it at every position (45x a ``str.find`` pass): it is tried only where a
        match may start, after the year of each ``-9-6``-like needle, or before ``月``."""
        if self.figure.year is not None:
            yield from self._regex.finditer(text)
            return
        starts = {i - 4 for needle in self._separated for i in find_all(text, needle) if i >= 4}
        after = 0
        for start in sorted(starts.union(self._views.month_starts(text))):
            match = self._regex.match(text, start) if start >= after else None
            if match is not None:
                yield match
                after = match.end()

    def hits(self, text: str) -> Iterator[Hit]:
        for match in self._matches(text):
            start = match.start()
            if start and text[start - 1] in "0123456789":
                continue
            token = _SOURCE_DATE.match(text, start)
            if token is None or not _agrees(self.figure, _components(token)):
                continue
            end = token.end()
            yield Hit(start, end, self._tier(text, start, end))
        literal = self.figure.literal
        if literal and not literal[0].isdigit():
            for index in find_all(text, literal):
                yield Hit(index, index + len(literal), "exact")

    def more_hits(self, text: str) -> Iterator[Hit]:
        if self._english is not None and self._english_in(text):
            for match in self._english.finditer(text):
                yield Hit(match.start(), match.end(), self._tier(text, *match.span()))
        if self._han and self._han != self.figure.literal:
            for index in find_all(text, self._han):
                yield Hit(index, index + len(self._han), "normalized")

    def cost(self, text: str) -> tuple[int, int]:
        usual = 2 if self.figure.year is not None else 6
        return usual, 80 if self._english_in(text) else 4

    def _english_in(self, text: str) -> bool:
        """Whether the date may be in ``text`` in English: its year and the month's name are
        (the regex, ignoring case, tries every position: 30-70x a ``str.find`` pass)."""
        if self._english is None or (self.figure.year and str(self.figure.year) not in text):
            return False
        lower = self._views.lower(text)
        return self._month in lower or ("ſ" in lower and self._month == "sep")  # ſ matches s


class TimeMatcher:
    """Finds a ``TimeFigure`` in a text; ``10:30`` is supported by ``10:30:00``."""

    def __init__(self, figure: TimeFigure) -> None:
        self.figure = figure
        self._needle = f"{figure.hour}:{figure.minute:02d}"
        self._chinese = re.compile(rf"(?<![0-9])0?{figure.hour}\s*[点时]\s*0?{figure.minute}\s*分")

    def cost(self, text: str) -> tuple[int, int]:
        return 1, 26 if self._chinese_in(text) else 1

    def _chinese_in(self, text: str) -> bool:
        """Whether ``10点30分`` may be in ``text``: the regex tries every position."""
        return self.figure.second is None and ("点" in text or "时" in text)

    def hits(self, text: str) -> Iterator[Hit]:
        for index in find_all(text, self._needle):
            start = index - 1 if index and text[index - 1] == "0" else index
            if start and text[start - 1] in "0123456789:":
                continue
            token = _SOURCE_TIME.match(text, start)
            if token is None or text[token.end() : token.end() + 1] == ":":
                continue
            second = int(token[3]) if token[3] else None
            if self.figure.second is not None and second != self.figure.second:
                continue
            tier: HitTier = "exact" if token.group() == self.figure.literal else "normalized"
            yield Hit(start, token.end(), tier)

    def more_hits(self, text: str) -> Iterator[Hit]:
        if self._chinese_in(text):
            for match in self._chinese.finditer(text):
                tier: HitTier = "exact" if match.group() == self.figure.literal else "normalized"
                yield Hit(match.start(), match.end(), tier)


_PAIRS = {"'": "'", '"': '"', "`": "`", "‘": "’", "“": "”", "「": "」", "『": "』"}
_MAX_PIECE = 64
_MAX_PIECES = 3

Piece = tuple[int, int, int]
"""(index of the text, start, end) of a piece between quotes."""


def _word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _bounded(text: str, start: int, end: int) -> bool:
    """No letter or digit of the same token on either side (``Loop`` is not in ``AgentLoop``;
    ``A-17`` is not in ``XA-17`` or ``A-17-2``)."""
    if start and _word(text[start]) and _word(text[start - 1]):
        return False
    if end < len(text) and _word(text[end - 1]):
        after = text[end]
        if _word(after) or (after in "-." and end + 1 < len(text) and _word(text[end + 1])):
            return False
    return True


def _insensitive(text: str) -> re.Pattern[str]:
    """``text`` matching any case of its ASCII letters and either width of its ASCII."""
    parts = []
    for char in text:
        if "!" <= char <= "~":
            variants = {char, char.lower(), char.upper()}
            variants |= {chr(ord(v) + 0xFEE0) for v in set(variants)}
            parts.append("[" + "".join(re.escape(v) for v in sorted(variants)) + "]")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts))


_NOT_LETTERS = re.compile(r"[^A-Za-z]+")


def _anchor(text: str) -> tuple[int, str]:
    """The longest run of ``text`` without an ASCII letter, and its offset: what every loose
    match holds as written, unless the output has a full-width form of one of its characters."""
    best = (0, "")
    for match in _NOT_LETTERS.finditer(text):
        if len(match.group()) > len(best[1]):
            best = (match.start(), match.group())
    return best


class TextMatcher:
    """Finds a ``TextFigure`` (identifier or quoted text) in a text.

    The loose search (any case, either width) is one regex of a character class per character,
    which ``re`` tries at every position: 17x a ``str.find`` pass over a megabyte
    (bench/perf_evidence.py). So where the figure has a run without letters (``-7791`` of
    ``SKU-7791``) and the output holds no full-width form of that run's characters (one
    single-character search each), the run is looked for with ``str.find`` and the regex only
    tried where it is: the same matches (``tests/test_evidence_text.py`` checks both ways).
    """

    def __init__(self, figure: TextFigure, views: Views | None = None) -> None:
        self.figure = figure
        self._views = views or Views()
        self._folded = figure.text.lower()
        self._needles = tuple(dict.fromkeys((figure.text, figure.literal)))
        self._loose = _insensitive(figure.text)
        self._offset, self._anchor = _anchor(figure.text)
        wide = (chr(ord(c) + 0xFEE0) for c in self._anchor if "!" <= c <= "~")
        self._wide = tuple(dict.fromkeys(wide))
        cased = {v for c in figure.text if "!" <= c <= "~" for v in (c, c.lower(), c.upper())}
        self._any_wide = frozenset(chr(ord(c) + 0xFEE0) for c in cased)

    def _tier(self, text: str, start: int, end: int) -> HitTier:
        return "exact" if text[start:end] == self.figure.literal else "normalized"

    def hits(self, text: str) -> Iterator[Hit]:
        for needle in self._needles:
            for index in find_all(text, needle):
                end = index + len(needle)
                if _bounded(text, index, end):
                    yield Hit(index, end, self._tier(text, index, end))

    def more_hits(self, text: str) -> Iterator[Hit]:
        for start, end in self._loose_spans(text):
            if _bounded(text, start, end):
                yield Hit(start, end, "normalized")

    def cost(self, text: str) -> tuple[int, int]:
        return 1, 6  # the rest: the loose search, and the quoted pieces of a derivation

    def plain_more_hits(self, text: str) -> Iterator[Hit]:
        """``more_hits`` the plain way (the regex over the whole text), which it must equal."""
        for match in self._loose.finditer(text):
            if _bounded(text, *match.span()):
                yield Hit(match.start(), match.end(), "normalized")

    def _loose_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of ``self._loose.finditer(text)``: leftmost, not overlapping. Tried only
        where the lowered text holds the figure lowered, when the text has no full-width form
        of its characters (then every match lowers to it); else where its ``_anchor`` is."""
        lower = self._views.lower(text)
        if len(lower) == len(text) and not self._any_wide & self._views.wide(text):
            starts: Iterable[int] = find_all(lower, self._folded)
        elif self._anchor and not any(wide in text for wide in self._wide):
            starts = (index - self._offset for index in find_all(text, self._anchor))
        else:
            yield from (match.span() for match in self._loose.finditer(text))
            return
        size = len(self.figure.text)  # one character a class: every match is this long
        after = 0
        for start in starts:
            if start >= after and self._loose.match(text, start):
                yield start, start + size
                after = start + size


def quoted_pieces(text: str, first: str) -> list[tuple[int, int]]:
    """The spans of text between quotes in ``text`` that begin with ``first``, in text order
    (one ``str.find`` pass an opening quote)."""
    opened = sorted(
        (index + 1, opener) for opener in _PAIRS for index in find_all(text, opener + first)
    )
    spans = []
    for start, opener in opened:
        close = text.find(_PAIRS[opener], start, start + _MAX_PIECE + 1)
        if close > start:
            spans.append((start, close))
    return spans


def _distinct_pieces(
    texts: Sequence[str], first: str, usable: Callable[[int, int], bool]
) -> list[Piece]:
    """The usable pieces that begin with ``first``, each text once (its first place)."""
    distinct: dict[str, Piece] = {}
    for i, text in enumerate(texts):
        for s, e in quoted_pieces(text, first):
            if usable(i, s):
                distinct.setdefault(text[s:e], (i, s, e))
    return list(distinct.values())


def derive_text(
    target: str,
    texts: Sequence[str],
    usable: Callable[[int, int], bool],
    found: dict[str, list[Piece]] | None = None,
) -> tuple[Piece, ...] | None:
    """``target`` as 2–3 pieces each found between quotes in ``texts`` (in order), or None.

    ``usable(index, start)`` says whether a piece at ``start`` of ``texts[index]`` may count
    (it must be content). Each distinct first letter costs one scan of the texts; ``found``
    keeps those scans (the pieces by first letter) for the next target of the same texts.
    Each piece's text is tried once at each position (a result may hold thousands of
    ``'A'``): the search is bounded by the target's length times the distinct pieces.
    """
    found = {} if found is None else found

    def pieces(first: str) -> list[Piece]:
        if first not in found:
            found[first] = _distinct_pieces(texts, first, usable)
        return found[first]

    @cache
    def solve(position: int, depth: int) -> tuple[Piece, ...] | None:
        if position == len(target):
            return ()
        if depth == _MAX_PIECES:
            return None
        for index, start, end in pieces(target[position]):
            piece = texts[index][start:end]
            if len(piece) < len(target) and target.startswith(piece, position):
                rest = solve(position + len(piece), depth + 1)
                if rest is not None:
                    return ((index, start, end), *rest)
        return None

    result = solve(0, 0)
    return result if result and len(result) >= 2 else None
