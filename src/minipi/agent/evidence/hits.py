"""What a matcher reports: a place in a text where a claim's figure is, and how well."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal, Protocol, TypeAlias

__all__ = ["Hit", "HitTier", "Matcher", "find_all"]

HitTier: TypeAlias = Literal["exact", "normalized", "rounded", "near"]


@dataclass(frozen=True, slots=True)
class Hit:
    """``[start, end)`` of the text holds the figure (``near``: another value, for a hint)."""

    start: int
    end: int
    tier: HitTier
    value: Decimal | None = None


class Matcher(Protocol):
    """Finds one claim's figure in a text. ``hits`` looks for the usual renderings (cheap: a
    few ``str.find`` or one anchored regex over the text); ``more_hits`` for the rest (other
    scripts, rounded values, near values), run only where ``hits`` found no content."""

    def hits(self, text: str) -> Iterator[Hit]: ...

    def more_hits(self, text: str) -> Iterator[Hit]: ...


def find_all(text: str, needle: str) -> Iterator[int]:
    """Every start of ``needle`` in ``text`` (overlapping ones too).

    A needle with a character whose code unit is rare in memory (``万``, ``三``, full-width
    digits; see ``_probe``) is looked for only if that character is in the text: one search
    for a single character runs at ``memchr`` speed, about 8x faster than one for a short
    string, and most tool output holds no such character (bench/perf_evidence.py).
    """
    probe = _probe(needle)
    if probe and probe not in text:
        return
    index = text.find(needle)
    while index >= 0:
        yield index
        index = text.find(needle, index + 1)


@lru_cache(maxsize=1024)
def _probe(needle: str) -> str:
    """A character of ``needle`` that a single-character search skips to fast, or "".

    CPython looks for one character of a 2- or 4-byte string with ``memchr`` of its low byte,
    so a character is a good probe when that byte is rare in such text: not 0, not printable
    ASCII, not the high byte of common CJK (0x4E-0x9F), CJK punctuation (0x30) or full-width
    forms (0xFF). ASCII needles have no probe: their characters are everywhere.
    """
    for char in needle:
        low = ord(char) & 0xFF
        common = low in (0, 0x30, 0xFF) or 0x20 <= low <= 0x7E or 0x4E <= low <= 0x9F
        if ord(char) > 0x7F and not common:
            return char
    return ""
