"""The claims of an answer: the figures a reader would check against the files.

The answer is folded first (``numerals.fold``: NFKC per code point); spans map back to the
answer as given. Finders run in order and a later one never takes text an earlier one took:
list markers and citations (never claims), paths (``statements``), quoted text, ISO
date-times, identifiers, dates,
times, other digit groups (``192.168.1.1``), numbers, Chinese numerals (``numbers``). So a
number inside an identifier (``SKU-0042``) or a date is not a claim of its own.

Dates: ``2026-09-06``, ``2026/09/06``, ``2026.9.6``, ``2026年9月6日``, ``2026年09月06日``,
``二〇二六年九月六日``, ``9月6日`` (no year), ``2026年9月`` (no day), ``September 6, 2026``,
``Sep 6 2026``, ``6 September 2026``, ``Sep 6`` and ``September 2026``; the value is ISO
(``2026-09-06``, ``--09-06``, ``2026-09``). An impossible date (``2026-02-30``) is no date.
Times: ``10:30``, ``10:30:15``, ``10点30分``; an ISO date-time gives a date and a time.
"""

from __future__ import annotations

import bisect
import datetime
import itertools
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import replace

from minipi.evidence.numbers import find_chinese_numbers, find_numbers
from minipi.evidence.numerals import CN_DIGITS, MONTH_NAMES, MONTHS, fold, parse_chinese
from minipi.evidence.statements import find_changes, find_paths
from minipi.evidence.types import Claim, DateFigure, Found, TextFigure, TimeFigure

__all__ = [
    "date_value",
    "extract_claims",
    "find_composites",
    "find_dates",
    "find_datetimes",
    "find_identifiers",
    "find_quotes",
    "find_times",
    "valid_date",
]

Finder = Callable[[str], Iterator[Found]]

_LIST_MARKER = re.compile(
    r"(?m)^[ \t>]*(?:[-*+•][ \t]+)?(?:#+[ \t]*)?(?:[0-9]{1,3}[.)、]|\([0-9]{1,3}\))"
    r"(?=[ \t]|[^\x00-\x7f]|$)"
)
_SMALL_PAREN = re.compile(r"\((?:[1-9]|1[0-9]|20)\)")
_CITATION = re.compile(r"\[\^?[0-9]{1,3}(?:[,\-–]\s?[0-9]{1,3})*\]|【[0-9]{1,3}】")
_QUOTES = (
    # (opening, closing, always a claim); curly and book quotes are also used for emphasis in
    # Chinese, so they make a claim only around text that has an ASCII letter or digit.
    ("'", "'", True),
    ('"', '"', True),
    ("`", "`", True),
    ("「", "」", True),
    ("『", "』", True),
    ("‘", "’", False),
    ("“", "”", False),
    ("《", "》", False),
)
_QUOTE_RES = tuple(
    (
        re.compile(
            (r"(?<![A-Za-z0-9])" if opening.isascii() else "")
            + re.escape(opening)
            + r"([^"
            + re.escape(closing)
            + r"\n]{1,200})"
            + re.escape(closing)
            + (r"(?![A-Za-z0-9])" if closing.isascii() else "")
        ),
        always,
    )
    for opening, closing, always in _QUOTES
)
_LONE_FIGURE = re.compile(
    r"[0-9\s.,:/\-+%~年月日号点时分秒元¥$零〇一二两三四五六七八九十百千万亿]+"
)
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_./\\-])[A-Za-z0-9_]+(?:[-_./][A-Za-z0-9_]+)*")
_NUMBER_WORD = re.compile(
    r"[0-9.,]+(?:st|nd|rd|th|k|K|M|bn|mn|x|kg|km|cm|mm|ms|s|sec|min|h|hr|hrs|g|m|B|KB|MB"
    r"|GB|TB|pct|am|pm)"
)
_COMPOSITE = re.compile(r"(?<![0-9.\-/:])[0-9]+(?:[.\-/:][0-9]+){2,}(?![0-9])(?!\.[0-9])")


def extract_claims(answer: str, names: Collection[str] = ()) -> tuple[Claim, ...]:
    """The claims of ``answer`` in answer order (see the package docstring for the rules);
    ``names``: values the reads hold that are claims where the answer writes them
    (``find_names``)."""
    folded = fold(answer)
    text = folded.text
    taken = _Taken()
    for match in _reserved(text):
        taken.take(*match.span())
    found: list[Found] = []
    finders = (finder(text) for finder in _FINDERS)
    for item in itertools.chain(*finders, find_names(text, names)):
        if item.end > item.start and taken.take(item.start, item.end):
            found.append(item)
    found += find_changes(text)  # a sentence: it holds the figures it names
    claims = [_to_claim(answer, folded.span, item) for item in found]
    return tuple(sorted(claims, key=lambda c: c.span))


def _reserved(text: str) -> Iterator[re.Match[str]]:
    yield from _LIST_MARKER.finditer(text)
    yield from _SMALL_PAREN.finditer(text)
    yield from _CITATION.finditer(text)


class _Taken:
    """Disjoint spans of the answer already taken, sorted by start."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def take(self, start: int, end: int) -> bool:
        """Take ``[start, end)`` unless it overlaps a span taken before; say whether it did."""
        index = bisect.bisect_left(self._starts, start)
        if index < len(self._starts) and self._starts[index] < end:
            return False
        if index and self._ends[index - 1] > start:
            return False
        self._starts.insert(index, start)
        self._ends.insert(index, end)
        return True


def _to_claim(answer: str, span: Callable[[int, int], tuple[int, int]], item: Found) -> Claim:
    start, end = span(item.start, item.end)
    lit_start, lit_end = span(*item.literal)
    figure = replace(item.figure, literal=answer[lit_start:lit_end])
    return Claim(
        text=answer[start:end],
        kind=item.kind,
        value=item.value,
        unit=item.unit,
        span=(start, end),
        figure=figure,
        weak=item.weak,
    )


def find_quotes(text: str) -> Iterator[Found]:
    """Text between quotes; a quoted lone figure (``'9600'``) is left to its own finder."""
    matches = sorted(
        ((m, always) for regex, always in _QUOTE_RES for m in regex.finditer(text)),
        key=lambda pair: pair[0].start(),
    )
    for match, always in matches:
        inner = match.group(1)
        stripped = inner.strip()
        if not stripped or _LONE_FIGURE.fullmatch(stripped):
            continue
        if not always and not re.search(r"[A-Za-z0-9]", stripped):
            continue
        start = match.start(1) + inner.index(stripped)
        end = start + len(stripped)
        yield Found(
            match.start(),
            match.end(),
            "quote",
            stripped,
            None,
            TextFigure(stripped, ""),
            (start, end),
        )


def find_names(text: str, names: Collection[str]) -> Iterator[Found]:
    """Where ``text`` writes one of ``names`` (a person, a plan, a vendor: values of the
    reads' fields and table cells that read as names, ``is_name``), as a quote: matched
    whole, case-insensitively; a Latin name between non-word characters."""
    lowered = text.casefold()
    for name in sorted(names, key=len, reverse=True):
        folded = fold(name).text
        if folded.casefold() not in lowered:  # one substring search before any regex
            continue
        before, after = ("", "") if _HAN.search(folded) else (r"(?<!\w)", r"(?!\w)")
        for match in re.finditer(before + re.escape(folded) + after, text, re.IGNORECASE):
            start, end = match.span()
            literal = text[start:end]
            yield Found(start, end, "quote", literal, None, TextFigure(literal, ""), (start, end))


def is_name(value: str) -> bool:
    """A value that reads as a name: 2 to 40 characters on one line, with a Han character,
    or with both an upper- and a lower-case Latin letter (``Yuki Kowalski``, ``Corvid``; not
    ``INFO``, ``EUR`` or ``nearline``), no path, not yes or no."""
    if not 2 <= len(value) <= 40 or "\n" in value or "/" in value:
        return False
    if value.casefold() in _NOT_NAMES:
        return False
    return bool(_HAN.search(value)) or bool(_UPPER.search(value) and _LOWER.search(value))


_HAN = re.compile(r"[\u4e00-\u9fff]")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_NOT_NAMES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null"})


def find_identifiers(text: str) -> Iterator[Found]:
    """Tokens that mix letters and digits or join parts with ``_`` (``A-17``, ``step2.txt``,
    ``revenue_yuan``); a hyphen alone does not make one (``well-known``)."""
    for match in _IDENTIFIER.finditer(text):
        token = match.group()
        if _is_identifier(token):
            yield Found(
                match.start(),
                match.end(),
                "identifier",
                token,
                None,
                TextFigure(token, ""),
                match.span(),
            )


def _is_identifier(token: str) -> bool:
    if not re.search(r"[A-Za-z]", token) or _NUMBER_WORD.fullmatch(token):
        return False
    if re.search(r"[0-9]", token) or "_" in token:
        return True
    parts = re.split(r"[-./]", token)
    return "-" in token and any(len(p) >= 2 and p.isupper() for p in parts)


def find_composites(text: str) -> Iterator[Found]:
    """Three or more digit groups that are not a date or time (``192.168.1.1``, ``1.2.3``,
    ``138-1234-5678``): matched as they are written, like an identifier."""
    for match in _COMPOSITE.finditer(text):
        token = match.group()
        yield Found(
            match.start(),
            match.end(),
            "identifier",
            token,
            None,
            TextFigure(token, ""),
            match.span(),
        )


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


_MONTH_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def valid_date(year: int | None, month: int | None, day: int | None) -> bool:
    """A real date, or for a partial one, a possible month and day."""
    if month is not None and not 1 <= month <= 12:
        return False
    if day is None:
        return True
    if month is None:
        return 1 <= day <= 31
    if year is None:
        return day <= _MONTH_DAYS[month]
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


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


_FINDERS: tuple[Finder, ...] = (
    find_paths,
    find_quotes,
    find_datetimes,
    find_identifiers,
    find_dates,
    find_times,
    find_composites,
    find_numbers,
    find_chinese_numbers,
)
