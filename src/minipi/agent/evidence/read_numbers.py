"""Numbers in tool output: the whole number around a hit, and how it compares to a claim.

A hit of ``9600`` inside ``19600``, ``9600.5``, ``SKU-9600``, ``2026-09-06`` or ``10:30`` reads
as that larger token, which is not the number 9600: that is how digit boundaries are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal, TypeAlias

from minipi.agent.evidence.numerals import CN_DIGITS, CN_UNITS, parse_chinese, to_ascii_digits
from minipi.agent.evidence.types import NumberFigure

__all__ = [
    "SourceNumber",
    "Tier",
    "compare_number",
    "glued_before",
    "read_chinese",
    "read_number",
]

Tier: TypeAlias = Literal["exact", "normalized", "rounded"]

_FULLWIDTH_DIGITS = frozenset("０１２３４５６７８９")
_DIGITS = frozenset("0123456789") | _FULLWIDTH_DIGITS
_SEPARATORS = frozenset(",.，．")
_JOINERS = frozenset("-/:")
_MINUS = frozenset("-−－")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_MAGNITUDE = re.compile(r"万亿|百万|千万|亿|万|千(?![克米瓦])|[kKM](?![A-Za-z])")
_MAGNITUDES = {
    "万亿": 10**12,
    "百万": 10**6,
    "千万": 10**7,
    "亿": 10**8,
    "万": 10**4,
    "千": 10**3,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
}
_CN_CHARS = frozenset(CN_DIGITS) | frozenset(CN_UNITS)


@dataclass(frozen=True, slots=True)
class SourceNumber:
    """A number in tool output: ``start``/``end`` cover its sign, digits and magnitude."""

    start: int
    end: int
    literal: str
    value: Decimal
    percent: bool
    scaled: bool
    decimals: int


def _letter(char: str) -> bool:
    return char.isascii() and (char.isalpha() or char == "_")


def _inner(text: str, index: int) -> bool:
    """``text[index]`` separates digits of one number: ``,`` ``.`` ``．`` between digits, ``，``
    only between full-width ones (``128，256`` is a list, as in the answer)."""
    if not 0 < index < len(text) - 1 or text[index] not in _SEPARATORS:
        return False
    before, after = text[index - 1], text[index + 1]
    if text[index] == "，":
        return before in _FULLWIDTH_DIGITS and after in _FULLWIDTH_DIGITS
    return before in _DIGITS and after in _DIGITS


def _extend(text: str, start: int) -> tuple[int, int]:
    """The run of digits and inner separators around ``start``."""
    a = b = start
    while a > 0 and (text[a - 1] in _DIGITS or _inner(text, a - 1)):
        a -= 1
    while b < len(text) and (text[b] in _DIGITS or _inner(text, b)):
        b += 1
    return a, b


def _comma_part(text: str, a: int, b: int, at: int) -> tuple[int, int]:
    """The comma-separated piece of ``[a, b)`` that holds ``at`` (``1,2,3`` is a list)."""
    left = max(text.rfind(",", a, at), text.rfind("，", a, at))
    right_candidates = [p for p in (text.find(",", at, b), text.find("，", at, b)) if p >= 0]
    return (a if left < 0 else left + 1), (min(right_candidates) if right_candidates else b)


def _group_start(text: str, end: int) -> int:
    while end > 0 and text[end - 1] in _DIGITS:
        end -= 1
    return end


def _in_composite(text: str, a: int, b: int) -> bool:
    """Part of a date, time, fraction or a run of three or more dash-joined groups."""
    n = len(text)
    left = a >= 2 and text[a - 1] in _JOINERS and text[a - 2] in _DIGITS
    right = b + 1 < n and text[b] in _JOINERS and text[b + 1] in _DIGITS
    if (left and text[a - 1] != "-") or (right and text[b] != "-") or (left and right):
        return True
    if left:
        c = _group_start(text, a - 1)
        return c >= 2 and text[c - 1] in _JOINERS | _SEPARATORS and text[c - 2] in _DIGITS
    if right:
        _, d = _extend(text, b + 1)
        return d + 1 < n and text[d] in _JOINERS | _SEPARATORS and text[d + 1] in _DIGITS
    return False


def _glued(text: str, a: int, b: int) -> bool:
    """Part of an identifier: after a letter (``x128``, ``SKU-0042``) or before ``_``."""
    before = text[a - 1] if a else ""
    if _letter(before) or (before in _MINUS and a >= 2 and _letter(text[a - 2])):
        return True
    return b < len(text) and text[b] == "_"


def glued_before(text: str, at: int) -> bool:
    """Whether the digits at ``at`` follow a letter (``x128``, ``SKU-0042``), which makes
    ``read_number(text, at)`` None: a cheap first look, for the many numbers of identifiers
    near a figure's value. (Neither a letter nor a minus extends the token to the left.)"""
    if not at:
        return False
    before = text[at - 1]
    return _letter(before) or (before in _MINUS and at >= 2 and _letter(text[at - 2]))


def read_number(text: str, at: int) -> SourceNumber | None:
    """The number of ``text`` whose digits include position ``at``, or None when the digits
    there belong to something else (an identifier, a date, a time, a version)."""
    a, b = _extend(text, at)
    raw = to_ascii_digits(text[a:b])
    if "," in raw and not _GROUPED.fullmatch(raw):
        a, b = _comma_part(text, a, b, at)
        raw = to_ascii_digits(text[a:b])
    if raw.count(".") > 1 or not raw or _in_composite(text, a, b) or _glued(text, a, b):
        return None
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None
    start = a
    if a and text[a - 1] in _MINUS and not (a >= 2 and text[a - 2] in _DIGITS):
        start, value = a - 1, -value  # after a digit it is a range; after a letter, glued
    end, scale = b, 1
    magnitude = _MAGNITUDE.match(text, b)
    if magnitude:
        end, scale = magnitude.end(), _MAGNITUDES[magnitude.group()]
    after = b + 1 if text[b : b + 1] == " " else b
    percent = text[after : after + 1] in ("%", "％")
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    return SourceNumber(start, end, text[start:end], value * scale, percent, scale != 1, decimals)


def read_chinese(text: str, at: int) -> SourceNumber | None:
    """The Chinese numeral of ``text`` that includes position ``at`` (九千六百)."""
    a = b = at
    while a > 0 and text[a - 1] in _CN_CHARS:
        a -= 1
    while b < len(text) and text[b] in _CN_CHARS:
        b += 1
    value = parse_chinese(text[a:b])
    if value is None:
        return None
    percent = text[max(0, a - 3) : a] == "百分之"
    return SourceNumber(a, b, text[a:b], Decimal(value), percent, False, 0)


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
