"""What a question asks for that an answer must say, as far as words can tell.

The verdict (``minipi.agent.verdict``) reads this for an answer whose figures are all in the
files: they may still not be the answer.

- ``computed``: the question asks for a figure no file holds, computed from them: how many
  lines or times (a count), by how much two values differ, a sum, an average. minipi checks
  the figures an answer quotes, not its arithmetic, so such an answer is never ``backed``
  (Qwen2.5-Coder-1.5B, asked which of two months had more orders and by how many, named the
  month and quoted both counts, every figure in the files, and left out the difference).
- ``left_out``: the question names a field that this question's reads hold (a JSON key, a
  ``key = value`` or ``key: value`` line, a CSV column; ``revenue`` names ``revenue_yuan``)
  and the answer states none of its values (a value the question itself says counts as
  stated). Qwen2.5-Coder-0.5B, asked for a report's date, orders and revenue, gave the date
  and the orders.

Words are Latin words of 3+ letters, cut by a light stemmer, and the English words
``GLOSSARY`` gives for common Chinese data words (``订单`` -> ``orders``: SmolLM2-135M, asked
in Chinese for a report's date, orders and revenue, gave the date alone, and it was shown as a
plain success); a question in Chinese about other English keys names no field (words cannot
tell, so nothing is left out). Outputs over
``MAX_OUTPUT`` characters are not read for fields.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from minipi.ai.types import FunctionCallOutput, Item, since_question

if TYPE_CHECKING:  # the evidence package is loaded by the check, not by `import minipi`
    from minipi.agent.evidence.types import CheckedClaim, Evidence

__all__ = ["GLOSSARY", "MAX_OUTPUT", "asks_computed", "asks_count", "glossed", "left_out"]

MAX_OUTPUT = 256 * 1024
_COUNTED = (
    r"(?:lines?|rows?|entries|entry|records?|times|occurrences?|files?|matches|errors?|warnings?)"
)
_COUNTING = (
    rf"\bhow\s+many\s+(?:\S+\s+){{0,2}}{_COUNTED}\b|\bnumber\s+of\s+(?:\S+\s+){{0,2}}{_COUNTED}\b"
    r"|\bhow\s+often\b|(?:多少|几)\s*(?:条|次|行|处)"
)
"""A question that counts lines or occurrences (``how many ERROR lines``, ``多少条``), not one
that asks for a quantity a file holds (``how many units are left``, ``还剩多少件``)."""
_COUNTS = re.compile(_COUNTING, re.IGNORECASE)
_COMPUTED = re.compile(
    rf"{_COUNTING}"
    r"|\bby\s+how\s+(?:many|much)\b|\bhow\s+(?:many|much)\s+(?:more|less|fewer|higher|lower)\b"
    r"|\bdifference\b|\bin\s+total\b|\baltogether\b|\bsum\s+of\b|\baverage\b"
    r"|[多少差高低]多少|相差|差距|总共|一共|合计|总和|总计|加起来|平均",
    re.IGNORECASE,
)
GLOSSARY = {
    "日期": "date",
    "哪天": "date",
    "一天": "date",
    "订单": "orders",
    "营收": "revenue",
    "收入": "revenue",
    "端口": "port",
    "数据": "database",
    "主机": "host",
    "超时": "timeout",
    "版本": "version",
    "部门": "department",
    "分机": "extension",
    "错误": "error",
    "密码": "password",
    "金额": "total",
    "库存": "units",
    "地区": "region",
    "几点": "time",
    "时间": "time",
    "移到": "move",
    "移动": "move",
    "名称": "name",
    "库名": "name",
}
"""English data words for common Chinese ones: a Chinese question names English keys and
columns (``营收`` -> ``revenue``), in the verdict's ``left_out`` and guided mode's ranking."""
_WORD = re.compile(r"[A-Za-z]{3,}")
_KEY_LINE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*[=:]\s*(\S.*?)\s*$")
_PARTS = re.compile(r"[A-Za-z]+")
_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "what",
        "which",
        "who",
        "how",
        "many",
        "much",
        "its",
        "does",
        "did",
        "has",
        "have",
        "this",
        "that",
        "with",
        "from",
        "into",
        "than",
        "there",
        "their",
        "file",
        "files",
    }
)


def glossed(text: str) -> set[str]:
    """The English words ``GLOSSARY`` gives for the Chinese words of ``text``."""
    pairs = (text[i : i + 2] for i in range(len(text) - 1))
    return {GLOSSARY[pair] for pair in pairs if pair in GLOSSARY}


def asks_count(question: str) -> bool:
    """Whether ``question`` counts lines or occurrences (guided mode then has a search count
    them: ``minipi.local.guided_rank.Question.counts``)."""
    return _COUNTS.search(question) is not None


def asks_computed(question: str) -> bool:
    """Whether ``question`` asks for a figure computed from the files (module docstring)."""
    return _COMPUTED.search(question) is not None


def left_out(question: str, answer: str, evidence: Evidence, items: Sequence[Item]) -> bool:
    """Whether the question names a field of this question's reads whose values the answer
    states none of (module docstring)."""
    words = {w for w in _WORD.findall(question.lower()) if w not in _STOP} | glossed(question)
    asked = {_stem(w) for w in words}
    if not asked:
        return False
    said = _normal(f"{question}\n{answer}")
    stated = _stated_keys(evidence.claims, items)
    for key, values in _fields(_this_question(items)).items():
        parts = {_stem(p) for p in _PARTS.findall(key.lower())}
        if not parts & asked or key in stated:
            continue
        if not any(_holds(said, value) for value in values):
            return True
    return False


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"(?<=\d)[,\s](?=\d{3}\b)", "", text)


def _holds(text: str, value: str) -> bool:
    value = _normal(value.strip().strip("\"'"))
    if not value:
        return False
    if value[0].isdigit() or value[-1].isdigit():  # a number: never inside another one
        return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", text) is not None
    return value in text


def _this_question(items: Sequence[Item]) -> list[FunctionCallOutput]:
    """The results that follow the last question."""
    later = since_question(items)
    return [i for i in later if isinstance(i, FunctionCallOutput) and not i.is_error]


def _fields(outputs: Sequence[FunctionCallOutput]) -> dict[str, list[str]]:
    """Field name -> the values this question's reads give it."""
    fields: dict[str, list[str]] = {}
    for output in outputs:
        if len(output.output) > MAX_OUTPUT:
            continue
        for key, value in _pairs(output.output):
            fields.setdefault(key, []).append(value)
    return fields


def _pairs(text: str) -> Iterator[tuple[str, str]]:
    """A JSON document's leaves (key, value), else ``key = value`` lines and CSV columns."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict | list):
        yield from _leaves(document)
        return
    lines = text.splitlines()
    for line in lines:
        match = _KEY_LINE.match(line)
        if match is not None:
            yield match.group(1), match.group(2)
    yield from _columns(lines)


def _leaves(document: object) -> Iterator[tuple[str, str]]:
    stack: list[tuple[str, object]] = [("", document)]
    while stack:
        key, node = stack.pop()
        if isinstance(node, Mapping):
            stack.extend((str(k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((key, v) for v in node)
        elif key and node is not None:
            yield key, node if isinstance(node, str) else json.dumps(node)


def _columns(lines: list[str]) -> Iterator[tuple[str, str]]:
    """A comma-separated table's columns: the header's names with each row's cells."""
    rows = [line.split(",") for line in lines if line.count(",") >= 1]
    if len(rows) < 2 or not all(re.fullmatch(r"[A-Za-z_][\w ]*", c.strip()) for c in rows[0]):
        return
    width = len(rows[0])
    for row in rows[1:]:
        if len(row) == width:
            yield from zip((c.strip() for c in rows[0]), (c.strip() for c in row), strict=True)


def _stated_keys(claims: Sequence[CheckedClaim], items: Sequence[Item]) -> set[str]:
    """The fields a supported claim of the answer was found in: a JSON pointer's last key,
    the key of a ``key = value`` line (a date written otherwise than in the file counts)."""
    outputs = {i.call_id: i.output for i in items if isinstance(i, FunctionCallOutput)}
    keys: set[str] = set()
    for claim in claims:
        if not claim.supported:
            continue
        for source in claim.sources:
            if source.pointer:
                keys.add(source.pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~"))
            text = outputs.get(source.call_id or "")
            if text is not None and source.origin == "content":
                start = text.rfind("\n", 0, source.range[0]) + 1
                end = text.find("\n", source.range[0])
                match = _KEY_LINE.match(text[start : end if end >= 0 else len(text)])
                if match is not None:
                    keys.add(match.group(1))
    return keys
