"""Numbers as written: in the answer (claims with their figures: digits and Chinese
numerals), and in tool output (the whole number around a hit: ``read_number``).

A hit of ``9600`` inside ``19600``, ``9600.5``, ``SKU-9600``, ``2026-09-06`` or ``10:30`` reads
as that larger token, which is not the number 9600: that is how digit boundaries are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from minipi.evidence.numerals import (
    APPROX_AFTER,
    APPROX_BEFORE,
    CN_DIGITS,
    CN_UNITS,
    MAGNITUDES,
    MONTH_NAMES,
    PREFIX_UNIT,
    SUFFIX,
    canonical,
    digit_string,
    parse_chinese,
    to_ascii_digits,
)
from minipi.evidence.types import Found, NumberFigure, TextFigure

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
_SPACED_NUMBER = re.compile(
    r"(?P<sign>[-+])?(?P<int>[0-9]{1,3}(?: [0-9]{3})+)(?![0-9]|,[0-9])(?P<frac>\.[0-9]+)?"
)
"""Thousands grouped with spaces (``7 000``; NFKC makes thin and no-break spaces plain)."""
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+")
_CHINESE = re.compile(r"(?P<pct>百分之)?(?P<num>[零〇一二两三四五六七八九十百千万亿]+)")
_MONTH_WORD = re.compile(MONTH_NAMES, re.IGNORECASE)
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
    groups are separate numbers (``9,6`` is 9 and 6). So does a space (``7 000``); such a
    number is followed by its groups read alone, which whoever takes the claims keeps where
    an earlier finder took part of it (``6 000x2``: the 6, then an identifier). A ``-`` after
    a digit is a range (``3-5``), not a sign; a number glued after a letter belongs to an
    identifier.
    """
    spaced_end = -1
    for match in _NUMBER.finditer(text):
        spaced = _spaced(text, match) if match.start() >= spaced_end else None
        if spaced is not None:
            spaced_end = spaced.end()
            yield from _found(text, spaced)
        yield from _found(text, match)


def _found(text: str, match: re.Match[str]) -> Iterator[Found]:
    if _not_a_number(text, match):
        return
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


def _spaced(text: str, match: re.Match[str]) -> re.Match[str] | None:
    """The number grouped with spaces that starts as ``match`` does (``7 000``), or None:
    not after a date's, a time's or a decimal's digits (``09-06 100``), nor otherwise no
    number."""
    spaced = _SPACED_NUMBER.match(text, match.start())
    if spaced is None:
        return None
    start = spaced.start("int")
    joined = start >= 2 and text[start - 1] in "-/.:," and text[start - 2].isdigit()
    return None if joined or _not_a_number(text, spaced) else spaced


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
    body = _ungrouped(literal.lstrip("+-"))
    if _too_long(body):
        return _as_written(text, start, end)
    decimals = _decimals(body)
    suffix = _suffix(text, end, last)
    mag = _magnitude_word(suffix)
    unit = _unit(text, start, suffix)
    claim_end = suffix.end()
    more = _more(suffix)
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
    weak = not mag and decimals == 0 and _weak_value(value, (text, start, end), unit, more)
    lit_end = suffix.end("mag") if mag else end
    return Found(
        claim_start, claim_end, "number", canonical(value), unit, figure, (start, lit_end), weak
    )


def _too_long(body: str) -> bool:
    """More than ``MAX_DIGITS`` digits: no quantity."""
    return len(body) > MAX_DIGITS + 1 and sum(c.isdigit() for c in body) > MAX_DIGITS


def _magnitude_word(suffix: re.Match[str]) -> str:
    return (suffix.group("mag") or "").strip()


def _more(suffix: re.Match[str]) -> bool:
    """多, 余 or + after the number: at least its value."""
    return bool(suffix.group("more") or suffix.group("more2"))


def _weak_value(value: Decimal, where: tuple[str, int, int], unit: str | None, more: bool) -> bool:
    """A whole number up to 10, or a year alone: shown, not counted as support."""
    if abs(value) <= 10:
        return True
    text, start, end = where
    return _year_alone(text[start:end], unit, more) and not _counts_a_noun(text, start, end)


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


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD_BEFORE = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]+) $")
_WORD_AFTER = re.compile(r" ([a-z]+)(?![A-Za-z0-9])")
_TIME_WORDS = _words(
    "in on at since by until till from during for before after through to between and or the "
    "this that these those last next early late mid end fy fiscal year vs versus circa"
)
"""Words that place a year in time (``in 2026``, ``the 2026 report``, ``FY 2026``)."""
_NOT_PLURAL = _words(
    "as is us was has does goes its his hers ours yours theirs this thus plus less "
    "unless across always perhaps whereas besides sometimes onwards towards afterwards yes"
)
"""Words ending in ``s`` that are no plural noun (``2026 was``, ``2026 onwards``)."""
_PLURALS = frozenset({"people", "children", "men", "women"})
"""Plurals without ``s``."""


def _counts_a_noun(text: str, start: int, end: int) -> bool:
    """Whether a number counts the plural noun right after it (``There were 2026 orders``):
    a count above one names what it counts in the plural, where a year is placed in time by
    the word before it (``in 2026 orders grew``, ``the 2026 reports``) or qualifies a noun
    in the singular (``2026 budget``)."""
    before = _WORD_BEFORE.search(text, max(0, start - 24), start)
    after = _WORD_AFTER.match(text, end)
    if before is None or after is None or before.group(1).lower() in _TIME_WORDS:
        return False
    word = after.group(1)
    plural = word in _PLURALS or (word.endswith("s") and word not in _NOT_PLURAL)
    return plural and not _MONTH_WORD.fullmatch(before.group(1))


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
    more = _more(suffix)
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
_LINKS = _JOINERS | _SEPARATORS
_MINUS = frozenset("-−－")
GROUP_SPACES = "\u2009\u202f\u00a0"
"""Thin, narrow no-break and no-break space: thousands separators of SI and French typography
(``7 000``), which join exact 3-digit groups of a tool's output as a comma does. A plain space
there separates columns as often (``qty price`` / ``1 200``): it joins groups only for a
figure the answer wrote so (``read_number``'s ``spaced``)."""
_SPACED = GROUP_SPACES + " "
_MARKS = ",，"
_SOURCE_GROUPED = re.compile(
    rf"\d{{1,3}}(?P<mark>[,{_SPACED}])\d{{3}}(?:(?P=mark)\d{{3}})*(?:\.\d+)?"
)
"""A thousands number: exact 3-digit groups, all after the same mark."""
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


def _inner(text: str, index: int, spaces: str = GROUP_SPACES) -> bool:
    """``text[index]`` separates digits of one number: ``,`` ``.`` ``．`` or one of ``spaces``
    between digits, ``，`` only between full-width ones (``128，256`` is a list, as in the
    answer)."""
    if not 0 < index < len(text) - 1:
        return False
    char = text[index]
    if char not in _SEPARATORS and char not in spaces:
        return False
    before, after = text[index - 1], text[index + 1]
    if char == "，":
        return before in _FULLWIDTH_DIGITS and after in _FULLWIDTH_DIGITS
    return before in _DIGITS and after in _DIGITS


def _extend(
    text: str, start: int, inner: Callable[[str, int], bool] | None = None
) -> tuple[int, int]:
    """The run of digits and inner separators (``inner``: ``_inner``) around ``start``."""
    joins = inner or _inner
    a = b = start
    while a > 0 and (text[a - 1] in _DIGITS or joins(text, a - 1)):
        a -= 1
    while b < len(text) and (text[b] in _DIGITS or joins(text, b)):
        b += 1
    return a, b


def _piece(text: str, at: int) -> tuple[int, int]:
    """The digits around ``at`` with the points between them: a number, or one group or
    cell of a longer run (``1,234``, ``5,89.50``)."""
    return _extend(text, at, _inner_point)


def _inner_point(text: str, index: int) -> bool:
    return text[index] in ".．" and _inner(text, index)


def _mark(text: str, index: int, spaces: str) -> str:
    """The comma (``，`` as ``,``) or one of ``spaces`` at ``index`` between digits, else
    ``""``."""
    if not 0 < index < len(text) or text[index] not in _MARKS + spaces:
        return ""
    return ("," if text[index] == "，" else text[index]) if _inner(text, index, spaces) else ""


_MAX_GROUPS = MAX_DIGITS // 3 + 1
"""A thousands number has at most this many groups: a longer run of 3-digit groups is a list
(a row of 3-digit cells), as a run of more than ``MAX_DIGITS`` digits is no quantity."""


def _thousands(text: str, piece: tuple[int, int], spaces: str) -> tuple[int, int] | None:
    """The thousands number that ``piece`` is a group of: the run of pieces around it that
    one mark joins, 1-3 digits then exact 3-digit groups, a fraction only at the end, at most
    ``_MAX_GROUPS``; None when no mark joins it or the run is no such number (``9,6``,
    ``5,89.50``, ``1,234,56``: a list). The walk stops at the first group that breaks the
    rule, so a long list costs no more than its neighbours."""
    a, b = piece
    if _whole_digits(text, a, b) > 3:
        return None
    marks: list[str] = []
    start, end = _run_start(text, a, spaces, marks), _run_end(text, b, spaces, marks)
    if not marks or min(start, end) < 0 or len(set(marks)) > 1 or len(marks) >= _MAX_GROUPS:
        return None
    return (start, end) if _SOURCE_GROUPED.fullmatch(to_ascii_digits(text[start:end])) else None


def _whole_digits(text: str, a: int, b: int) -> int:
    points = [p for p in (text.find(".", a, b), text.find("．", a, b)) if p >= 0]
    return min(points, default=b) - a


def _run_start(text: str, a: int, spaces: str, marks: list[str]) -> int:
    """The start of the run of groups that ends with the piece at ``a``, or -1 when a group
    before it breaks the rule."""
    while (mark := _mark(text, a - 1, spaces)) and len(marks) < _MAX_GROUPS:
        marks.append(mark)
        a = _group_before(text, a - 1, spaces)
        if a < 0:
            return -1
    return a


def _group_before(text: str, end: int, spaces: str) -> int:
    """The start of the group that ends at the mark at ``end``: 3 digits after another mark,
    1-3 digits where the run starts; -1 for any other."""
    start = end
    while start > end - 4 and start > 0 and text[start - 1] in _DIGITS:
        start -= 1
    size = end - start
    if _mark(text, start - 1, spaces):
        return start if size == 3 else -1
    joined = start > 0 and (text[start - 1] in _DIGITS or _inner_point(text, start - 1))
    return start if size <= 3 and not joined else -1


def _run_end(text: str, b: int, spaces: str, marks: list[str]) -> int:
    """The end of the run of groups that starts with the piece ending at ``b`` (its fraction
    included), or -1 when a group after it breaks the rule."""
    while (mark := _mark(text, b, spaces)) and len(marks) < _MAX_GROUPS:
        marks.append(mark)
        if _digits_from(text, b + 1, 4) != 3:
            return -1
        b += 4
    if b < len(text) and _inner_point(text, b):
        b = _piece(text, b + 1)[1]
        return -1 if _mark(text, b, spaces) else b
    return b


def _digits_from(text: str, start: int, most: int) -> int:
    """How many digits stand from ``start`` on, counted up to ``most``."""
    end = start
    while end < start + most and end < len(text) and text[end] in _DIGITS:
        end += 1
    return end - start


def _group_start(text: str, end: int) -> int:
    while end > 0 and text[end - 1] in _DIGITS:
        end -= 1
    return end


def _in_composite(text: str, a: int, b: int) -> bool:
    """Part of a date, time, fraction or a run of three or more dash-joined groups."""
    left, right = _joiner_before(text, a), _joiner_after(text, b)
    if (left and right) or left not in ("", "-") or right not in ("", "-"):
        return True  # 2026-09-06's middle, 10:30, 3/4
    if left:
        return _linked_before(text, _group_start(text, a - 1))
    if right:
        return _linked_after(text, _extend(text, b + 1)[1])
    return False


def _joiner_before(text: str, a: int) -> str:
    """The ``-`` ``/`` or ``:`` right before ``a`` that follows a digit, else ``""``."""
    joins = a >= 2 and text[a - 1] in _JOINERS and text[a - 2] in _DIGITS
    return text[a - 1] if joins else ""


def _joiner_after(text: str, b: int) -> str:
    """The ``-`` ``/`` or ``:`` at ``b`` that a digit follows, else ``""``."""
    joins = b + 1 < len(text) and text[b] in _JOINERS and text[b + 1] in _DIGITS
    return text[b] if joins else ""


def _linked_before(text: str, c: int) -> bool:
    """A joiner or separator between digits right before ``c``."""
    return c >= 2 and text[c - 1] in _LINKS and text[c - 2] in _DIGITS


def _linked_after(text: str, d: int) -> bool:
    """A joiner or separator between digits at ``d``."""
    return d + 1 < len(text) and text[d] in _LINKS and text[d + 1] in _DIGITS


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


def read_number(text: str, at: int, *, spaced: bool = False) -> SourceNumber | None:
    """The number of ``text`` whose digits include position ``at``, or None when the digits
    there belong to something else (an identifier, a date, a time, a version).

    Thousands are grouped with commas or ``GROUP_SPACES``; with ``spaced`` a plain space
    groups them too (``7 000``)."""
    a, b, raw = _digits_at(text, at, _SPACED if spaced else GROUP_SPACES)
    value = _plain_value(text, (a, b), raw)
    if value is None:
        return None
    start, value = _signed(text, a, value)
    end, scale = _scale(text, b)
    literal = text[start:end]
    return SourceNumber(
        start, end, literal, value * scale, _percent_after(text, b), scale != 1, _decimals(raw)
    )


def _digits_at(text: str, at: int, spaces: str) -> tuple[int, int, str]:
    """The digits around ``at``, and them in ASCII: the thousands number they are a group
    of, else the piece between commas or ``spaces`` (a cell, an item of a list)."""
    piece = _piece(text, at)
    a, b = _thousands(text, piece, spaces) or piece
    return a, b, to_ascii_digits(text[a:b])


def _plain_value(text: str, span: tuple[int, int], raw: str) -> Decimal | None:
    """The value of the digits ``raw`` at ``span``, or None when they are no number."""
    a, b = span
    if raw.count(".") > 1 or not raw or _in_composite(text, a, b) or _glued(text, a, b):
        return None
    try:
        return Decimal(_ungrouped(raw))
    except InvalidOperation:
        return None


def _signed(text: str, a: int, value: Decimal) -> tuple[int, Decimal]:
    """The start and value with the minus before ``a``: after a digit it is a range, after
    a letter the number is glued (never read)."""
    if a and text[a - 1] in _MINUS and not (a >= 2 and text[a - 2] in _DIGITS):
        return a - 1, -value
    return a, value


def _scale(text: str, b: int) -> tuple[int, int]:
    """The end of the number and its scale, with the magnitude after ``b`` (``9.6万``)."""
    magnitude = _MAGNITUDE.match(text, b)
    if magnitude is None:
        return b, 1
    return magnitude.end(), _MAGNITUDES[magnitude.group()]


def _percent_after(text: str, b: int) -> bool:
    after = b + 1 if text[b : b + 1] == " " else b
    return text[after : after + 1] in ("%", "％")


def _ungrouped(digits: str) -> str:
    """``digits`` without their thousands separators."""
    return digits.replace(",", "").translate(_NO_SPACES)


_NO_SPACES = str.maketrans(dict.fromkeys(_SPACED))


def _decimals(digits: str) -> int:
    """How many digits follow the point."""
    return len(digits.split(".")[1]) if "." in digits else 0


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
