"""Numbers in the answer (digits and Chinese numerals), as claims with their figures."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

from minipi.agent.evidence.numerals import CN_UNITS, canonical, parse_chinese
from minipi.agent.evidence.patterns import (
    APPROX_AFTER,
    APPROX_BEFORE,
    MAGNITUDES,
    PREFIX_UNIT,
    SUFFIX,
)
from minipi.agent.evidence.types import Found, NumberFigure, TextFigure

__all__ = ["digit_unit", "find_chinese_numbers", "find_numbers"]

_NUMBER = re.compile(r"(?P<sign>[-+])?(?P<int>[0-9]+(?:,[0-9]+)*)(?P<frac>\.[0-9]+)?")
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+")
_CHINESE = re.compile(r"(?P<pct>百分之)?(?P<num>[零〇一二两三四五六七八九十百千万亿]+)")
_CN_FIRST = "一二两三四五六七八九十"
_CN_VAGUE = "几数上成好千"  # 几十万, 数百, 上万, 成千: not a figure
_PERCENT_UNITS = ("%", "percent", "pct")
MAX_DIGITS = 28
"""A longer run of digits is no quantity (a hash, a serial number, a runaway answer): it is
matched as written, like an identifier. 28 is the precision of ``decimal``'s arithmetic, and
``int()`` refuses to convert a string of more than 4300 digits."""


def find_numbers(text: str) -> Iterator[Found]:
    """Digit numbers with their sign, prefix unit, magnitude, unit and approximation.

    A comma makes a thousands number only with exact 3-digit groups (``9,600``); otherwise the
    groups are separate numbers (``9,6`` is 9 and 6). A ``-`` after a digit is a range
    (``3-5``), not a sign; a number glued after a letter belongs to an identifier.
    """
    for match in _NUMBER.finditer(text):
        start = match.start("int")
        before = text[start - 1] if start else ""
        glued = bool(before) and before.isascii() and (before.isalpha() or before in "_.")
        if glued and not PREFIX_UNIT.search(text, max(0, start - 5), start):
            continue
        if text.startswith(".", match.end()) and text[match.end() + 1 : match.end() + 2].isdigit():
            continue
        sign = match.group("sign")
        sign_at = match.start()
        if sign and sign_at and _joins(text[sign_at - 1]):
            sign = None  # 3-5 is a range, A-17 an identifier
        yield from _parts(text, match, sign)


def _as_written(text: str, start: int, end: int) -> Found:
    token = text[start:end].lstrip("+-")
    start = end - len(token)
    return Found(start, end, "identifier", token, None, TextFigure(token, ""), (start, end))


def _joins(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _parts(text: str, match: re.Match[str], sign: str | None) -> Iterator[Found]:
    digits = match.group("int")
    start = match.start("int")
    if "," not in digits or _GROUPED.fullmatch(digits):
        yield _number(text, (match.start() if sign else start, match.end()), sign, True)
        return
    offset = start
    pieces = digits.split(",")
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        end = match.end() if last else offset + len(piece)
        first_start = match.start() if sign and index == 0 else offset
        yield _number(text, (first_start, end), sign if index == 0 else None, last)
        offset += len(piece) + 1


def _number(text: str, span: tuple[int, int], sign: str | None, last: bool) -> Found:
    start, end = span
    literal = text[start:end]
    body = literal.lstrip("+-").replace(",", "")
    if len(body) > MAX_DIGITS + 1 and sum(c.isdigit() for c in body) > MAX_DIGITS:
        return _as_written(text, start, end)
    decimals = len(body.split(".")[1]) if "." in body else 0
    suffix = SUFFIX.match(text, end) if last else None
    mag = (suffix.group("mag") or "").strip() if suffix else ""
    unit = _unit(text, start, suffix)
    lit_end = suffix.end("mag") if mag and suffix else end
    claim_end = suffix.end() if suffix and suffix.group() else end
    more = bool(suffix and (suffix.group("more") or suffix.group("more2")))
    scale = MAGNITUDES.get(mag, Decimal(1))
    value = Decimal(body) * scale * (-1 if sign == "-" else 1)
    approx = _approximate(text, start, claim_end)
    figure = NumberFigure(
        value=value,
        literal="",
        percent=unit in _PERCENT_UNITS,
        scaled=bool(mag),
        interval=_interval(value, body, decimals, scale, bool(mag), approx, more),
        decimals=decimals,
    )
    claim_start = _prefix_start(text, start)
    weak = not mag and decimals == 0 and (abs(value) <= 10 or _year_alone(literal, unit, more))
    return Found(
        claim_start, claim_end, "number", canonical(value), unit, figure, (start, lit_end), weak
    )


def _unit(text: str, start: int, suffix: re.Match[str] | None) -> str | None:
    if suffix:
        unit = (suffix.group("unit") or suffix.group("unit2") or "").strip()
        if unit:
            return "%" if unit in _PERCENT_UNITS else unit
    prefix = PREFIX_UNIT.search(text, max(0, start - 5), start)
    return prefix.group().strip() if prefix else None


def _prefix_start(text: str, start: int) -> int:
    prefix = PREFIX_UNIT.search(text, max(0, start - 5), start)
    return prefix.start() if prefix else start


def _approximate(text: str, start: int, end: int) -> bool:
    first = _prefix_start(text, start)
    before = APPROX_BEFORE.search(text, max(0, first - 16), first)
    return bool(before or APPROX_AFTER.match(text, end))


def digit_unit(body: str, decimals: int) -> Decimal:
    """The place of the last written digit that counts: 0.1 for ``9.6``, 100 for ``9600``."""
    if decimals:
        return Decimal(10) ** -decimals
    whole = body.split(".")[0]
    zeros = len(whole) - len(whole.rstrip("0"))
    return Decimal(10) ** min(zeros, len(whole) - 1)


def _interval(
    value: Decimal,
    body: str,
    decimals: int,
    scale: Decimal,
    scaled: bool,
    approx: bool,
    more: bool,
) -> tuple[Decimal, Decimal] | None:
    if more:
        step = digit_unit(body, decimals) * scale
        return value, value + step
    if scaled:
        half = Decimal(10) ** -decimals * scale / 2
    elif approx:
        half = digit_unit(body, decimals) / 2
    else:
        return None
    return value - half, value + half


def _year_alone(literal: str, unit: str | None, more: bool) -> bool:
    return (
        literal.isdigit()
        and len(literal) == 4
        and 1900 <= int(literal) <= 2100
        and unit in (None, "年")
        and not more
    )


def find_chinese_numbers(text: str) -> Iterator[Found]:
    """Positional Chinese numerals (一百二十八, 九千六百, 两万) and 百分之…; a single numeral
    counts only before a measure word (``两个``), so 一些 or 统一 make no claim."""
    for match in _CHINESE.finditer(text):
        num = match.group("num")
        start = match.start("num")
        if num[0] not in _CN_FIRST or (start and text[start - 1] in _CN_VAGUE):
            continue
        value = parse_chinese(num)
        has_unit = any(c in CN_UNITS for c in num)
        if value is None or (len(num) > 1 and not has_unit):
            continue
        found = _chinese(text, match, Decimal(value))
        if found is not None and (has_unit or found.unit is not None):
            yield found


def _chinese(text: str, match: re.Match[str], value: Decimal) -> Found | None:
    start, end = match.span("num")
    suffix = SUFFIX.match(text, end)
    if suffix and suffix.group("mag"):
        return None  # 十万万 and the like: not a numeral we read
    percent = bool(match.group("pct"))
    unit_text = (suffix.group("unit") or "").strip() if suffix else ""
    unit = "%" if percent else (unit_text or None)
    claim_end = suffix.end() if suffix and suffix.group() else end
    more = bool(suffix and (suffix.group("more") or suffix.group("more2")))
    approx = _approximate(text, match.start(), claim_end)
    body = str(value)
    figure = NumberFigure(
        value=value,
        literal="",
        percent=percent,
        interval=_interval(value, body, 0, Decimal(1), False, approx, more),
    )
    weak = value <= 10
    return Found(
        match.start(), claim_end, "number", canonical(value), unit, figure, (start, end), weak
    )
