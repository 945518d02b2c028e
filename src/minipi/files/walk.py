"""The fd walk: open a root-relative path one component at a time, never following a link.

Every access of ``ProjectFiles`` ends here. Each step looks at the entry with
``fstatat(dir_fd, name, AT_SYMLINK_NOFOLLOW)`` (so a FIFO, socket or device is refused without
ever being opened), opens it with ``O_NOFOLLOW | O_NONBLOCK`` relative to the parent's fd, and
re-checks the type and the device with ``fstat`` on the fd it returns: the checks apply to what
is actually open, not to a string that may point elsewhere a moment later.

``Ignore`` is what listings and searches skip, as ripgrep and the coding agents do: hidden
names (a dot first: ``.git/``, ``.hypothesis/``, ``.keep``) and what the root's
``.gitignore`` names, unless the path asked for is itself one of them (listing ``.ci``
shows its files). Reads and moves are not affected: the sandbox alone decides those.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from minipi.errors import FileAccessError
from minipi.files.paths import RelPath, allows, show

__all__ = [
    "Ignore",
    "Root",
    "Want",
    "entry_kind",
    "lstat_at",
    "names_in",
    "open_at",
    "read_gitignore",
    "refusal",
    "walk",
]

Want: TypeAlias = Literal["dir", "file", "any"]

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_DIR_FLAGS = _FLAGS | os.O_DIRECTORY
# O_PATH pins an inode without opening its contents (no read permission, no side effects)
_HOLD_FLAGS = getattr(os, "O_PATH", _FLAGS) | os.O_NOFOLLOW | os.O_CLOEXEC

_HINTS = {
    "symlink": "symbolic links are never followed (inside or outside the project); "
    "use the path of a regular file or directory",
    "not_a_directory": "it is not a directory; use read_file for a file",
    "is_directory": "it is a directory; use list_files to see what it contains",
    "not_regular_file": "only regular files can be read",
    "permission_denied": "permission denied; the user must change its permissions",
    "cross_device": "it is on another filesystem (a mount point inside the project); "
    "the file tools stay on the project's filesystem",
    "path_too_long": "the path is too long for the filesystem",
}


@dataclass(frozen=True, slots=True)
class Root:
    """The project root, opened once: its directory fd and its device."""

    fd: int
    dev: int


@dataclass(frozen=True, slots=True)
class Ignore:
    """What listings and searches skip: hidden names and the ``.gitignore`` patterns (a
    subset of git's syntax: ``*``/``?``/``[]`` globs, a trailing ``/`` for directories only,
    a ``/`` inside or first anchors at the root, ``#`` comments; ``!`` re-includes are not
    read, so such a pattern is ignored). A path an ``allow`` glob names (``--allow
    .env.example``, the sandbox's own rule: ``paths.allows``) is never skipped: the user asked
    for it by name."""

    patterns: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Ignore:
        lines = (line.strip() for line in text.splitlines())
        return cls(tuple(p for p in lines if p and not p.startswith(("#", "!"))))

    def skips(self, parts: Sequence[str], is_dir: bool) -> bool:
        """Whether the root-relative path ``parts`` is hidden or ignored."""
        if self.allow and allows(parts, self.allow):
            return False
        if any(part.startswith(".") for part in parts):
            return True
        path = "/".join(parts)
        return any(_matches(pattern, path, parts[-1], is_dir) for pattern in self.patterns)


def _matches(pattern: str, path: str, name: str, is_dir: bool) -> bool:
    if pattern.endswith("/"):
        if not is_dir:
            return False
        pattern = pattern.rstrip("/")
    if "/" in pattern:  # anchored at the root
        return fnmatch.fnmatchcase(path, pattern.lstrip("/"))
    return fnmatch.fnmatchcase(name, pattern)


def read_gitignore(root: Root, allow: Sequence[str] = ()) -> Ignore:
    """The root's ``.gitignore`` as an ``Ignore`` (no patterns when it is missing, not a
    regular file, too large or not UTF-8: hidden names are still skipped)."""
    try:
        fd, info = open_at(root, root.fd, ".gitignore", RelPath((".gitignore",)), "file")
    except FileAccessError:
        return Ignore(allow=tuple(allow))
    try:
        data = os.read(fd, 64 * 1024) if info.st_size <= 64 * 1024 else b""
    except OSError:
        data = b""
    finally:
        os.close(fd)
    return replace(Ignore.parse(data.decode("utf-8", errors="replace")), allow=tuple(allow))


def refusal(code: str, where: RelPath, detail: str = "") -> FileAccessError:
    """A FileAccessError for ``where`` with the standard message for ``code``."""
    hint = detail or _HINTS.get(code, code.replace("_", " "))
    return FileAccessError(f"{show(where.text)}: {hint}", code=code, path=where.text)


def entry_kind(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket``, ``device`` or ``other``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def lstat_at(
    dir_fd: int, name: str, where: RelPath, *, missing: str = "not_found"
) -> os.stat_result:
    """``stat`` of ``name`` in ``dir_fd`` without following it; errors become refusals."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as error:
        raise _from_errno(error, where, missing) from None


def open_at(
    root: Root, dir_fd: int, name: str, where: RelPath, want: Want, *, hold: bool = False
) -> tuple[int, os.stat_result]:
    """Open ``name`` in ``dir_fd`` as ``want``; return the fd and its ``fstat``.

    Refused: a symlink (``symlink``), a FIFO/socket/device (``not_regular_file``, never opened),
    a directory when a file is wanted (``is_directory``) and the reverse (``not_a_directory``),
    another device than the root's (``cross_device``). ``hold`` opens with ``O_PATH`` where
    available: an fd that keeps the inode (so its number cannot be reused) but cannot read.
    """
    _check_kind(lstat_at(dir_fd, name, where).st_mode, want, where)
    flags = _HOLD_FLAGS if hold else _FLAGS
    try:
        fd = os.open(name, flags | os.O_DIRECTORY if want == "dir" else flags, dir_fd=dir_fd)
    except OSError as error:
        raise _from_errno(error, where, "not_found") from None
    try:
        info = os.fstat(fd)
        _check_kind(info.st_mode, want, where)
        if info.st_dev != root.dev:
            raise refusal("cross_device", where)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def walk(root: Root, parts: Sequence[str], *, missing: str = "not_found") -> int:
    """An fd of the directory ``parts`` (the root itself for ``()``); the caller closes it.

    A missing component raises ``missing`` (``not_found``, or ``parent_missing`` for a move's
    destination) with a hint naming the deepest directory that does exist.
    """
    try:  # a fresh open file description: concurrent listdir offsets stay separate
        fd = os.open(".", _DIR_FLAGS, dir_fd=root.fd)
    except OSError as error:
        raise _from_errno(error, RelPath(()), "not_found") from None
    for index, name in enumerate(parts):
        where = RelPath(tuple(parts[: index + 1]))
        try:
            child, _ = open_at(root, fd, name, where, "dir")
        except FileAccessError as error:
            if error.code == "not_found" and missing != "not_found":
                error = _missing(where, missing)
            raise error from None
        finally:
            os.close(fd)
        fd = child
    return fd


def names_in(fd: int, where: RelPath) -> list[str]:
    """The names in the open directory ``fd``, sorted; errors become refusals."""
    try:
        return sorted(os.listdir(fd))
    except OSError as error:
        raise _from_errno(error, where, "not_found") from None


def _check_kind(mode: int, want: Want, where: RelPath) -> None:
    kind = entry_kind(mode)
    if kind == "symlink":
        raise refusal("symlink", where)
    if kind == "dir":
        if want == "file":
            raise refusal("is_directory", where)
        return
    if want == "dir":
        raise refusal("not_a_directory", where)
    if kind != "file":
        raise refusal(
            "not_regular_file",
            where,
            f"it is a {kind}, not a regular file; only regular files can be read",
        )


def _missing(where: RelPath, code: str) -> FileAccessError:
    parent = where.parent.text
    if code == "parent_missing":
        detail = (
            f"directory {show(where.text)} does not exist; move_file does not create "
            f"directories: pick an existing one (list_files {show(parent)} shows them)"
        )
        return FileAccessError(detail, code=code, path=where.text)
    detail = f"{show(where.text)} does not exist; list_files {show(parent)} shows what is there"
    return FileAccessError(detail, code=code, path=where.text)


def _from_errno(error: OSError, where: RelPath, missing: str) -> FileAccessError:
    code = {
        errno.ENOENT: missing,
        errno.ELOOP: "symlink",
        errno.ENOTDIR: "not_a_directory",
        errno.EACCES: "permission_denied",
        errno.EPERM: "permission_denied",
        errno.ENXIO: "not_regular_file",
        errno.ENODEV: "not_regular_file",
        errno.ENAMETOOLONG: "path_too_long",
        errno.EXDEV: "cross_device",
    }.get(error.errno or 0)
    if code is None:
        return refusal("io_error", where, f"{error.strerror or error}; try again or skip it")
    if code in ("not_found", "parent_missing"):
        return _missing(where, code)
    return refusal(code, where)
