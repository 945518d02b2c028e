"""The batch directory: what a run leaves and what a resumed run reads.

    DIR/batch.json      the configuration and its fingerprint (never the API key)
    DIR/results.jsonl   one Record per finished task, appended and fsynced as each ends
    DIR/traces/ID.json  each task's trace (written before its record)
    DIR/summary.json    the figures over every finished task (rewritten at the end)
    DIR/journal/        with --approve all: each task's steps as they happen (a session
                        store, ``minipi.batch.journal``)
    DIR/.lock           flock: one process per directory (freed by the kernel, even on SIGKILL)

Why nothing is lost or run twice when the process is killed at any moment: a task counts as
finished only once its record line is on disk (one ``write`` on an ``O_APPEND`` fd, then
``fsync``), and a resumed run skips exactly those. A task killed before its line was written
has no record and runs again (its trace is overwritten); one that may have changed things
resumes from its journal instead, its interrupted calls "outcome unknown", never re-run. A
line cut by a power loss (no final newline) is not a record: it is cut off before new lines
are appended.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from minipi.batch.checked import load_json
from minipi.batch.records import Record, parse_record
from minipi.errors import ConfigError, MiniPiError

__all__ = ["BatchDir", "Resumed"]

_FORMAT = 1


class Resumed:
    """What a directory already holds: the finished records by id (the last line wins)."""

    def __init__(self, records: dict[str, Record]) -> None:
        self.records = records


class BatchDir:
    """An open, locked batch directory. ``append`` is thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.traces = path / "traces"
        self.journal = path / "journal"
        self._lock_fd = -1
        self._results_fd = -1
        self._write = threading.Lock()

    @classmethod
    def open(cls, path: Path) -> BatchDir:
        """Create or open ``path`` and lock it (``ConfigError`` when another process has it)."""
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)  # answers and traces: yours
            (path / "traces").mkdir(mode=0o700, exist_ok=True)
        except OSError as error:
            raise ConfigError(
                f"cannot use {path} as the batch directory: {error.strerror}"
            ) from None
        store = cls(path)
        store._lock()
        store._sweep()
        return store

    def _sweep(self) -> None:
        """Remove the temp files of writes a killed process left (``.NAME.PID…tmp``): this
        process holds the lock, so no write of another is under way."""
        for folder in (self.path, self.traces):
            for temp in folder.glob(".*.tmp"):
                with contextlib.suppress(OSError):
                    temp.unlink()

    def _lock(self) -> None:
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise ConfigError(
                f"{self.path} is in use by another minipi batch (pid {holder or 'unknown'}); "
                "wait for it to end, or stop it",
                code="batch_busy",
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def close(self) -> None:
        for fd in (self._results_fd, self._lock_fd):
            if fd >= 0:
                os.close(fd)
        self._results_fd = self._lock_fd = -1

    # --- configuration ---------------------------------------------------------------

    def read_config(self) -> dict[str, Any] | None:
        """``batch.json``, or None for a new directory."""
        target = self.path / "batch.json"
        try:
            data: Any = load_json(target.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise ConfigError(f"{target} is unreadable ({error}); use another --out") from None
        if not _is_config(data):
            raise ConfigError(f"{target} is not a minipi batch file; use another --out")
        config: dict[str, Any] = data
        return config

    def write_config(self, document: dict[str, Any]) -> None:
        self.write_json("batch.json", {"minipi_batch": _FORMAT, **document})

    def write_json(self, name: str, data: Any) -> None:
        """Write ``DIR/name`` atomically: a temp file, fsync, replace."""
        write_atomically(self.path / name, json.dumps(data, ensure_ascii=False, indent=2))

    # --- results ---------------------------------------------------------------------

    def resume(self) -> Resumed:
        """The records so far; a torn last line (power loss) is cut off first."""
        target = self.path / "results.jsonl"
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        self._results_fd = fd
        data = _read_all(fd)
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) != len(data):
            os.ftruncate(fd, len(whole))
        records: dict[str, Record] = {}
        for number, line in enumerate(whole.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = parse_record(line)
            except ValueError as error:
                raise ConfigError(
                    f"{target}:{number} is not a result ({error}); remove that line or use "
                    "another --out directory"
                ) from None
            records[record.id] = record
        return Resumed(records)

    def append(self, record: Record) -> None:
        """Add ``record`` to ``results.jsonl`` and make it durable before returning
        (``MiniPiError`` ``results_write_failed`` when the disk refuses)."""
        line = json.dumps(record.to_json(), ensure_ascii=False).encode() + b"\n"
        with self._write:
            try:
                written = os.write(self._results_fd, line)
                if written != len(line):  # a full disk: the torn line is cut off on resume
                    raise OSError(errno.ENOSPC, f"{written} of {len(line)} bytes written")
                os.fsync(self._results_fd)
            except OSError as error:
                raise MiniPiError(
                    f"cannot write {self.path / 'results.jsonl'} ({error.strerror or error}): "
                    "the tasks recorded so far are kept; free space and run the same "
                    "command again",
                    code="results_write_failed",
                ) from None

    def trace_path(self, task_id: str) -> Path:
        return self.traces / f"{task_id}.json"


def _is_config(data: Any) -> bool:
    """Whether ``data`` is a ``batch.json`` of this format, of the shape the runner reads."""
    return (
        isinstance(data, dict)
        and data.get("minipi_batch") == _FORMAT
        and isinstance(data.get("config", {}), dict)
        and isinstance(data.get("history", []), list)
    )


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def write_atomically(target: Path, text: str) -> None:
    """``text`` into ``target`` through a temp file next to it (0600, fsync, then replace)."""
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW  # never a planted link
    try:
        with open(os.open(temp, flags, 0o600), "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
