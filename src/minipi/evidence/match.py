"""Finding a claim's figure in a text: a ``Hit`` (where, and how well), the ``Matcher`` each
kind of figure has, what one check works out once a text (``Views``), and the matcher of
text (dates and times: ``match_dates``; numbers: ``match_numbers``).

Text: an identifier or quoted text is found exact first, then ignoring case and width; never
fuzzy. And text ``derived`` from 2–3 quoted pieces (``'Agent'`` + ``'Loop'``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, cast

from minipi.evidence.types import TextFigure

__all__ = [
    "Hit",
    "HitTier",
    "Matcher",
    "Piece",
    "TextMatcher",
    "derive_text",
    "find_all",
    "quoted_pieces",
]

HitTier: TypeAlias = Literal["exact", "normalized", "rounded", "near"]


@dataclass(frozen=True, slots=True)
class Hit:
    """``[start, end)`` of the text holds the figure (``near``: another value, for a hint)."""

    start: int
    end: int
    tier: HitTier
    value: Decimal | None = None


_WIDE = re.compile("[\uff01-\uff5e]")


_T = TypeVar("_T")


class Views:
    """What is worked out once a text for one check, however many figures look at it (its
    ``str.lower``, the full-width ASCII forms it holds, where dates with 月 may start)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, str], tuple[str, Any]] = {}

    def of(self, text: str, name: str, make: Callable[[str], _T]) -> _T:
        """``make(text)``, made once for this ``text`` and ``name``."""
        kept = self._kept.get((id(text), name))
        if kept is None or kept[0] is not text:
            kept = self._kept[id(text), name] = (text, make(text))
        return cast(_T, kept[1])

    def lower(self, text: str) -> str:
        return self.of(text, "lower", str.lower)

    def wide(self, text: str) -> frozenset[str]:
        return self.of(text, "wide", lambda t: frozenset(_WIDE.findall(t)))


class Matcher(Protocol):
    """Finds one claim's figure in a text. ``hits`` looks for the usual renderings (cheap: a
    few ``str.find`` or one anchored regex over the text); ``more_hits`` for the rest (other
    scripts, rounded values, near values), run only where ``hits`` found no content. ``cost``
    is what each costs at most, in ns a character of ``text`` (the slowest measured by
    ``bench/perf_evidence.py``, rounded up): what the check counts against its bound."""

    def hits(self, text: str) -> Iterator[Hit]: ...

    def more_hits(self, text: str) -> Iterator[Hit]: ...

    def cost(self, text: str) -> tuple[int, int]: ...


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

    def __init__(self, figure: TextFigure, views: Views | None = None) -> None:
        self.figure = figure
        self._views = views or Views()
        self._folded = figure.text.lower()
        self._needles = tuple(dict.fromkeys((figure.text, figure.literal)))
        self._loose = _insensitive(figure.text)
        self._offset, self._anchor = _anchor(figure.text)
        wide = (chr(ord(c) + 0xFEE0) for c in self._anchor if "!" <= c <= "~")
        self._wide = tuple(dict.fromkeys(wide))
        cased = {v for c in figure.text if "!" <= c <= "~" for v in (c, c.lower(), c.upper())}
        self._any_wide = frozenset(chr(ord(c) + 0xFEE0) for c in cased)

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

    def cost(self, text: str) -> tuple[int, int]:
        return 1, 6  # the rest: the loose search, and the quoted pieces of a derivation

    def plain_more_hits(self, text: str) -> Iterator[Hit]:
        """``more_hits`` the plain way (the regex over the whole text), which it must equal."""
        for match in self._loose.finditer(text):
            if _bounded(text, *match.span()):
                yield Hit(match.start(), match.end(), "normalized")

    def _loose_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of ``self._loose.finditer(text)``: leftmost, not overlapping. Tried only
        where the lowered text holds the figure lowered, when the text has no full-width form
        of its characters (then every match lowers to it); else where its ``_anchor`` is."""
        starts = self._starts(text)
        if starts is None:
            yield from (match.span() for match in self._loose.finditer(text))
            return
        size = len(self.figure.text)  # one character a class: every match is this long
        after = 0
        for start in starts:
            if start >= after and self._loose.match(text, start):
                yield start, start + size
                after = start + size

    def _starts(self, text: str) -> Iterable[int] | None:
        """Where a loose match may start (in order), or None: anywhere."""
        lower = self._views.lower(text)
        if len(lower) == len(text) and not self._any_wide & self._views.wide(text):
            return find_all(lower, self._folded)
        if self._anchor and not any(wide in text for wide in self._wide):
            return (index - self._offset for index in find_all(text, self._anchor))
        return None


def quoted_pieces(text: str, first: str) -> list[tuple[int, int]]:
    """The spans of text between quotes in ``text`` that begin with ``first``, in text order
    (one ``str.find`` pass an opening quote)."""
    opened = sorted(
        (index + 1, opener) for opener in _PAIRS for index in find_all(text, opener + first)
    )
    spans = []
    for start, opener in opened:
        close = text.find(_PAIRS[opener], start, start + _MAX_PIECE + 1)
        if close > start:
            spans.append((start, close))
    return spans


def _distinct_pieces(
    texts: Sequence[str], first: str, usable: Callable[[int, int], bool]
) -> list[Piece]:
    """The usable pieces that begin with ``first``, each text once (its first place)."""
    distinct: dict[str, Piece] = {}
    for i, text in enumerate(texts):
        for s, e in quoted_pieces(text, first):
            if usable(i, s):
                distinct.setdefault(text[s:e], (i, s, e))
    return list(distinct.values())


def derive_text(
    target: str,
    texts: Sequence[str],
    usable: Callable[[int, int], bool],
    found: dict[str, list[Piece]] | None = None,
) -> tuple[Piece, ...] | None:
    """``target`` as 2–3 pieces each found between quotes in ``texts`` (in order), or None.

    ``usable(index, start)`` says whether a piece at ``start`` of ``texts[index]`` may count
    (it must be content). Each distinct first letter costs one scan of the texts; ``found``
    keeps those scans (the pieces by first letter) for the next target of the same texts.
    Each piece's text is tried once at each position (a result may hold thousands of
    ``'A'``): the search is bounded by the target's length times the distinct pieces.
    """
    found = {} if found is None else found

    def pieces(first: str) -> list[Piece]:
        if first not in found:
            found[first] = _distinct_pieces(texts, first, usable)
        return found[first]

    @cache
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
