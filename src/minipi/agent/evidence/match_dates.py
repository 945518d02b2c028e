"""Finding a date or time claim in a text.

A date is looked for with one regular expression built for it that starts with its year (so
``re`` skips ahead to the year's digits): ``2026-09-06``, ``2026/9/6``, ``2026.09.06``,
``2026年9月6日``, ``20260906``. English month names and ``二〇二六年九月六日`` are looked for
only where that found no content. Every component the claim has must be in the source and
agree; a source may say more (``9月6日`` is supported by ``2026-09-06``), never less.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from minipi.agent.evidence.dates import valid_date
from minipi.agent.evidence.hits import Hit, HitTier, find_all
from minipi.agent.evidence.numerals import render_chinese
from minipi.agent.evidence.types import DateFigure, TimeFigure

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
