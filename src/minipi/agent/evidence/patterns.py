"""The vocabulary shared by the answer's extractor and the tool-output readers: units,
magnitudes, approximation words, month names, and the regular expressions built from them."""

from __future__ import annotations

import re
from decimal import Decimal

__all__ = [
    "APPROX_AFTER",
    "APPROX_BEFORE",
    "MAGNITUDES",
    "MONTHS",
    "MONTH_NAMES",
    "PREFIX_UNIT",
    "SUFFIX",
    "UNIT_WORDS",
]

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
