"""Where sessions live, opened safely (RELIABILITY H6): outside the project, never a symlink.

The store is one directory (0700, owned by the user, writable by nobody else) holding
``sessions.db`` (0600, created with ``os.open`` before SQLite touches it) and a ``locks/``
directory with one lock file per session. A directory inside the project root is refused:
the file tools could otherwise reach the transcripts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from minipi.errors import ConfigError, SessionError

__all__ = ["check_outside_project", "create_private_file", "open_private_dir", "refused"]


def check_outside_project(data_dir: Path, project: Path) -> None:
    """ConfigError when ``data_dir`` is the project root or inside it (compared by components,
    after resolving symlinks on both sides)."""
    store, root = Path(os.path.realpath(data_dir)), Path(os.path.realpath(project))
    if store == root or store.is_relative_to(root):
        raise ConfigError(
            f"the session store {data_dir} is inside the project root {root}, where the "
            "file tools could reach it; set MINIPI_DATA_DIR to a directory outside the project",
            code="session_dir_in_project",
        )


def open_private_dir(path: Path, *, parent_fd: int | None = None) -> int:
    """Create ``path`` (0700) if missing and return an fd for it; refuse a symlink, a
    directory owned by someone else, or one that others may write to."""
    name: str | Path = path if parent_fd is None else path.name
    try:
        if parent_fd is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    except OSError as error:  # a parent that is a file, no permission, a link...
        link = os.path.islink(path)  # O_DIRECTORY|O_NOFOLLOW says ENOTDIR for a link
        raise refused(path, "it is a symbolic link" if link else _why(error)) from None
    problem = _ownership(os.fstat(fd))
    if problem:
        os.close(fd)
        raise refused(path, problem)
    return fd


def create_private_file(dir_fd: int, name: str, where: Path) -> os.stat_result:
    """Create (or open) the regular file ``name`` in ``dir_fd`` with mode 0600, refusing a
    symlink, a hard-linked file or someone else's file; return its stat."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    except OSError as error:
        raise refused(where / name, _why(error)) from None
    try:
        info = os.fstat(fd)
        problem = _ownership(info, directory=False)
        if not problem and not stat.S_ISREG(info.st_mode):
            problem = "it is not a regular file"
        elif not problem and info.st_nlink > 1:
            problem = "it has other hard links"
        if problem:
            raise refused(where / name, problem)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)
        return info
    finally:
        os.close(fd)


def _ownership(info: os.stat_result, *, directory: bool = True) -> str:
    if info.st_uid != os.geteuid():
        return "it belongs to another user"
    if directory and stat.S_IMODE(info.st_mode) & 0o022:
        return "other users may write to it (chmod 700 it)"
    return ""


def _why(error: OSError) -> str:
    if error.errno in (errno.ELOOP, errno.EMLINK):
        return "it is a symbolic link"
    if error.errno == errno.ENOTDIR:
        return "it is not a directory"
    return error.strerror or str(error)


def refused(path: Path, why: str) -> SessionError:
    return SessionError(
        f"cannot keep sessions in {path}: {why}; sessions are only stored in a private "
        "directory of yours (set MINIPI_DATA_DIR to choose another)",
        code="unsafe_session_path",
    )
