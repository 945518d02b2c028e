"""Finding a number claim in a text: the needles to look for, the slower search for other
scripts, rounded values and the nearest value, and how a number read there compares to the
claim (``compare_number``)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import Literal, TypeAlias

from minipi.evidence.match import Hit, find_all
from minipi.evidence.numbers import (
    GROUP_SPACES,
    SourceNumber,
    glued_before,
    read_chinese,
    read_number,
)
from minipi.evidence.numerals import CN_DIGITS, canonical, render_chinese
from minipi.evidence.types import NumberFigure

__all__ = [
    "Needle",
    "NumberMatcher",
    "RangeGroup",
    "Tier",
    "compare_number",
    "nearest",
    "number_needles",
    "range_regexes",
]

_FULLWIDTH = str.maketrans("0123456789,.", "０１２３４５６７８９，．")
_SPACE_GROUP = re.compile(f"[0-9][ {GROUP_SPACES}][0-9]")
_CN_DIGIT_BY_DIGIT = str.maketrans("0123456789", "〇一二三四五六七八九")


def _grouped(plain: str) -> str:
    whole, _, fraction = plain.partition(".")
    text = f"{int(whole):,}"
    return f"{text}.{fraction}" if fraction else text


def _minimal(renderings: Iterable[str]) -> list[str]:
    """Drop a rendering that contains another digit rendering: the shorter one finds it too,
    and a hit reads as the whole token around it either way."""
    kept: list[str] = []
    for text in sorted(set(renderings), key=len):
        if not any(k[0].isdigit() and k in text for k in kept):
            kept.append(text)
    return kept


@dataclass(frozen=True, slots=True)
class Needle:
    """Text to look for, and what must stand right before a hit for it to be the start of
    the number: ``287`` after ``1`` or ``1,`` finds 1287 and 1,287 in one pass of the text."""

    text: str
    prefixes: tuple[str, ...] = ("",)


def _suffix_needle(plain: str, grouped: str) -> Needle | None:
    size = 0
    while size < min(len(plain), len(grouped)) and plain[-1 - size] == grouped[-1 - size]:
        size += 1
    suffix = plain[-size:] if size else ""
    if len(suffix.strip("0.")) < 2:
        return None  # 20,000 and 20000 share only "000": too common to look for
    return Needle(suffix, (plain[:-size], grouped[:-size]))


def _renderings(figure: NumberFigure) -> set[str]:
    magnitude = abs(figure.value)
    literal = figure.literal.lstrip("+-")
    renderings = {canonical(magnitude)} | ({literal} if literal.isascii() else set())
    if _SPACE_GROUP.search(literal):  # 7 000 as written, or with a plain space
        renderings.add(_grouped(canonical(magnitude)).replace(",", " "))
    if figure.percent:
        renderings.add(canonical(magnitude / 100))
    elif figure.decimals and magnitude < 1:
        renderings.add(canonical(magnitude * 100))
    return renderings


def number_needles(figure: NumberFigure) -> tuple[Needle, ...]:
    """The usual renderings of a number, in as few passes as possible: as the answer wrote
    it if that is ASCII, plain digits (``9600``) and grouped (``9,600``) together, and as a
    fraction of a percentage or the other way round (``4.25%``, ``0.0425``)."""
    plain = canonical(abs(figure.value))
    kept = _minimal(r for r in _renderings(figure) if r)
    needles = [Needle(r) for r in kept]
    if len(plain.partition(".")[0]) >= 4:
        grouped = _grouped(plain)
        pair = _suffix_needle(plain, grouped)
        if pair is not None and plain in kept:
            needles = [n for n in needles if n.text not in (plain, grouped)] + [pair]
        elif grouped not in kept:
            needles.append(Needle(grouped))
    return tuple(needles)


RangeGroup = tuple[re.Pattern[str], ...]
"""Regexes whose matches together, in text order, are those of one range regex."""


def _same_length(low: str, high: str) -> RangeGroup:
    """Numbers of ``len(low)`` whole digits from about ``low`` to ``high``: their common
    leading digits, then a range for the next one, then any digits (``9,?[5-6][0-9][0-9]``),
    a thousands separator allowed only where one may stand (before the last 3, 6, ...
    digits).

    Each regex starts with a literal digit, so that ``re`` skips ahead to it at C speed, and
    the lookbehind sits right after it. A range of first digits (``[4-5]``) is one regex per
    digit: a character class first makes ``re`` test a set at every position, which cost 2.7x
    the two literal passes (bench/perf_evidence.py, callgrind). Matches of the split regexes
    never overlap (each holds the range's count of digits and ends at no digit), so merged in
    text order they are the class regex's. A match may start after a comma: a cell
    (``travel,89.50``, ``5,89.50``) or a thousands group, which the reader tells apart."""
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    length = len(low)
    places = list(low[:size]) + ([f"[{low[size]}-{high[size]}]"] if size < length else [])
    places += ["[0-9]"] * (length - len(places))
    # unrolled: a repeat group costs more in ``re``
    tail = "".join(_mark_before(length - i) + places[i] for i in range(1, length)) + "(?![0-9])"
    if size == 0 and int(high[0]) - int(low[0]) < 5:
        firsts = [str(d) for d in range(int(low[0]), int(high[0]) + 1)]
        return tuple(re.compile(f"{d}(?<![0-9.]{d}){tail}") for d in firsts)
    first = places[0]
    return (re.compile(f"{first}(?<![0-9.]{first}){tail}"),)


def _mark_before(digits_left: int) -> str:
    return _MARK if digits_left % 3 == 0 else ""


_MARK = f"[,{GROUP_SPACES}]?"
"""A thousands separator that may stand before a digit (``9,600``, ``9 600``)."""


@lru_cache(maxsize=256)
def range_regexes(low: int, high: int) -> tuple[RangeGroup, ...]:
    """Regexes that find (at least) every number whose whole part is in ``[low, high]``."""
    low, high = max(0, low), max(0, high)
    groups = []
    while low <= high:
        top = 10 ** len(str(low)) - 1
        groups.append(_same_length(str(low), str(min(high, top))))
        low = top + 1
    return tuple(groups)


_DIGITS = frozenset("0123456789０１２３４５６７８９")


def _after_digits(text: str, start: int) -> bool:
    """A cheap first look: a digit, or a digit and a point, right before a hit make it part
    of a larger number (``63`` in ``163``, ``1.63``). Most hits of a short needle end here,
    before the reader. A comma after a digit is left to the reader: it groups thousands
    (``1,630``) or ends a cell (``5,63``)."""
    before = text[start - 1] if start else ""
    return before in _DIGITS or (before in ".．" and start >= 2 and text[start - 2] in _DIGITS)


def _continues(text: str, end: int, fraction: bool) -> bool:
    """Whether digits after a hit make it part of a larger number (``63`` in ``637``), which
    zeros after a fraction do not (``89.5`` in ``89.50``: the reader reads it whole)."""
    if end >= len(text) or text[end] not in _DIGITS:
        return False
    return not fraction or text[end] not in "0０"


def _whole(digits: str) -> int:
    """The value of digits that may hold thousands separators (a regex's match)."""
    return int(digits if digits.isdigit() else digits.replace(",", "").translate(_NO_MARKS))


_NO_MARKS = str.maketrans(dict.fromkeys(GROUP_SPACES))


def _number_from(text: str, start: int, *, spaced: bool = False) -> SourceNumber | None:
    """The number whose digits include ``start``, or None when they are glued to a letter."""
    return None if glued_before(text, start) else read_number(text, start, spaced=spaced)


def _start(text: str, index: int, needle: Needle) -> int | None:
    for prefix in needle.prefixes:
        start = index - len(prefix)
        if start >= 0 and text.startswith(prefix, start):
            return start
    return None


class NumberMatcher:
    """Finds a ``NumberFigure`` in a text.

    A scaled figure (``9.6万``) is looked for as written and by the numbers of its
    magnitude (what lies in its interval, its centre included); any other by its needles,
    and only where those found nothing, in other scripts and by magnitude (rounded values,
    and the nearest value for a hint).
    """

    def __init__(self, figure: NumberFigure) -> None:
        self.figure = figure
        if figure.scaled:
            self.needles: tuple[Needle, ...] = (Needle(figure.literal.lstrip("+-")),)
        else:
            self.needles = number_needles(figure)
        self._windows = _windows(figure)
        target = abs(figure.value)
        self._hint = (math.floor(target * Decimal("0.9")), math.floor(target * Decimal("1.1")))

    def cost(self, text: str) -> tuple[int, int]:
        return 1, 6

    @cached_property
    def _support(self) -> tuple[RangeGroup, ...]:
        return tuple(g for a, b in self._windows for g in range_regexes(a, b))

    @cached_property
    def _wide(self) -> tuple[RangeGroup, ...]:
        return _covering((*self._windows, self._hint))

    @cached_property
    def _other(self) -> tuple[Needle, ...]:
        return _other_scripts(self.figure, self.needles)

    def hits(self, text: str) -> Iterator[Hit]:
        yield from self._read(text, self.needles)
        if self.figure.scaled and self.figure.interval is not None:
            yield from self._by_regex(text, self._support, hint=False)

    def more_hits(self, text: str) -> Iterator[Hit]:
        yield from self._read(text, self._other)
        yield from self._by_regex(text, self._wide, hint=True)

    def _by_regex(self, text: str, groups: Iterable[RangeGroup], *, hint: bool) -> Iterator[Hit]:
        """Numbers the regexes find whose whole part falls in the figure's window, read and
        compared; with ``hint``, then the one nearest the figure (a ``near`` hit). Thousands
        of numbers may share a first digit, so the others are only converted to ``int``."""
        windows = self._windows
        target = abs(self.figure.value)
        seen: set[int] = set()
        near: list[tuple[Decimal, int]] = []
        for group in groups:
            for match in _matches(group, text):
                start = match.start()
                if start in seen:
                    continue
                seen.add(start)
                whole = _whole(match.group())
                hit = None
                for low, high in windows:
                    if low <= whole <= high:
                        hit = self._check(text, start)
                        break
                if hit is not None:
                    yield hit
                elif hint and self._hint[0] <= whole <= self._hint[1]:
                    near.append((abs(whole - target), start))
        if hint:
            yield from self._nearest(text, sorted(near))

    def _check(self, text: str, start: int) -> Hit | None:
        token = _number_from(text, start)
        tier = compare_number(self.figure, token) if token is not None else None
        return Hit(token.start, token.end, tier, token.value) if token and tier else None

    def _nearest(self, text: str, candidates: list[tuple[Decimal, int]]) -> Iterator[Hit]:
        for _, start in candidates[:8]:
            token = _number_from(text, start)
            if token is not None and token.start >= start - 1:  # not 1,234 for 234
                yield Hit(token.start, token.end, "near", token.value)
                return

    def _read(self, text: str, needles: Iterable[Needle]) -> Iterator[Hit]:
        seen: set[int] = set()
        for needle in needles:
            for token in _tokens(text, needle):
                if token.start in seen:
                    continue
                seen.add(token.start)
                tier = compare_number(self.figure, token)
                if tier is not None:
                    yield Hit(token.start, token.end, tier, token.value)


def _tokens(text: str, needle: Needle) -> Iterator[SourceNumber]:
    """The numbers of ``text`` that start with a hit of ``needle``; a needle with a space
    (``7 000``) reads a plain space as a thousands separator."""
    read = _reader(needle)
    fraction = "." in needle.text or "．" in needle.text
    length = len(needle.text)
    for index in find_all(text, needle.text):
        end = index + length
        if _continues(text, end, fraction):
            continue  # inside a larger number whatever precedes (most hits of "63")
        start = _start(text, index, needle)
        if start is None or _after_digits(text, start):
            continue
        token = read(text, start)
        if token is not None:
            yield token


def _reader(needle: Needle) -> Callable[[str, int], SourceNumber | None]:
    """How the number at a hit of ``needle`` is read."""
    if needle.text[0] in CN_DIGITS or needle.text[0] == "十":
        return read_chinese
    spaced = " " in needle.text
    return lambda text, start: _number_from(text, start, spaced=spaced)


def _matches(group: RangeGroup, text: str) -> Iterable[re.Match[str]]:
    if len(group) == 1:
        return group[0].finditer(text)
    return sorted((m for regex in group for m in regex.finditer(text)), key=lambda m: m.start())


def _covering(windows: tuple[tuple[int, int], ...]) -> tuple[RangeGroup, ...]:
    """Regexes for windows, overlapping ones merged (fewer passes over the text)."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(windows):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return tuple(dict.fromkeys(g for low, high in merged for g in range_regexes(low, high)))


def _windows(figure: NumberFigure) -> tuple[tuple[int, int], ...]:
    """Whole-number ranges where a supporting value can be: the figure's interval, or the
    values that round to it; also as a fraction for a percentage."""
    half = Decimal(5) * Decimal(10) ** -(figure.decimals + 1)
    low, high = figure.interval or (figure.value - half, figure.value + half)
    spans = [(low, high)] + ([(low / 100, high / 100)] if figure.percent else [])
    return tuple(
        (math.floor(min(abs(a), abs(b))), math.floor(max(abs(a), abs(b)))) for a, b in spans
    )


def _other_scripts(figure: NumberFigure, known: tuple[Needle, ...]) -> tuple[Needle, ...]:
    """The figure as the answer wrote it when that is not ASCII (``一百二十八``, ``９６００``),
    full-width digits, and the Chinese numeral of a whole number."""
    magnitude = abs(figure.value)
    literal = figure.literal.lstrip("+-−－")
    texts = [literal] if not literal.isascii() else []
    texts.append(canonical(magnitude).translate(_FULLWIDTH))
    if magnitude == magnitude.to_integral_value() and 10 < magnitude < 10**12:
        texts.append(render_chinese(int(magnitude)))
        if "0" in str(int(magnitude)):  # digit by digit: 九六〇〇 (read so only with a zero)
            by_digit = str(int(magnitude)).translate(_CN_DIGIT_BY_DIGIT)
            texts += [by_digit, by_digit.replace("〇", "零")]
    texts = [t for t in dict.fromkeys(texts) if t not in {n.text for n in known}]
    return tuple(Needle(t) for t in texts)


def nearest(hits: Iterable[Hit], value: Decimal) -> Hit | None:
    """The hit whose value is closest to ``value`` (the first of equals)."""
    scored = [(abs(h.value - value), i, h) for i, h in enumerate(hits) if h.value is not None]
    return min(scored, key=lambda s: (s[0], s[1]))[2] if scored else None


Tier: TypeAlias = Literal["exact", "normalized", "rounded"]


def _as_claimed(figure: NumberFigure, source: SourceNumber) -> list[tuple[Decimal, int]]:
    """The source's value on the claim's scale: as is, then converted between % and a
    fraction (``12.5%`` and ``0.125``), each with its count of decimals."""
    values = [(source.value, source.decimals)]
    if figure.percent and not source.percent:
        values.append((source.value * 100, max(0, source.decimals - 2)))
    elif source.percent and not figure.percent:
        values.append((source.value / 100, source.decimals + 2))
    return values


def compare_number(figure: NumberFigure, source: SourceNumber) -> Tier | None:
    """How well ``source`` supports ``figure``: ``exact`` (same text), ``normalized`` (same
    value), ``rounded`` (in the figure's interval, or the figure rounds a more precise source
    value, or the source is itself scaled), or None."""
    for index, (value, decimals) in enumerate(_as_claimed(figure, source)):
        if index == 0 and source.literal.lstrip("+") == figure.literal.lstrip("+"):
            return "exact"
        if not figure.scaled and not source.scaled and value == figure.value:
            return "normalized"
        if _near_enough(figure, source.scaled, value, decimals):
            return "rounded"
    return None


def _near_enough(figure: NumberFigure, scaled: bool, value: Decimal, decimals: int) -> bool:
    if figure.interval is not None:
        low, high = figure.interval
        return low <= value < high
    if scaled:
        return value == figure.value
    return decimals > figure.decimals and _rounds_to(figure, value)


def _rounds_to(figure: NumberFigure, value: Decimal) -> bool:
    half = Decimal(5) * Decimal(10) ** -(figure.decimals + 1)
    return figure.value - half <= value < figure.value + half
