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


_NOT_LETTERS = re.compile(r"[^A-Za-z]+")


def _anchor(text: str) -> tuple[int, str]:
    """The longest run of ``text`` without an ASCII letter, and its offset: what every loose
    match holds as written, unless the output has a full-width form of one of its characters."""
    best = (0, "")
    for match in _NOT_LETTERS.finditer(text):
        if len(match.group()) > len(best[1]):
            best = (match.start(), match.group())
    return best


class TextMatcher:
    """Finds a ``TextFigure`` (identifier or quoted text) in a text.

    The loose search (any case, either width) is one regex of a character class per character,
    which ``re`` tries at every position: 17x a ``str.find`` pass over a megabyte
    (bench/perf_evidence.py). So where the figure has a run without letters (``-7791`` of
    ``SKU-7791``) and the output holds no full-width form of that run's characters (one
    single-character search each), the run is looked for with ``str.find`` and the regex only
    tried where it is: the same matches (``tests/test_evidence_text.py`` checks both ways).
    """

    def __init__(self, figure: TextFigure) -> None:
        self.figure = figure
        self._needles = tuple(dict.fromkeys((figure.text, figure.literal)))
        self._loose = _insensitive(figure.text)
        self._offset, self._anchor = _anchor(figure.text)
        wide = (chr(ord(c) + 0xFEE0) for c in self._anchor if "!" <= c <= "~")
        self._wide = tuple(dict.fromkeys(wide))

    def _tier(self, text: str, start: int, end: int) -> HitTier:
        return "exact" if text[start:end] == self.figure.literal else "normalized"

    def hits(self, text: str) -> Iterator[Hit]:
        for needle in self._needles:
            for index in find_all(text, needle):
                end = index + len(needle)
                if _bounded(text, index, end):
                    yield Hit(index, end, self._tier(text, index, end))

    def more_hits(self, text: str) -> Iterator[Hit]:
        for start, end in self._loose_spans(text):
            if _bounded(text, start, end):
                yield Hit(start, end, "normalized")

    def plain_more_hits(self, text: str) -> Iterator[Hit]:
        """``more_hits`` the plain way (the regex over the whole text), which it must equal."""
        for match in self._loose.finditer(text):
            if _bounded(text, *match.span()):
                yield Hit(match.start(), match.end(), "normalized")

    def _loose_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of ``self._loose.finditer(text)``: leftmost, not overlapping."""
        if not self._anchor or any(wide in text for wide in self._wide):
            for match in self._loose.finditer(text):
                yield match.span()
            return
        size = len(self.figure.text)  # one character a class: every match is this long
        after = 0
        for index in find_all(text, self._anchor):
            start = index - self._offset
            if start >= after and self._loose.match(text, start):
                yield start, start + size
                after = start + size


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
