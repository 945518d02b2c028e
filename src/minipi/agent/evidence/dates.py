"""Dates and times in the answer, as claims with their figures.

Dates: ``2026-09-06``, ``2026/09/06``, ``2026.9.6``, ``2026年9月6日``, ``2026年09月06日``,
``二〇二六年九月六日``, ``9月6日`` (no year), ``2026年9月`` (no day), ``September 6, 2026``,
``Sep 6 2026``, ``6 September 2026``, ``Sep 6`` and ``September 2026``; the value is ISO
(``2026-09-06``, ``--09-06``, ``2026-09``). An impossible date (``2026-02-30``) is no date.
Times: ``10:30``, ``10:30:15``, ``10点30分``; an ISO date-time gives a date and a time.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

from minipi.agent.evidence.numerals import CN_DIGITS, parse_chinese
from minipi.agent.evidence.patterns import MONTH_NAMES, MONTHS
from minipi.agent.evidence.types import DateFigure, Found, TimeFigure

__all__ = ["date_value", "find_dates", "find_datetimes", "find_times", "valid_date"]

_HAN_DIGIT = "〇零一二三四五六七八九"
_HAN_SMALL = "一二三四五六七八九十"
_YMD = re.compile(r"(?<![0-9.\-/])([0-9]{4})([-/.])([0-9]{1,2})\2([0-9]{1,2})(?![0-9]|[.\-/][0-9])")
_CN_YMD = re.compile(r"(?<![0-9])([0-9]{4})\s*年\s*([0-9]{1,2})\s*月\s*([0-9]{1,2})\s*[日号]")
_CN_YM = re.compile(r"(?<![0-9])([0-9]{4})\s*年\s*([0-9]{1,2})\s*月(?!\s*[0-9])")
_CN_MD = re.compile(r"(?<![0-9年])([0-9]{1,2})\s*月\s*([0-9]{1,2})\s*[日号]")
_HAN_YMD = re.compile(
    rf"([{_HAN_DIGIT}]{{4}})年([{_HAN_SMALL}]{{1,3}})月(?:([{_HAN_SMALL}]{{1,3}})[日号])?"
)
_HAN_MD = re.compile(
    rf"(?<![年{_HAN_DIGIT}十])([{_HAN_SMALL}]{{1,3}})月([{_HAN_SMALL}]{{1,3}})[日号]"
)
_ORD = r"(?:st|nd|rd|th)?"
_EN_MDY = re.compile(
    rf"\b({MONTH_NAMES})\.?\s+([0-9]{{1,2}}){_ORD}(?:,\s*|\s+)([0-9]{{4}})(?![0-9])", re.IGNORECASE
)
_EN_DMY = re.compile(
    rf"(?<![0-9])([0-9]{{1,2}}){_ORD}\s+({MONTH_NAMES})\.?,?\s+([0-9]{{4}})(?![0-9])", re.IGNORECASE
)
_EN_MD = re.compile(rf"\b({MONTH_NAMES})\.?\s+([0-9]{{1,2}}){_ORD}\b(?!,?\s*[0-9])", re.IGNORECASE)
_EN_MY = re.compile(rf"\b({MONTH_NAMES})\.?,?\s+([0-9]{{4}})(?![0-9])", re.IGNORECASE)
_DATETIME = re.compile(
    r"(?<![0-9])([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})[T ](([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?)"
    r"(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?(?![0-9])"
)
_TIME = re.compile(r"(?<![0-9:.])([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?(?![0-9:])")
_CN_TIME = re.compile(r"(?<![0-9])([0-9]{1,2})\s*[点时]\s*([0-9]{1,2})\s*分(?!钟)")


def valid_date(year: int | None, month: int | None, day: int | None) -> bool:
    """A real date, or for a partial one, a possible month and day."""
    if month is not None and not 1 <= month <= 12:
        return False
    if year is not None and month is not None and day is not None:
        try:
            datetime.date(year, month, day)
        except ValueError:
            return False
        return True
    if day is not None and month is not None:
        return day <= (29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31)
    return day is None or 1 <= day <= 31


def date_value(year: int | None, month: int | None, day: int | None) -> str:
    """ISO text of a date or partial date: ``2026-09-06``, ``--09-06``, ``2026-09``."""
    if year is None:
        return f"--{month:02d}-{day:02d}"
    if day is None:
        return f"{year:04d}-{month:02d}"
    return f"{year:04d}-{month:02d}-{day:02d}"


def _date(match: re.Match[str], ymd: tuple[int | None, int | None, int | None]) -> Found | None:
    year, month, day = ymd
    if not valid_date(year, month, day):
        return None
    figure = DateFigure(year, month, day, "")
    return Found(match.start(), match.end(), "date", date_value(*ymd), None, figure, match.span())


def _month(name: str) -> int:
    return MONTHS[name[:3].lower()]


def _han_year(text: str) -> int:
    return int("".join(str(CN_DIGITS[c]) for c in text))


def _candidates(text: str) -> Iterator[Found | None]:
    for m in _YMD.finditer(text):
        yield _date(m, (int(m[1]), int(m[3]), int(m[4])))
    for m in _CN_YMD.finditer(text):
        yield _date(m, (int(m[1]), int(m[2]), int(m[3])))
    for m in _CN_YM.finditer(text):
        yield _date(m, (int(m[1]), int(m[2]), None))
    for m in _CN_MD.finditer(text):
        yield _date(m, (None, int(m[1]), int(m[2])))
    for m in _HAN_YMD.finditer(text):
        day = parse_chinese(m[3]) if m[3] else None
        yield _date(m, (_han_year(m[1]), parse_chinese(m[2]), day))
    for m in _HAN_MD.finditer(text):
        yield _date(m, (None, parse_chinese(m[1]), parse_chinese(m[2])))
    yield from _english(text)


def _english(text: str) -> Iterator[Found | None]:
    for m in _EN_MDY.finditer(text):
        yield _date(m, (int(m[3]), _month(m[1]), int(m[2])))
    for m in _EN_DMY.finditer(text):
        yield _date(m, (int(m[3]), _month(m[2]), int(m[1])))
    for m in _EN_MD.finditer(text):
        if m[1][0].isupper():  # "may 5" is more often a verb than a date
            yield _date(m, (None, _month(m[1]), int(m[2])))
    for m in _EN_MY.finditer(text):
        if m[1][0].isupper():
            yield _date(m, (int(m[2]), _month(m[1]), None))


def find_dates(text: str) -> Iterator[Found]:
    """Every date form of the module docstring; longer forms first where they overlap."""
    found = [f for f in _candidates(text) if f is not None]
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    yield from found


def _time(
    hms: tuple[int, int, int | None], span: tuple[int, int], literal: tuple[int, int]
) -> Found | None:
    hour, minute, second = hms
    if hour > 24 or minute > 59 or (second is not None and second > 59):
        return None
    value = f"{hour:02d}:{minute:02d}" + ("" if second is None else f":{second:02d}")
    figure = TimeFigure(hour, minute, second, "")
    return Found(span[0], span[1], "time", value, None, figure, literal)


def find_datetimes(text: str) -> Iterator[Found]:
    """``2026-09-06T10:30:00Z`` as a date claim and a time claim (the zone goes with it)."""
    for m in _DATETIME.finditer(text):
        ymd = (int(m[1]), int(m[2]), int(m[3]))
        second = int(m[7]) if m[7] else None
        clock = _time((int(m[5]), int(m[6]), second), (m.start(4), m.end()), m.span(4))
        if not valid_date(*ymd) or clock is None:
            continue
        figure = DateFigure(*ymd, "")
        end = m.start(4) - 1
        yield Found(m.start(), end, "date", date_value(*ymd), None, figure, (m.start(), end))
        yield clock


def find_times(text: str) -> Iterator[Found]:
    """``10:30``, ``10:30:15``, ``10点30分``."""
    for m in _TIME.finditer(text):
        second = int(m[3]) if m[3] else None
        found = _time((int(m[1]), int(m[2]), second), m.span(), m.span())
        if found is not None:
            yield found
    for m in _CN_TIME.finditer(text):
        found = _time((int(m[1]), int(m[2]), None), m.span(), m.span())
        if found is not None:
            yield found
