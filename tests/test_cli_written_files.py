"""The files minipi writes for a user are the user's alone: the trace is 0600 whatever the
umask or an older file's mode, and its temporary file is never a link someone planted."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from support.cli import minipi
from support.fake import FakeServer, Turn

pytestmark = pytest.mark.reliability


def ask_with_trace(server: FakeServer, project: Path, trace: Path) -> None:
    server.add(Turn("no figures here"))
    proc = minipi(
        "ask", "hi", "--project", str(project), "--base-url", server.base_url,
        "--model", "fake-model", "--trace", str(trace),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_trace_is_private_and_stays_private(fake_server: FakeServer, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    trace = tmp_path / "trace.json"
    ask_with_trace(fake_server, project, trace)
    assert mode(trace) == 0o600
    trace.chmod(0o644)  # an older trace someone made readable is not kept so
    ask_with_trace(fake_server, project, trace)
    assert mode(trace) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "trace.json"]


def test_a_planted_link_at_the_old_temporary_name_is_not_followed(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    trace = tmp_path / "trace.json"
    for pid in range(os.getpid(), os.getpid() + 200):  # where the name was guessable
        (tmp_path / f".trace.json.{pid}.tmp").symlink_to(victim)
    ask_with_trace(fake_server, project, trace)
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not trace.is_symlink()
    assert mode(trace) == 0o600
