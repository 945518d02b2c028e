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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
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


class Matcher(Protocol):
    """Finds one claim's figure in a text. ``hits`` looks for the usual renderings (cheap: a
    few ``str.find`` or one anchored regex over the text); ``more_hits`` for the rest (other
    scripts, rounded values, near values), run only where ``hits`` found no content."""

    def hits(self, text: str) -> Iterator[Hit]: ...

    def more_hits(self, text: str) -> Iterator[Hit]: ...


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

    def __init__(self, figure: DateFigure) -> None:
        self.figure = figure
        self._regex = _number_regex(figure)
        self._english = _english_regex(figure)
        self._han = _han(figure)

    def _tier(self, text: str, start: int, end: int) -> HitTier:
        return "exact" if text[start:end] == self.figure.literal else "normalized"

    def hits(self, text: str) -> Iterator[Hit]:
        for match in self._regex.finditer(text):
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
        if self._english is not None:
            for match in self._english.finditer(text):
                yield Hit(match.start(), match.end(), self._tier(text, *match.span()))
        if self._han and self._han != self.figure.literal:
            for index in find_all(text, self._han):
                yield Hit(index, index + len(self._han), "normalized")


class TimeMatcher:
    """Finds a ``TimeFigure`` in a text; ``10:30`` is supported by ``10:30:00``."""

    def __init__(self, figure: TimeFigure) -> None:
        self.figure = figure
        self._needle = f"{figure.hour}:{figure.minute:02d}"
        self._chinese = re.compile(rf"(?<![0-9])0?{figure.hour}\s*[点时]\s*0?{figure.minute}\s*分")

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
        if self.figure.second is None:
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

    def __init__(self, figure: TextFigure) -> None:
        self.figure = figure
        self._needles = tuple(dict.fromkeys((figure.text, figure.literal)))
        self._loose = _insensitive(figure.text)
        self._offset, self._anchor = _anchor(figure.text)
        wide = (chr(ord(c) + 0xFEE0) for c in self._anchor if "!" <= c <= "~")
        self._wide = tuple(dict.fromkeys(wide))

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

    def plain_more_hits(self, text: str) -> Iterator[Hit]:
        """``more_hits`` the plain way (the regex over the whole text), which it must equal."""
        for match in self._loose.finditer(text):
            if _bounded(text, *match.span()):
                yield Hit(match.start(), match.end(), "normalized")

    def _loose_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of ``self._loose.finditer(text)``: leftmost, not overlapping."""
        if not self._anchor or any(wide in text for wide in self._wide):
            for match in self._loose.finditer(text):
                yield match.span()
            return
        size = len(self.figure.text)  # one character a class: every match is this long
        after = 0
        for index in find_all(text, self._anchor):
            start = index - self._offset
            if start >= after and self._loose.match(text, start):
                yield start, start + size
                after = start + size


@lru_cache(maxsize=64)
def _opening(first: str) -> re.Pattern[str]:
    openers = "".join(re.escape(o) for o in _PAIRS)
    return re.compile(f"([{openers}])(?={re.escape(first)})")


def quoted_pieces(text: str, first: str) -> Iterator[tuple[int, int]]:
    """The spans of text between quotes in ``text`` that begin with ``first``."""
    for match in _opening(first).finditer(text):
        start = match.end()
        close = text.find(_PAIRS[match.group(1)], start, start + _MAX_PIECE + 1)
        if close > start:
            yield start, close


def derive_text(
    target: str, texts: Sequence[str], usable: Callable[[int, int], bool]
) -> tuple[Piece, ...] | None:
    """``target`` as 2–3 pieces each found between quotes in ``texts`` (in order), or None.

    ``usable(index, start)`` says whether a piece at ``start`` of ``texts[index]`` may count
    (it must be content). Each distinct first letter costs one scan of the texts.
    """
    found: dict[str, list[Piece]] = {}

    def pieces(first: str) -> list[Piece]:
        if first not in found:
            found[first] = [
                (i, s, e)
                for i, text in enumerate(texts)
                for s, e in quoted_pieces(text, first)
                if usable(i, s)
            ]
        return found[first]

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
