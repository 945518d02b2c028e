"""Finding a date or time claim in a text.

A date is looked for with one regular expression built for it that starts with its year (so
``re`` skips ahead to the year's digits): ``2026-09-06``, ``2026/9/6``, ``2026.09.06``,
``2026年9月6日``, ``20260906``; a date without a year only where such a date may start (the
digits before a ``月``, the year before a ``-9-6``). English month names and
``二〇二六年九月六日`` are looked for only where that found no content, and the English regex
only in an output that has the year and the month's name. Every component the claim has must
be in the source and agree; a source may say more (``9月6日`` is supported by ``2026-09-06``),
never less.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from minipi.evidence.claims import valid_date
from minipi.evidence.match import Hit, HitTier, Views, find_all
from minipi.evidence.numerals import render_chinese
from minipi.evidence.types import DateFigure, TimeFigure

__all__ = ["DateMatcher", "TimeMatcher"]

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
        for start in sorted(starts.union(self._views.of(text, "month starts", _month_starts))):
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
            token = self._token(text, start)
            if token is not None:
                tier: HitTier = "exact" if token.group() == self.figure.literal else "normalized"
                yield Hit(start, token.end(), tier)

    def _token(self, text: str, start: int) -> re.Match[str] | None:
        """The time that starts at ``start`` if it is the figure's (seconds included)."""
        if start and text[start - 1] in "0123456789:":
            return None
        token = _SOURCE_TIME.match(text, start)
        if token is None or text[token.end() : token.end() + 1] == ":":
            return None
        second = int(token[3]) if token[3] else None
        wanted = self.figure.second
        return None if wanted is not None and second != wanted else token

    def more_hits(self, text: str) -> Iterator[Hit]:
        if self._chinese_in(text):
            for match in self._chinese.finditer(text):
                tier: HitTier = "exact" if match.group() == self.figure.literal else "normalized"
                yield Hit(match.start(), match.end(), tier)


def _digits_before(text: str, end: int) -> int:
    """The start of the run of ASCII digits that ends at ``end``, after blanks before it."""
    while end and text[end - 1].isspace():
        end -= 1
    while end and "0" <= text[end - 1] <= "9":
        end -= 1
    return end


def _month_starts(text: str) -> tuple[int, ...]:
    """Where a date written with ``月`` may start (``9月6日``, ``2026年 9 月``): the digits
    before each ``月``, and the year before those when ``年`` comes between."""
    return tuple(_month_starts_in(text))


def _month_starts_in(text: str) -> Iterator[int]:
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
