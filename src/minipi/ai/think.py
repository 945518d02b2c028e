"""``<think>…</think>`` blocks: reasoning that some chat templates put in the content."""

from __future__ import annotations

import re

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL)


def strip_think(text: str) -> str:
    """``text`` without ``<think>…</think>`` blocks (an unclosed block runs to the end)."""
    if "<think>" not in text:
        # Some chat templates open the block in the prompt: only its end reaches us.
        return text.rpartition("</think>")[2]
    return _THINK.sub("", text).rpartition("</think>")[2]
