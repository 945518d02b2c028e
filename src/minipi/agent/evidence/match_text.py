"""Finding an identifier or quoted text: exact first, then ignoring case and width; never
fuzzy. And text ``derived`` from 2–3 quoted pieces (``'Agent'`` + ``'Loop'``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

from minipi.agent.evidence.hits import Hit, HitTier, find_all
from minipi.agent.evidence.types import TextFigure

__all__ = ["Piece", "TextMatcher", "derive_text", "quoted_pieces"]

_PAIRS = {"'": "'", '"': '"', "`": "`", "‘": "’", "“": "”", "「": "」", "『": "』"}
_MAX_PIECE = 64
_MAX_PIECES = 3

Piece = tuple[int, int, int]
"""(index of the text, start, end) of a piece between quotes."""


def _word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _bounded(text: str, start: int, end: int) -> bool:
    """No letter or digit of the same token on either side (``Loop`` is not in ``AgentLoop``;
    ``A-17`` is not in ``XA-17`` or ``A-17-2``)."""
    if start and _word(text[start]) and _word(text[start - 1]):
        return False
    if end < len(text) and _word(text[end - 1]):
        after = text[end]
        if _word(after) or (after in "-." and end + 1 < len(text) and _word(text[end + 1])):
            return False
    return True


def _insensitive(text: str) -> re.Pattern[str]:
    """``text`` matching any case of its ASCII letters and either width of its ASCII."""
    parts = []
    for char in text:
        if "!" <= char <= "~":
            variants = {char, char.lower(), char.upper()}
            variants |= {chr(ord(v) + 0xFEE0) for v in set(variants)}
            parts.append("[" + "".join(re.escape(v) for v in sorted(variants)) + "]")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts))


class TextMatcher:
    """Finds a ``TextFigure`` (identifier or quoted text) in a text."""

    def __init__(self, figure: TextFigure) -> None:
        self.figure = figure
        self._needles = tuple(dict.fromkeys((figure.text, figure.literal)))
        self._loose = _insensitive(figure.text)

    def _tier(self, text: str, start: int, end: int) -> HitTier:
        return "exact" if text[start:end] == self.figure.literal else "normalized"

    def hits(self, text: str) -> Iterator[Hit]:
        for needle in self._needles:
            for index in find_all(text, needle):
                end = index + len(needle)
                if _bounded(text, index, end):
                    yield Hit(index, end, self._tier(text, index, end))

    def more_hits(self, text: str) -> Iterator[Hit]:
        for match in self._loose.finditer(text):
            if _bounded(text, *match.span()):
                yield Hit(match.start(), match.end(), "normalized")


@lru_cache(maxsize=64)
def _opening(first: str) -> re.Pattern[str]:
    openers = "".join(re.escape(o) for o in _PAIRS)
    return re.compile(f"([{openers}])(?={re.escape(first)})")


def quoted_pieces(text: str, first: str) -> Iterator[tuple[int, int]]:
    """The spans of text between quotes in ``text`` that begin with ``first``."""
    for match in _opening(first).finditer(text):
        start = match.end()
        close = text.find(_PAIRS[match.group(1)], start, start + _MAX_PIECE + 1)
        if close > start:
            yield start, close


def derive_text(
    target: str, texts: Sequence[str], usable: Callable[[int, int], bool]
) -> tuple[Piece, ...] | None:
    """``target`` as 2–3 pieces each found between quotes in ``texts`` (in order), or None.

    ``usable(index, start)`` says whether a piece at ``start`` of ``texts[index]`` may count
    (it must be content). Each distinct first letter costs one scan of the texts.
    """
    found: dict[str, list[Piece]] = {}

    def pieces(first: str) -> list[Piece]:
        if first not in found:
            found[first] = [
                (i, s, e)
                for i, text in enumerate(texts)
                for s, e in quoted_pieces(text, first)
                if usable(i, s)
            ]
        return found[first]

    def solve(position: int, depth: int) -> tuple[Piece, ...] | None:
        if position == len(target):
            return ()
        if depth == _MAX_PIECES:
            return None
        for index, start, end in pieces(target[position]):
            piece = texts[index][start:end]
            if len(piece) < len(target) and target.startswith(piece, position):
                rest = solve(position + len(piece), depth + 1)
                if rest is not None:
                    return ((index, start, end), *rest)
        return None

    result = solve(0, 0)
    return result if result and len(result) >= 2 else None
