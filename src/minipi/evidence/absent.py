"""What the answer says is not there, and what a tool confirmed is not there.

A read shows what a file holds, never what no file holds: an answer that says the files lack
something rests on what was not read (``minipi.evidence.verdict``'s ``says_absent``). One
absence a tool does show: a file it was asked for and answered ``not_found``. The tool's own
record is the evidence, so a path said to be missing where the tool said so is backed
(``missing_paths``), and only there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, since_question
from minipi.evidence.scope import path_argument

if TYPE_CHECKING:
    from minipi.evidence.types import Source

__all__ = [
    "ABSENT",
    "NOT_FOUND",
    "absence_clause",
    "confirmed_missing",
    "missing_paths",
    "same_clause",
]

ABSENT = re.compile(
    r"\b(?:is|are|was|were|isn't|aren't|wasn't|weren't)?\s*not\s+(?:explicitly\s+|directly\s+)?"
    r"(?:specified|provided|mentioned|found|given|listed|stated|defined|documented|"
    r"included|available|present|recorded|shown|indicated|known)\b"
    r"|\b(?:does|do|did)(?:\s+not|n't)\s+(?:exist|mention|specify|say|state|list|contain|"
    r"include|define|show|indicate)\b"
    r"|\b(?:no|without)\s+(?:information|mention|record|data|details?|entry|entries)\b"
    r"|\b(?:cannot|can't|could\s+not|couldn't|unable\s+to)\s+(?:be\s+)?"
    r"(?:find|found|determine|determined|tell|locate|located)\b"
    r"|\bthere\s+(?:is|are)\s+no\b|\bunknown\b|\bmissing\b"
    r"|(?:没有|没|未|并未|无)(?:找到|提到|提及|写明|注明|标明|说明|指定|列出|给出|记录|记载|定义|设置|相关)"
    r"|找不到|查不到|不存在|无法(?:确定|得知|找到|判断|查到)|不清楚|未知",
    re.IGNORECASE,
)
"""Words that say something is not there: English and Chinese for "not given", "no mention",
"cannot be found", "does not exist", "there is no", "unknown"."""

NOT_FOUND = "error [not_found]"
"""How a file tool's result begins when the path it was given does not exist."""

_CLAUSE_END = re.compile(r"[;。；！？!?\n]|\.(?:\s|$)")


def absence_clause(text: str, span: tuple[int, int]) -> bool:
    """Whether the sentence of ``text`` around ``span`` says something is not there."""
    start, end = _sentence(text, span)
    return bool(ABSENT.search(text[start:end]))


def same_clause(text: str, one: tuple[int, int], other: tuple[int, int]) -> bool:
    """Whether two spans of ``text`` are in one sentence."""
    return _sentence(text, one) == _sentence(text, other)


def _sentence(text: str, span: tuple[int, int]) -> tuple[int, int]:
    start = max((m.end() for m in _CLAUSE_END.finditer(text, 0, span[0])), default=0)
    found = _CLAUSE_END.search(text, span[1])
    return start, found.start() if found else len(text)


def missing_paths(items: Sequence[Item]) -> dict[str, Source]:
    """The paths this question's tools were asked for and answered ``not_found``, each with
    that answer as its source (the latest when asked twice)."""
    from minipi.evidence.types import Source  # loaded with the check

    later = since_question(items)
    calls = {i.call_id: i for i in later if isinstance(i, FunctionCall)}
    missing: dict[str, Source] = {}
    for item in later:
        if not (isinstance(item, FunctionCallOutput) and item.output.startswith(NOT_FOUND)):
            continue
        call = calls.get(item.call_id)
        path = path_argument(call) if call is not None else None
        if call is not None and path:
            text = item.output
            missing[_bare(path)] = Source(
                item.call_id, call.name, path, "content", None, 1, 1, (0, len(text)), text
            )
    return missing


def _bare(path: str) -> str:
    return path.removeprefix("./").rstrip("/")


def confirmed_missing(value: str, missing: dict[str, Source]) -> Source | None:
    """The tool's ``not_found`` answer for the path ``value`` names, or None."""
    return missing.get(_bare(value))
