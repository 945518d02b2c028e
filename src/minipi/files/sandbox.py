"""ProjectFiles: the only way the file tools touch the disk.

The root comes from the user or config, never from a model: it is resolved once
(``os.path.realpath``, so a root given through a symlink works) and opened once as a directory
fd. Every operation then takes a root-relative string, validates it (``paths.parse_path``),
applies the sensitive-path policy, and opens it through ``_open`` (``move`` through
``move.plan_move``), both built on ``walk.walk``/``walk.open_at``: from the root fd, one
component at a time, returning fds. Symlinks are never followed, inside or outside.

Refusals raise ``FileAccessError`` with a stable ``code``; operations return plain data
(``results``) that ``minipi.files.tools`` formats for the model.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from collections.abc import Iterable
from types import TracebackType

from minipi.agent.tools import Approver
from minipi.errors import ConfigError, FileAccessError
from minipi.files.move import ask_approval, execute_move, plan_move
from minipi.files.paths import RelPath, is_sensitive, parse_path, show
from minipi.files.results import DirEntry, DirEntryType, Listing, Moved, SearchResult, TextFile
from minipi.files.search import SearchLimits, search_tree
from minipi.files.text import check_range, decode_utf8, read_bounded, select_lines, too_large
from minipi.files.walk import (
    Root,
    Want,
    entry_kind,
    lstat_at,
    names_in,
    open_at,
    refusal,
    walk,
)

__all__ = ["ProjectFiles", "ReadCache"]


class ProjectFiles:
    """Read-mostly access to the files under one project root.

    ``max_bytes`` bounds what read_file and search read per file. ``allow`` holds globs that
    excuse paths from the sensitive-path policy (``.env.example``, ``config/dev.key``).
    Use as a context manager; the root fd is closed on exit.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        max_bytes: int = 32 * 1024,
        *,
        allow: Iterable[str] = (),
        max_entries: int = 200,
        max_matches: int = 50,
        max_visits: int = 20_000,
    ) -> None:
        for name, value in (
            ("max_bytes", max_bytes),
            ("max_entries", max_entries),
            ("max_matches", max_matches),
            ("max_visits", max_visits),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(allow, str):  # tuple("*.pem") would allow "*"
            raise ConfigError(f"allow must be a list of globs, not the string {allow!r}")
        self.root = os.path.realpath(os.fspath(root))
        self.max_bytes = max_bytes
        self.allow = tuple(allow)
        self.max_entries = max_entries
        self._limits = SearchLimits(max_bytes, max_matches, max_visits, self.allow)
        self._root: Root | None = _open_root(self.root, os.fspath(root))

    def __enter__(self) -> ProjectFiles:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the root fd; later calls raise ConfigError. Safe to call twice."""
        if self._root is not None:
            os.close(self._root.fd)
            self._root = None

    def __repr__(self) -> str:
        return f"ProjectFiles({self.root!r}, max_bytes={self.max_bytes})"

    def list_dir(self, path: object = ".") -> Listing:
        """The direct children of directory ``path``, sorted by name, at most ``max_entries``.

        The entries' types come from ``lstat`` (symlinks are reported, never followed).
        """
        rel = self._resolve(path)
        fd, _ = self._open(rel, "dir")
        try:
            names = names_in(fd, rel)
            shown = names[: self.max_entries]
            entries = [e for e in (_entry(fd, rel, n) for n in shown) if e is not None]
        finally:
            os.close(fd)
        return Listing(rel.text, tuple(entries), more=len(names) - len(shown))

    def read_text(
        self, path: object, offset: int | None = None, limit: int | None = None
    ) -> TextFile:
        """The UTF-8 text of regular file ``path``, or lines ``offset..offset+limit-1`` of it.

        Refused: over ``max_bytes`` (``too_large``, from ``fstat`` and again while reading at
        most ``max_bytes + 1`` bytes), not strict UTF-8 (``not_utf8``), bad range
        (``invalid_range``), plus every path refusal.
        """
        return self.read_text_reusing(path, offset, limit, None)[0]

    def read_text_reusing(
        self, path: object, offset: int | None, limit: int | None, reads: ReadCache | None
    ) -> tuple[TextFile, bool]:
        """``read_text``, with the bytes of an unchanged file taken from ``reads`` (and
        whether they were) instead of read again; every refusal is checked as for a first
        read, and the file is opened to ``fstat`` it (``ReadCache``)."""
        rel = self._resolve(path)
        check_range(offset, limit)
        fd, info = self._open(rel, "file")
        try:
            if info.st_size > self.max_bytes:
                raise too_large(rel, info.st_size, self.max_bytes)
            held = reads.get(rel.text, info) if reads is not None else None
            data = held if held is not None else read_bounded(fd, self.max_bytes)
        finally:
            os.close(fd)
        if data is None:
            raise too_large(rel, None, self.max_bytes)
        text, bom = decode_utf8(data, rel)
        if reads is not None and held is None:
            reads.put(rel.text, info, data)
        selected, first, last, total = select_lines(text, offset, limit, rel)
        read = TextFile(rel.text, selected, len(data), info.st_nlink, bom, total, first, last)
        return read, held is not None

    def search(self, query: object, path: object = ".") -> SearchResult:
        """Lines containing ``query`` (literal, case-sensitive) in the files under ``path``."""
        if not isinstance(query, str) or not query or "\n" in query:
            raise FileAccessError(
                "query must be a non-empty single line of text (searched literally, "
                f"case-sensitive); got {query!r:.60}",
                code="invalid_query",
            )
        rel = self._resolve(path)
        fd, info = self._open(rel, "any")
        return search_tree(
            self._live(), fd, rel, entry_kind(info.st_mode) == "dir", query, self._limits
        )

    def move(self, source: object, target: object, approve: Approver) -> Moved:
        """Move file ``source`` to ``target`` after ``approve`` allows the canonical move.

        ``target`` may be an existing directory (the file keeps its name). Never replaces an
        existing file, never creates directories, never moves directories or symlinks, never
        crosses filesystems. Everything is re-checked after approval.
        """
        source_rel = self._resolve(source, arg="source")
        target_rel = self._resolve(target, arg="target")
        plan = plan_move(self._live(), source_rel, target_rel)
        try:
            self._check_sensitive(plan.destination)
            ask_approval(plan, approve)
            return execute_move(self._live(), plan)
        finally:
            plan.close()

    def _live(self) -> Root:
        if self._root is None:
            raise ConfigError(
                "ProjectFiles is closed; use it inside 'with ProjectFiles(root) as files:'"
            )
        return self._root

    def _resolve(self, raw: object, *, arg: str = "path") -> RelPath:
        rel = parse_path(raw, arg=arg)
        self._check_sensitive(rel)
        return rel

    def _check_sensitive(self, rel: RelPath) -> None:
        if is_sensitive(rel.parts, self.allow):
            raise FileAccessError(
                f"{show(rel.text)} may hold secrets (.env, keys, .git/, .ssh/, minipi's own "
                "config and data) and is not available to the file tools; the user can allow "
                "it with --allow GLOB (for "
                f"example --allow {shlex.quote(rel.text)})",
                code="sensitive_path",
                path=rel.text,
            )

    def _open(self, rel: RelPath, want: Want) -> tuple[int, os.stat_result]:
        """The single entry to the walk: an fd for ``rel`` (the caller closes it) and its fstat."""
        root = self._live()
        if not rel.parts:
            if want == "file":
                raise refusal("is_directory", rel)
            fd = walk(root, ())
            return fd, os.fstat(fd)
        parent = walk(root, rel.parent.parts)
        try:
            return open_at(root, parent, rel.parts[-1], rel, want)
        finally:
            os.close(parent)


SETTLED_NS = 2_000_000_000
"""A file changed less than this long (ns) before it was read is never reused: a write in the
same tick of a coarse clock, or on a file system that keeps times to 2 seconds, could leave
its size and times as they were."""


class ReadCache:
    """The files read in one conversation, by root-relative path, so that a later read of an
    unchanged file is answered with the same bytes instead of a new read
    (``ProjectFiles.read_text_reusing``).

    Unchanged means the same device, inode, size, modification and change time (``fstat`` of
    the file opened again, after every refusal was checked again); a rename, a rewrite, a
    ``touch`` or a ``chmod`` all change one of them. A file whose change time was less than
    ``SETTLED_NS`` before it was read is read again every time. At most ``max_bytes`` are held,
    the oldest dropped first. Tools may run in threads: the cache is locked."""

    def __init__(self, max_bytes: int = 8 << 20) -> None:
        self.max_bytes = max_bytes
        self._held: dict[str, tuple[tuple[int, ...], bytes]] = {}
        self._lock = threading.Lock()

    def get(self, path: str, info: os.stat_result) -> bytes | None:
        """The bytes read of ``path`` when ``info`` says it is unchanged since, else None."""
        with self._lock:
            held = self._held.get(path)
        return held[1] if held is not None and held[0] == _stamp(info) else None

    def put(self, path: str, info: os.stat_result, data: bytes) -> None:
        """Keep ``data``, read from ``path`` as ``info`` describes it, if it had settled."""
        if time.time_ns() - info.st_ctime_ns < SETTLED_NS or len(data) > self.max_bytes:
            return
        with self._lock:
            self._held.pop(path, None)
            self._held[path] = (_stamp(info), data)
            while sum(len(d) for _, d in self._held.values()) > self.max_bytes:
                del self._held[next(iter(self._held))]

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _open_root(resolved: str, given: str) -> Root:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(resolved, flags)
    except FileNotFoundError:
        raise ConfigError(
            f"project root {given!r} does not exist; pass an existing directory"
        ) from None
    except NotADirectoryError:
        raise ConfigError(f"project root {given!r} is not a directory; pass a directory") from None
    except OSError as error:
        raise ConfigError(f"cannot open project root {given!r}: {error.strerror}") from None
    return Root(fd, os.fstat(fd).st_dev)


_OTHER_TYPES: dict[str, DirEntryType] = {"file": "file", "dir": "dir", "symlink": "symlink"}


def _entry(fd: int, parent: RelPath, name: str) -> DirEntry | None:
    """One listed child, typed by ``lstat``; None if it vanished since ``listdir``."""
    where = parent.child(name)
    try:
        info = lstat_at(fd, name, where)
    except FileAccessError as error:
        if error.code == "not_found":
            return None
        raise
    kind = entry_kind(info.st_mode)
    entry_type = _OTHER_TYPES.get(kind, "other")
    detail = "" if entry_type != "other" else kind
    size = info.st_size if entry_type == "file" else 0
    return DirEntry(where.text, entry_type, detail, size)
