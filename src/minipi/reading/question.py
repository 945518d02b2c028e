"""The caller's question as a value: read once at the start of a run, and carried.

Every reader of the question (the verdict, guided mode, the CLI's language) takes this value
instead of digging the last user message out of the history, where minipi's own messages
(a nudge, a retry request) could pass for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from minipi.language import written_in_chinese
from minipi.reading.paths import named, path_spans
from minipi.reading.words import words

__all__ = ["NO_QUESTION", "Question"]

_COUNTED = r"(?:lines?|rows?|entries|entry|records?|items?|times|occurrences?|files?|matches)"
_COUNTING = (
    rf"\bhow\s+many\s+(?:\S+\s+){{0,2}}{_COUNTED}\b|\bnumber\s+of\s+(?:\S+\s+){{0,2}}{_COUNTED}\b"
    r"|\bhow\s+often\b|(?:多少|几)\s*(?:条|次|行|处|项|个文件)"
)
_ARITHMETIC = re.compile(
    rf"{_COUNTING}"
    r"|\bby\s+how\s+(?:many|much)\b|\bhow\s+(?:many|much)\s+(?:more|less|fewer|higher|lower)\b"
    r"|\bdifference\b|\bin\s+total\b|\baltogether\b|\bsum\s+of\b|\baverage\b|\bmean\b"
    r"|[多少差高低]多少|相差|差距|总共|一共|合计|总和|总计|加起来|平均",
    re.IGNORECASE,
)
"""The words of arithmetic in either language (a count of lines or rows, a difference, a
sum, a total, an average): a closed class of the language, not of any one file's keys."""
_COUNTS = re.compile(_COUNTING, re.IGNORECASE)
_TOTAL = re.compile(r"\btotals?\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Question:
    """``text`` as the caller wrote it; ``language`` ``zh`` when it is written in Chinese
    (``minipi.language``: the one rule the CLI's words follow too), else ``en``; ``names``:
    the files and folders (``dir/``) it names;
    ``words``: its words (``minipi.reading.words``); ``figure``: ``count`` when it counts lines
    or occurrences, ``computed`` when it asks for another figure computed from the files (a
    sum, a difference, an average), else None."""

    text: str
    language: Literal["zh", "en"] = "en"
    names: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    figure: Literal["count", "computed"] | None = None

    @classmethod
    def of(cls, text: str) -> Question:
        """The question ``text`` read once."""
        bare = text
        for start, end, _ in sorted(path_spans(text), reverse=True):
            bare = bare[:start] + " " + bare[end:]
        language: Literal["zh", "en"] = "zh" if written_in_chinese(text) else "en"
        figure: Literal["count", "computed"] | None = None
        if _COUNTS.search(text):
            figure = "count"
        elif _ARITHMETIC.search(text):
            figure = "computed"
        return cls(text, language, named(text), words(bare), figure)

    @property
    def total(self) -> bool:
        """It asks for a total: computed, unless a read holds a field of that name (an
        invoice's ``total``); the verdict reads the fields (``minipi.evidence.asked``)."""
        return _TOTAL.search(self.text) is not None

    @property
    def computed(self) -> bool:
        """It asks for a figure computed from the files (a count among them)."""
        return self.figure is not None

    def states(self, value: str) -> bool:
        """Whether the question itself says ``value`` (case- and width-insensitive): a claim
        that only restates it carries no information."""
        return bool(value) and _fold(value) in _fold(self.text)


NO_QUESTION = Question("")
"""The question of a run that has none (a history with no user message of the caller's)."""


def _fold(text: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFKC", text).casefold()
