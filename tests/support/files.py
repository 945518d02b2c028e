"""Shared helpers of the ``test_files_*`` modules: a project tree, a tree snapshot (INV), spies.

Imported explicitly (``from support.files import ...``); pytest does not load it by itself.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minipi.agent.tools import ApprovalRequest
from minipi.errors import FileAccessError
from minipi.files import ProjectFiles

SECRET = "SECRET-7f3a"
DAILY = '{"date": "2026-09-06", "orders": 128, "revenue_yuan": 9600}\n'

Snapshot = dict[str, tuple[str, int, str]]


@dataclass
class Project:
    """``base/proj`` (the root) and its sibling ``base/outside``, as the cases describe them."""

    base: Path
    root: Path
    outside: Path

    def write(self, relpath: str, data: str | bytes) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_bytes(data.encode("utf-8"))
        else:
            path.write_bytes(data)
        return path

    def snapshot(self) -> Snapshot:
        return snapshot(self.base)

    def open(self, **options: Any) -> ProjectFiles:
        return ProjectFiles(self.root, **options)


def make_project(base: Path) -> Project:
    """The sample tree: reports/, inbox/ with the cat, archive/, and outside/secret.txt."""
    project = Project(base, base / "proj", base / "outside")
    project.root.mkdir(parents=True)
    project.outside.mkdir()
    (project.outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    project.write("reports/daily-2026-09-06.json", DAILY)
    project.write("inbox/猫咪小花.txt", "一只橘猫\n")
    project.write("inbox/狗狗旺财.txt", "一只黄狗\n")
    (project.root / "archive").mkdir()
    project.write("notes.txt", "hello\nworld\n")
    return project


def walk(base: Path) -> Iterator[tuple[str, Path]]:
    """``(relpath, path)`` of everything under ``base``; links are not followed."""
    for directory, dirs, files in os.walk(base, followlinks=False):
        for name in dirs + files:
            path = Path(directory) / name
            yield str(path.relative_to(base)), path


def snapshot(base: Path) -> Snapshot:
    """``relpath -> (type, size, sha256)`` of everything under ``base``; links not followed."""
    return {relpath: _describe(path) for relpath, path in walk(base)}


def _describe(path: Path) -> tuple[str, int, str]:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "symlink", 0, os.readlink(path)
    if stat.S_ISDIR(info.st_mode):
        return "dir", 0, ""
    if not stat.S_ISREG(info.st_mode):
        return "special", 0, ""
    return "file", info.st_size, hashlib.sha256(path.read_bytes()).hexdigest()


def moved(before: Snapshot, source: str, destination: str) -> Snapshot:
    """``before`` with one file renamed: what the tree must look like after that move."""
    after = dict(before)
    after[destination] = after.pop(source)
    return after


def refused(code: str, call: Callable[[], object]) -> FileAccessError:
    """Run ``call``, assert it raises FileAccessError with ``code``, and return the error."""
    with pytest.raises(FileAccessError) as caught:
        call()
    assert caught.value.code == code, caught.value.message
    return caught.value


class Approvals:
    """An approver that records every request and answers with ``answer``."""

    def __init__(self, answer: bool | BaseException = True) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.requests.append(request)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


class OpenSpy:
    """Records the names passed to ``os.open`` (install with ``monkeypatch``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        real = os.open

        def spy(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
            self.names.append(os.fsdecode(path))
            return real(path, flags, mode, dir_fd=dir_fd)

        monkeypatch.setattr(os, "open", spy)


class ReadSpy:
    """Records how many bytes each ``os.read`` asked for and got."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked: list[int] = []
        self.got: list[int] = []
        real = os.read

        def spy(fd: int, size: int) -> bytes:
            self.asked.append(size)
            data = real(fd, size)
            self.got.append(len(data))
            return data

        monkeypatch.setattr(os, "read", spy)
