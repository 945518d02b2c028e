"""Numbers as written: in the answer (claims with their figures: digits and Chinese
numerals), and in tool output (the whole number around a hit: ``read_number``).

A hit of ``9600`` inside ``19600``, ``9600.5``, ``SKU-9600``, ``2026-09-06`` or ``10:30`` reads
as that larger token, which is not the number 9600: that is how digit boundaries are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from minipi.agent.evidence.numerals import (
    APPROX_AFTER,
    APPROX_BEFORE,
    CN_DIGITS,
    CN_UNITS,
    MAGNITUDES,
    PREFIX_UNIT,
    SUFFIX,
    canonical,
    digit_string,
    parse_chinese,
    to_ascii_digits,
)
from minipi.agent.evidence.types import Found, NumberFigure, TextFigure

__all__ = [
    "SourceNumber",
    "digit_unit",
    "find_chinese_numbers",
    "find_numbers",
    "glued_before",
    "read_chinese",
    "read_number",
]

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
        if _not_a_number(text, match):
            continue
        sign = match.group("sign")
        sign_at = match.start()
        if sign and sign_at and _joins(text[sign_at - 1]):
            sign = None  # 3-5 is a range, A-17 an identifier
        yield from _parts(text, match, sign)


def _not_a_number(text: str, match: re.Match[str]) -> bool:
    """Glued after a letter (an identifier, unless after a prefix unit: ``US$5``), or the
    start of a run of three or more digit groups (``1.2.3``)."""
    start, end = match.start("int"), match.end()
    before = text[start - 1] if start else ""
    glued = bool(before) and before.isascii() and (before.isalpha() or before in "_.")
    if glued and not PREFIX_UNIT.search(text, max(0, start - 5), start):
        return True
    return text.startswith(".", end) and text[end + 1 : end + 2].isdigit()


_NO_SUFFIX = re.compile(
    r"(?P<more>(?!))?(?P<unit>(?!))?(?P<mag>(?!))?(?P<unit2>(?!))?(?P<more2>(?!))?"
)
"""``SUFFIX``'s groups, none of them set: what follows a number that is not the last of its
comma-separated group (``1,2``: the 1)."""


def _suffix(text: str, end: int, last: bool = True) -> re.Match[str]:
    """What follows a number (``SUFFIX``, which matches the empty text too)."""
    suffix = (SUFFIX if last else _NO_SUFFIX).match(text, end)
    assert suffix is not None
    return suffix


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
    suffix = _suffix(text, end, last)
    mag = (suffix.group("mag") or "").strip()
    unit = _unit(text, start, suffix)
    lit_end = suffix.end("mag") if mag else end
    claim_end = suffix.end()
    more = bool(suffix.group("more") or suffix.group("more2"))
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


def _unit(text: str, start: int, suffix: re.Match[str]) -> str | None:
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
        value = _chinese_value(text, match)
        if value is None:
            continue
        found = _chinese(text, match, Decimal(value))
        has_unit = any(c in CN_UNITS or c in "〇零" for c in match.group("num"))
        if found is not None and (has_unit or found.unit is not None):
            yield found


def _chinese_value(text: str, match: re.Match[str]) -> int | None:
    """The value, or None (``几十万``, ``五六``); digits with a zero: one by one (九六〇〇)."""
    num, start = match.group("num"), match.start("num")
    if num[0] not in _CN_FIRST or (start and text[start - 1] in _CN_VAGUE):
        return None
    if len(num) > 1 and not any(c in CN_UNITS for c in num):
        return digit_string(num)
    return parse_chinese(num)


def _chinese(text: str, match: re.Match[str], value: Decimal) -> Found | None:
    start, end = match.span("num")
    suffix = _suffix(text, end)
    if suffix.group("mag"):
        return None  # 十万万 and the like: not a numeral we read
    percent = bool(match.group("pct"))
    unit = "%" if percent else ((suffix.group("unit") or "").strip() or None)
    claim_end = suffix.end()
    more = bool(suffix.group("more") or suffix.group("more2"))
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
    num = text[a:b]  # 九六〇〇 as an answer's is read (``_chinese_value``)
    value = digit_string(num) if len(num) > 1 and set(num).isdisjoint(CN_UNITS) else None
    if value is None and (value := parse_chinese(num)) is None:
        return None
    return SourceNumber(a, b, num, Decimal(value), text[max(0, a - 3) : a] == "百分之", False, 0)
