"""One process per session: ``flock`` on a lock file in the store's ``locks/`` directory.

The kernel releases an ``flock`` when its holder exits, SIGKILL included, so a crash never
leaves a session locked. The holder writes its pid into the file for the next one's message.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os

from minipi.errors import SessionBusyError
from minipi.session.location import create_private_file, open_private_dir
from minipi.session.store import SessionStore

__all__ = ["SessionLock"]


class SessionLock:
    """An exclusive lock on one session name; ``release()`` (or process exit) frees it."""

    def __init__(self, fd: int, locks_fd: int, file_name: str) -> None:
        self._fd = fd
        self._locks_fd = locks_fd
        self._file_name = file_name

    @classmethod
    def acquire(cls, store: SessionStore, session: str) -> SessionLock:
        """Lock ``session`` of ``store``, or raise SessionBusyError naming the process that
        holds it (at once: a second process never waits)."""
        locks = store.data_dir / "locks"
        locks_fd = open_private_dir(locks, parent_fd=store.dir_fd)
        file_name = hashlib.sha256(session.encode()).hexdigest()[:32] + ".lock"
        try:
            for _ in range(5):  # the file may be removed (sessions delete) while we open it
                create_private_file(locks_fd, file_name, locks)
                fd = _locked(locks_fd, file_name, session)
                if _same_file(fd, locks_fd, file_name):
                    with contextlib.suppress(OSError):  # the pid is for messages only
                        os.ftruncate(fd, 0)
                        os.write(fd, f"{os.getpid()}\n".encode())
                    return cls(fd, locks_fd, file_name)
                os.close(fd)
        except BaseException:
            os.close(locks_fd)
            raise
        os.close(locks_fd)
        raise SessionBusyError(
            f"session '{session}' is being deleted and created at once; try again",
            session=session,
            pid=0,
        )

    def release(self, *, remove: bool = False) -> None:
        """Unlock (``remove``: delete the lock file first, while still holding it)."""
        if self._fd < 0:
            return
        if remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._file_name, dir_fd=self._locks_fd)
        os.close(self._fd)
        os.close(self._locks_fd)
        self._fd = -1


def _locked(locks_fd: int, file_name: str, session: str) -> int:
    """An fd of the lock file, ``flock``ed; SessionBusyError if another process holds it."""
    fd = os.open(file_name, os.O_RDWR | os.O_NOFOLLOW, dir_fd=locks_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        pid = int(text) if text.isdigit() else 0
        raise SessionBusyError(
            f"session '{session}' is in use by another minipi process "
            f"(pid {pid or 'unknown'}); wait for it to end, or stop it",
            session=session,
            pid=pid,
        ) from None
    return fd


def _same_file(fd: int, dir_fd: int, name: str) -> bool:
    """True when ``name`` still names the file we locked (not removed and re-created)."""
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
