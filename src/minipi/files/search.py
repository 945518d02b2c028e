"""Literal substring search over the UTF-8 files of a directory tree.

The walk is iterative (a stack of open directory fds, so depth costs no Python recursion),
visits names in sorted order (deterministic output), never follows a symlink, and never opens a
FIFO, socket or device: each entry is looked at with ``fstatat(..., AT_SYMLINK_NOFOLLOW)`` first
and re-checked with ``fstat`` after opening (``walk.open_at``). Files that read_file would refuse
are skipped and counted, never read. Hidden and ``.gitignore``'d entries (``walk.Ignore``) are
skipped silently, as ripgrep does, unless the searched path is itself one of them. A file
whose name contains the query is a match too, at line 0 (a large tree is searchable by name).

A search is bounded in entries visited (``max_visits``) and in time (``max_seconds``): on a
tree with many matches (20,000 files of 32 KiB, every line a match) the visits alone allowed
a search of 5-60 s, depending on the machine. Whichever limit comes first stops the walk;
the result is then marked incomplete (``complete=False``), its counts lower bounds.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from minipi.errors import FileAccessError
from minipi.files.paths import RelPath, escape_line, is_sensitive
from minipi.files.results import Match, SearchResult
from minipi.files.text import decode_utf8, read_bounded
from minipi.files.walk import Ignore, Root, entry_kind, lstat_at, names_in, open_at, read_gitignore

__all__ = ["SearchLimits", "search_tree"]

_EXCERPT = 200


@dataclass(frozen=True, slots=True)
class SearchLimits:
    """Bounds of one search: file size (as read_file), matches returned, entries visited,
    seconds spent (checked before each entry: one file is at most ``max_bytes``)."""

    max_bytes: int
    max_matches: int = 50
    max_visits: int = 20_000
    allow: Sequence[str] = ()
    max_seconds: float = 10.0


@dataclass
class _Frame:
    fd: int
    rel: RelPath
    names: list[str]  # still to visit, reversed so that pop() yields sorted order


@dataclass
class _State:
    query: str
    limits: SearchLimits
    matches: list[Match] = field(default_factory=list)
    found: int = 0
    visited: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    stop_at: float = 0.0  # time.monotonic() at which the walk stops
    ignore: Ignore | None = None  # None: the searched path is itself hidden or ignored

    def out_of_budget(self) -> bool:
        """True when the next visit would pass ``max_visits`` or ``max_seconds``."""
        return self.visited >= self.limits.max_visits or time.monotonic() >= self.stop_at


def search_tree(
    root: Root, fd: int, rel: RelPath, is_dir: bool, query: str, limits: SearchLimits
) -> SearchResult:
    """Search ``query`` under the open ``fd`` (a directory, or one file); takes ownership of fd."""
    state = _State(query, limits, stop_at=time.monotonic() + limits.max_seconds)
    ignore = read_gitignore(root, limits.allow)
    state.ignore = None if rel.parts and ignore.skips(rel.parts, is_dir) else ignore
    complete = True
    if is_dir:
        complete = _walk_tree(root, fd, rel, state)
    else:
        try:
            _scan_file(fd, rel, state)
        finally:
            os.close(fd)
    return SearchResult(
        query=query,
        path=rel.text,
        matches=tuple(state.matches),
        more_matches=state.found - len(state.matches),
        complete=complete,
        visited=state.visited,
        skipped=dict(sorted(state.skipped.items())),
    )


def _walk_tree(root: Root, fd: int, rel: RelPath, state: _State) -> bool:
    """Depth-first over sorted names; False when the visit or time limit cut the walk."""
    stack = [_Frame(fd, rel, [])]
    try:
        stack[0].names = _names(fd, rel)
        while stack:
            frame = stack[-1]
            if not frame.names:
                os.close(stack.pop().fd)
                continue
            if state.out_of_budget():
                return False
            state.visited += 1
            child = _visit(root, frame, frame.names.pop(), state)
            if child is not None:
                stack.append(child)
        return True
    finally:
        for frame in stack:
            os.close(frame.fd)


def _names(fd: int, rel: RelPath) -> list[str]:
    return names_in(fd, rel)[::-1]


def _visit(root: Root, frame: _Frame, name: str, state: _State) -> _Frame | None:
    """Search one entry; a directory comes back as a frame to descend into."""
    rel = frame.rel.child(name)
    if is_sensitive(rel.parts, state.limits.allow):
        state.skipped["sensitive"] += 1
        return None
    try:
        kind = _searchable_kind(frame.fd, name, rel, state)
        if kind is None:
            return None
        fd, _ = open_at(root, frame.fd, name, rel, "dir" if kind == "dir" else "file")
    except FileAccessError as error:
        state.skipped[error.code] += 1
        return None
    if kind == "dir":
        return _descend(fd, rel, state)
    if state.query in name:  # a file is found by its name too (line 0)
        _found(state, Match(rel.text, 0, ""))
    try:
        _scan_file(fd, rel, state)
    finally:
        os.close(fd)
    return None


def _searchable_kind(dir_fd: int, name: str, rel: RelPath, state: _State) -> str | None:
    """``file`` or ``dir`` for an entry to search; None for one skipped (counted unless it is
    ignored). FileAccessError when it cannot be looked at."""
    info = lstat_at(dir_fd, name, rel)
    kind = entry_kind(info.st_mode)
    if state.ignore is not None and state.ignore.skips(rel.parts, kind == "dir"):
        return None
    if kind == "file" and info.st_size > state.limits.max_bytes:
        state.skipped["too_large"] += 1
        return None
    if kind not in ("file", "dir"):
        state.skipped["symlink" if kind == "symlink" else "not_regular_file"] += 1
        return None
    return kind


def _descend(fd: int, rel: RelPath, state: _State) -> _Frame | None:
    try:
        return _Frame(fd, rel, _names(fd, rel))
    except FileAccessError as error:
        os.close(fd)
        state.skipped[error.code] += 1
        return None


def _scan_file(fd: int, rel: RelPath, state: _State) -> None:
    """Count and collect the lines of one open file that contain the query."""
    try:
        data = read_bounded(fd, state.limits.max_bytes)
    except OSError:
        state.skipped["unreadable"] += 1
        return
    if data is None:
        state.skipped["too_large"] += 1
        return
    try:
        text, _ = decode_utf8(data, rel)
    except FileAccessError:
        state.skipped["not_utf8"] += 1
        return
    if state.query not in text:
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if state.query in line:  # inline, not _found: a file may have thousands of matches
            state.found += 1
            if len(state.matches) < state.limits.max_matches:
                state.matches.append(Match(rel.text, number, _excerpt(line, state.query)))


def _found(state: _State, match: Match) -> None:
    state.found += 1
    if len(state.matches) < state.limits.max_matches:
        state.matches.append(match)


def _excerpt(line: str, query: str) -> str:
    """The line without its ``\\r``, cut to about 200 characters around the first match."""
    line = line.removesuffix("\r")
    if len(line) > _EXCERPT:
        start = max(0, min(line.find(query) - 60, len(line) - _EXCERPT))
        end = start + _EXCERPT
        line = ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")
    return escape_line(line)
