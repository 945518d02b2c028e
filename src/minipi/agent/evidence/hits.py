"""What a matcher reports: a place in a text where a claim's figure is, and how well."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
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
    """Every start of ``needle`` in ``text`` (overlapping ones too)."""
    index = text.find(needle)
    while index >= 0:
        yield index
        index = text.find(needle, index + 1)
