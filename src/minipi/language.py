"""Which language a text is written in, for the words minipi adds to it (the CLI's log and
summary, guided mode's facts heading): one rule, so a run speaks one language."""

from __future__ import annotations

import re

__all__ = ["written_in_chinese"]

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_NAMED = re.compile(r"""(?:"[^"]*"|'[^']*'|`[^`]*`|\S*[./\\]\S*)""")


def written_in_chinese(text: str) -> bool:
    """Han characters outweigh Latin words, not counting file names, paths and quoted text
    (an English question that names ``猫咪小花.txt`` is English; ``帮我看看 reports 目录`` is
    Chinese)."""
    prose = _NAMED.sub(" ", text)
    han = len(_HAN.findall(prose))
    return han > 0 and han >= len(_LATIN_WORD.findall(prose))
