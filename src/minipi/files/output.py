"""What the file tools say: listings, file texts and search hits, with their marks.

Each ``_marked_*`` function gives the output text and its marks, ``[start, end, origin]`` (code
points, end exclusive): ``"content"`` (a file's text, a search hit's line) or ``"path"`` (a
listed or found path); the rest, notices and the tools' own words, is unmarked. The formats
are ``minipi.files.tools``'s (its docstring).
"""

from __future__ import annotations

from typing import Any

from minipi.files.paths import escape_line, quote_path
from minipi.files.results import DirEntry, Listing, Match, SearchResult, TextFile

__all__ = [
    "Mark",
    "format_listing",
    "format_search",
    "format_text",
    "marked_listing",
    "marked_search",
]

Mark = list[Any]  # [start, end, "content" | "path"]
_SKIP_LABELS = {
    "not_utf8": "not UTF-8",
    "too_large": "too large",
    "not_regular_file": "fifo/socket/device",
    "symlink": "symlink",
    "sensitive": "sensitive",
}


def format_listing(listing: Listing) -> str:
    """One entry per line, root-relative, then the truncation notice if any."""
    return marked_listing(listing)[0]


def marked_listing(listing: Listing) -> tuple[str, list[Mark]]:
    """``format_listing``'s text and its marks: each entry's path (a directory's with its
    ``/``) is a path."""
    lines = _Lines()
    for entry in listing.entries:
        shown = quote_path(entry.path) + ("/" if entry.type == "dir" else "")
        lines.add((shown, "path"), (_entry_note(entry), None))
    if listing.more:
        lines.add((f"[truncated: {listing.more} more entries; list a subdirectory]", None))
    if not lines.parts:
        lines.add(("(empty directory)", None))
    return lines.text(), lines.marks


def _entry_note(entry: DirEntry) -> str:
    if entry.type == "symlink":
        return " -> (symlink, not followed)"
    if entry.type == "other":
        return f" ({entry.detail})"
    return ""


class _Lines:
    """Output lines made of parts, each part content, a path, or the tool's words (None)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.marks: list[Mark] = []
        self._at = 0

    def add(self, *parts: tuple[str, str | None]) -> None:
        if self.parts:
            self.parts.append("\n")
            self._at += 1
        for text, origin in parts:
            if origin is not None and text:
                self.marks.append([self._at, self._at + len(text), origin])
            self.parts.append(text)
            self._at += len(text)

    def text(self) -> str:
        return "".join(self.parts)


def format_text(text: TextFile) -> str:
    """The text as read, plus notice lines for a cut range and for hard links."""
    body = text.text if text.total_lines else f"(empty file, {text.size} bytes)"
    notes = []
    if text.next_offset is not None:
        notes.append(
            f"[truncated: {text.more_lines} more lines; "
            f"call read_file again with offset={text.next_offset}]"
        )
    if text.nlink > 1:
        notes.append(f"[note: this file has {text.nlink} hard links]")
    if not notes:
        return body
    return body + ("" if body.endswith("\n") else "\n") + "\n".join(notes)


def _match_parts(match: Match) -> tuple[tuple[str, str | None], ...]:
    if match.line == 0:
        return ((quote_path(match.path), "path"), (" (file name)", None))
    path = quote_path(match.path, colon=True)
    return ((path, "path"), (f":{match.line}: ", None), (match.text, "content"))


def format_search(result: SearchResult) -> str:
    """``path:line: text`` lines, then how many lines matched (when all were shown), notices
    for more matches, a cut walk, skipped files."""
    return marked_search(result)[0]


def marked_search(result: SearchResult) -> tuple[str, list[Mark]]:
    """``format_search``'s text and its marks: a hit's path is a path, its line's text
    content; ``no matches for '…'`` (the query echoed) and the notices are neither."""
    marked = _Lines()
    for match in result.matches:
        marked.add(*_match_parts(match))
    lines = []
    if not result.matches:
        where = "" if result.path == "." else f" in {quote_path(result.path)}"
        lines.append(f"no matches for '{escape_line(result.query)}'{where}")
    lines.extend(_count_note(result))
    lines.extend(_search_notices(result))
    for line in lines:
        marked.add((line, None))
    return marked.text(), marked.marks


def _count_note(result: SearchResult) -> list[str]:
    """How many lines matched, in how many files, when every match was shown.

    Counted, as ``rg --count`` does: a model reading a list of hits miscounts it easily, so
    the tool states a number it knows exactly rather than leave the count to the reader."""
    hits = [m for m in result.matches if m.line]
    if len(hits) <= 1 or result.more_matches or not result.complete:
        return []
    files = len({m.path for m in hits})
    return [f"[{len(hits)} matching lines in {files} file{'s' if files > 1 else ''}]"]


def _search_notices(result: SearchResult) -> list[str]:
    """The notices for more matches than shown, a walk cut short, and files not searched."""
    notices = []
    if result.more_matches:
        least = "" if result.complete else "at least "
        notices.append(
            f"[truncated: {least}{result.more_matches} more matches; "
            "use a longer query or a narrower path]"
        )
    if not result.complete:
        notices.append(
            f"[search stopped after visiting {result.visited} entries; results are "
            "incomplete: search a subdirectory with path]"
        )
    if result.skipped:
        counts = ", ".join(f"{_SKIP_LABELS.get(k, k)}: {n}" for k, n in result.skipped.items())
        notices.append(f"[not searched: {counts}]")
    return notices
