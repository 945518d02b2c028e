"""The vocabulary shared by claims and matching: text folded for extraction (NFKC with a map
back), Chinese numerals both ways, decimal helpers, units, magnitudes, approximation words,
month names, and the regular expressions built from them."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "APPROX_AFTER",
    "APPROX_BEFORE",
    "CN_DIGITS",
    "CN_UNITS",
    "FINANCIAL",
    "INVISIBLE",
    "MAGNITUDES",
    "MONTHS",
    "MONTH_NAMES",
    "PREFIX_UNIT",
    "SUFFIX",
    "UNIT_WORDS",
    "Folded",
    "canonical",
    "digit_string",
    "fold",
    "parse_chinese",
    "render_chinese",
    "to_ascii_digits",
]

CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_SMALL = {"十": 10, "百": 100, "千": 1000}
_BIG = {"万": 10**4, "亿": 10**8}
CN_UNITS = "".join((*_SMALL, *_BIG))

_SPECIAL = {
    "\u2212": "-",  # minus sign: NFKC keeps it, readers mean "-"
    "\u301c": "~",  # wave dash, a range or "about"
    "\uff0c": "、",  # full-width comma: see fold()
}
FINANCIAL = "壹贰貳叁參叄肆伍陆陸柒捌玖拾佰仟萬億", "一二二三三三四五六六七八九十百千万亿"
_FINANCIAL = str.maketrans(*FINANCIAL)
"""The financial numerals (大写数字: 玖仟陆佰) as the everyday ones."""
INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
"""Zero-width characters: dropped, so that ``9\u200b600`` is read as 9600, never as 9 and 600."""
_FULLWIDTH_DIGITS = "０１２３４５６７８９"
_TO_ASCII = str.maketrans(_FULLWIDTH_DIGITS + "，．－", "0123456789,.-")


@dataclass(frozen=True, slots=True)
class Folded:
    """NFKC-folded text and, for each of its code points, the index of the original one."""

    text: str
    origin: tuple[int, ...] | None
    """None when folding changed nothing (ASCII text)."""

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the folded span ``[start, end)``."""
        if self.origin is None:
            return start, end
        if end <= start:
            return self.origin[start], self.origin[start]
        return self.origin[start], self.origin[end - 1] + 1


def fold(text: str) -> Folded:
    """``text`` with NFKC applied per code point (full-width digits, ％, ．, ￥ become ASCII);
    every Unicode decimal digit as ASCII (Arabic-Indic ٩٦٠٠), financial numerals as everyday
    ones (玖仟陆佰 as 九千六百), zero-width characters dropped.

    Characters whose compatibility form holds a digit but are not digits (①, ⑴, ², ½) become
    ``•``: they are list markers or notation, never figures. The full-width comma becomes a
    thousands separator only between full-width digits (``９，６００``); after ASCII digits it
    separates items of a list (``128，256`` is two numbers), so it becomes ``、``.
    """
    if text.isascii():
        return Folded(text, None)
    out: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = _fold_char(text, index, char)
        out.append(folded)
        origin.extend([index] * len(folded))
    origin.append(len(text))
    return Folded("".join(out), tuple(origin))


def _fold_char(text: str, index: int, char: str) -> str:
    if char < "\x80":
        return char
    if char == "\uff0c" and _fullwidth_digit_around(text, index):
        return ","
    special = _SPECIAL.get(char)
    if special is not None:
        return special
    if char in INVISIBLE:
        return ""
    digit = unicodedata.decimal(char, None)  # ٩٦٠٠, ۹۶۰۰, ९६००: NFKC keeps them
    if digit is not None:
        return str(digit)
    folded = unicodedata.normalize("NFKC", char.translate(_FINANCIAL))
    if char not in _FULLWIDTH_DIGITS and any("0" <= c <= "9" for c in folded):
        return "•"
    return folded


def _fullwidth_digit_around(text: str, index: int) -> bool:
    before = text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    return before in _FULLWIDTH_DIGITS and after in _FULLWIDTH_DIGITS and bool(before)


def to_ascii_digits(text: str) -> str:
    """Full-width digits, comma, point and hyphen as ASCII (for tool output tokens)."""
    return text.translate(_TO_ASCII)


def canonical(value: Decimal) -> str:
    """A value as plain digits: no exponent, no trailing fractional zeros (``9600``, ``12.5``)."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def parse_chinese(text: str) -> int | None:
    """The value of a positional Chinese numeral, or None if ``text`` is not one.

    ``一百二十八`` 128, ``九千六百`` 9600, ``两万`` 20000, ``一百零八`` 108, ``十二`` 12; a
    last digit right after 百/千/万/亿 is read the colloquial way (``一万二`` 12000,
    ``三千五`` 3500). Digit strings without units (``五六``) are not positional: None.
    """
    reading = _ChineseReading()
    return reading.value() if all(reading.read(char) for char in text) else None


@dataclass(slots=True)
class _ChineseReading:
    """A positional numeral read so far: the ``total`` of the finished 万/亿 sections, the
    ``section`` being read, and its ``pending`` digit (a unit may still follow it)."""

    total: int = 0
    section: int = 0
    pending: int | None = None
    last_small: int = 10**4
    """The last 十/百/千 of the section: the next must be smaller."""
    last_unit: int = 1
    """The last unit read: what a colloquial last digit is a tenth of (一万二)."""
    zero: bool = False
    """A 零 since the last unit: the digit after it is a unit digit (一百零八)."""

    def read(self, char: str) -> bool:
        """Read one character; False when the text is no positional numeral."""
        if char in CN_DIGITS:
            return self._digit(CN_DIGITS[char])
        if char in _SMALL:
            return self._small(_SMALL[char])
        if char in _BIG:
            return self._big(_BIG[char])
        return False

    def value(self) -> int:
        section = self.section
        if self.pending is not None:
            colloquial = not self.zero and self.last_unit > 10
            section += self.pending * (self.last_unit // 10 if colloquial else 1)
        return self.total + section

    def _digit(self, digit: int) -> bool:
        if self.pending is not None:
            return False  # two digits in a row: 五六
        self.zero = self.zero or digit == 0
        self.pending = None if digit == 0 else digit
        return True

    def _small(self, unit: int) -> bool:
        if unit >= self.last_small:
            return False
        self.section += (1 if self.pending is None else self.pending) * unit
        self.pending, self.last_small, self.last_unit, self.zero = None, unit, unit, False
        return True

    def _big(self, big: int) -> bool:
        self.section += self.pending or 0
        if self.section == 0:
            return False
        if big > self.total:
            self.total = (self.total + self.section) * big
        else:
            self.total += self.section * big
        self.section, self.pending, self.last_small, self.zero = 0, None, 10**4, False
        self.last_unit = big
        return True


def digit_string(num: str) -> int | None:
    """Chinese digits read one by one when they hold a zero (``九六〇〇`` 9600), else None
    (``五六`` is "five or six")."""
    zero = ("〇" in num or "零" in num) and "两" not in num
    return int("".join(str(CN_DIGITS[c]) for c in num)) if zero else None


def render_chinese(number: int) -> str:
    """The usual written form of a whole number below 10**12 (9600 -> 九千六百)."""
    if number == 0:
        return "零"
    parts: list[str] = []
    for big, name in ((10**8, "亿"), (10**4, "万"), (1, "")):
        group, number = divmod(number, big)
        if group:
            if parts and group < 1000:
                parts.append("零")
            parts.append(_render_group(group) + name)
        elif parts and number:
            parts.append("零")
    text = "".join(parts)
    while "零零" in text:
        text = text.replace("零零", "零")
    text = text.rstrip("零")
    return text[1:] if text.startswith("一十") else text


def _render_group(group: int) -> str:
    digits = "零一二三四五六七八九"
    out: list[str] = []
    for unit, name in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit, group = divmod(group, unit)
        if digit:
            out.append(digits[digit] + name)
        elif out and group:
            out.append("零")
    return "".join(out).replace("零零", "零")


# Longest first, so that 个百分点 wins over 个 and 分钟 over 分.
_CJK_UNITS = (
    "个百分点",
    "百分点",
    "人民币",
    "美元",
    "港元",
    "欧元",
    "日元",
    "元",
    "块",
    "角",
    "笔",
    "单",
    "个月",
    "个",
    "件",
    "次",
    "人",
    "位",
    "名",
    "天",
    "周",
    "小时",
    "分钟",
    "秒钟",
    "秒",
    "岁",
    "行",
    "条",
    "项",
    "家",
    "台",
    "份",
    "张",
    "本",
    "页",
    "倍",
    "间",
    "套",
    "箱",
    "包",
    "瓶",
    "辆",
    "只",
    "头",
    "公斤",
    "千克",
    "克",
    "公里",
    "千米",
    "厘米",
    "毫米",
    "米",
    "吨",
    "毫升",
    "升",
    "度",
    "字节",
    "年",
    "月",
    "日",
    "号",
    "点",
    "分",
)
_ASCII_UNITS = (
    "percent",
    "pct",
    "RMB",
    "CNY",
    "USD",
    "EUR",
    "HKD",
    "bytes",
    "sec",
    "min",
    "hrs",
    "hr",
    "KB",
    "MB",
    "GB",
    "TB",
    "kg",
    "km",
    "cm",
    "mm",
    "ms",
    "%",
    "‰",
    "x",
    "×",
    "g",
    "m",
    "s",
    "h",
    "B",
)
UNIT_WORDS = tuple(sorted((*_CJK_UNITS, *_ASCII_UNITS), key=len, reverse=True))
"""Units kept on a claim and left out of its value."""

MAGNITUDES: dict[str, Decimal] = {
    "万亿": Decimal(10) ** 12,
    "百万": Decimal(10) ** 6,
    "千万": Decimal(10) ** 7,
    "亿": Decimal(10) ** 8,
    "万": Decimal(10) ** 4,
    "千": Decimal(10) ** 3,
    "thousand": Decimal(10) ** 3,
    "million": Decimal(10) ** 6,
    "billion": Decimal(10) ** 9,
    "bn": Decimal(10) ** 9,
    "mn": Decimal(10) ** 6,
    "k": Decimal(10) ** 3,
    "K": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
}


def _alternation(words: tuple[str, ...] | list[str]) -> str:
    parts = []
    for word in sorted(words, key=len, reverse=True):
        escaped = re.escape(word)
        # An ASCII word must end at a letter boundary: 128 months is not 128 m.
        parts.append(escaped + "(?![A-Za-z])" if word[-1].isascii() else escaped)
    return "|".join(parts)


_UNIT = _alternation(UNIT_WORDS)
_WORD_MAGS = ("thousand", "million", "billion", "bn", "mn")
_MAG = (
    r"(?:万亿|百万|千万|亿|万|千)"
    r"|(?:[kKM](?![A-Za-z]))"
    r"|(?:\s?(?:" + _alternation(list(_WORD_MAGS)) + "))"
)

SUFFIX = re.compile(
    r"(?P<more>多|余|\+(?![0-9]))?"
    r"(?:(?P<unit>\s?(?:" + _UNIT + r"))|(?P<mag>" + _MAG + r")(?P<unit2>\s?(?:" + _UNIT + r"))?)?"
    r"(?P<more2>多|余)?"
)
"""What may follow a number: 多/余/+, a unit, or a magnitude and a unit."""

PREFIX_UNIT = re.compile(r"(?:RMB|CNY|USD|EUR|HKD|US\$|HK\$|[¥$€£])\s?$")
APPROX_BEFORE = re.compile(
    r"(?:(?<![最附])约为|(?<![最附])大约|大概|(?<![最附])约|将近|接近|(?<![最附将接])近|差不多"
    r"|[~≈]|\b(?:about|around|approximately|approx\.|roughly|nearly|almost|ca\.))\s?$",
    re.IGNORECASE,
)
APPROX_AFTER = re.compile(r"\s?(?:左右|上下)")

MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
MONTH_NAMES = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
