"""Plain data returned by ProjectFiles; ``minipi.files.tools`` turns it into tool output.

Every ``path`` here is canonical and root-relative (``reports/daily.json``; ``.`` is the root).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = ["DirEntry", "DirEntryType", "Listing", "Match", "Moved", "SearchResult", "TextFile"]

DirEntryType: TypeAlias = Literal["file", "dir", "symlink", "other"]


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One direct child of a listed directory. ``detail`` names an ``other``: fifo, socket,
    device. Symlinks are reported, never followed."""

    path: str
    type: DirEntryType
    detail: str = ""
    size: int = 0


@dataclass(frozen=True, slots=True)
class Listing:
    """The first entries of a directory sorted by name, and the exact count of the rest."""

    path: str
    entries: tuple[DirEntry, ...]
    more: int = 0


@dataclass(frozen=True, slots=True)
class TextFile:
    """Text read from one file (or the selected line range of it).

    ``text`` is exact (CRLF kept); a leading UTF-8 BOM is removed (``bom`` says so). ``size``
    and ``nlink`` come from ``fstat`` of the fd that was read; ``nlink > 1`` means the same
    content is reachable under another name, possibly outside the project.
    """

    path: str
    text: str
    size: int
    nlink: int = 1
    bom: bool = False
    total_lines: int = 0
    first_line: int = 1
    last_line: int = 0

    @property
    def more_lines(self) -> int:
        """Lines after the selected range."""
        return max(0, self.total_lines - self.last_line)

    @property
    def next_offset(self) -> int | None:
        """The ``offset`` that reads on after this range, or None when nothing remains."""
        return self.last_line + 1 if self.more_lines else None


@dataclass(frozen=True, slots=True)
class Match:
    """One matching line: 1-based ``line`` (0: the file's name matches, ``text`` is "");
    ``text`` is trimmed and escaped to one line."""

    path: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Matches in walk order (sorted by path, then line).

    ``more_matches`` counts matches found but not returned; it is exact when ``complete``,
    a lower bound otherwise (the walk stopped after ``visited`` entries). ``skipped`` counts
    entries not searched by reason (``symlink``, ``not_utf8``, ``too_large``, ...).
    """

    query: str
    path: str
    matches: tuple[Match, ...]
    more_matches: int = 0
    complete: bool = True
    visited: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Moved:
    """A move that was approved, executed, and verified on disk."""

    source: str
    destination: str
