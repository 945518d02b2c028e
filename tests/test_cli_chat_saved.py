"""Nothing is lost without a word: a chat without ``--session`` is recorded as a session of
its own (``sessions list`` shows it, the exit says its name); one that asked nothing leaves
none; where the store cannot be used the chat still runs and says how to keep one."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import clean_env, copy_example, minipi
from support.fake import FakeServer, Turn


def _chat(server: FakeServer, project: Path, data: Path, stdin: str) -> tuple[str, str, int]:
    proc = minipi(
        "chat",
        "-p",
        str(project),
        "--base-url",
        server.base_url,
        "-m",
        "fake-model",
        stdin=stdin,
        env=clean_env(MINIPI_DATA_DIR=str(data)),
    )
    return proc.stdout, proc.stderr, proc.returncode


def _listed(data: Path) -> list[dict[str, object]]:
    proc = minipi("sessions", "list", "--json", env=clean_env(MINIPI_DATA_DIR=str(data)))
    assert proc.returncode == 0, proc.stderr
    listed: list[dict[str, object]] = json.loads(proc.stdout)
    return listed


def test_a_chat_without_a_session_is_saved_and_listed(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn("hello there"))
    project = copy_example("sample_project", tmp_path)
    out, err, code = _chat(fake_server, project, tmp_path / "data", "hi\n")
    assert code == 0, err
    assert "hello there" in out
    [saved] = _listed(tmp_path / "data")
    name = str(saved["name"])
    assert name.startswith("chat-")
    assert saved["runs"] == 1
    assert f"[session {name}] saved: minipi sessions show {name}" in err
    assert f"minipi chat --session {name}" in err


def test_a_chat_that_asked_nothing_leaves_no_session(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = copy_example("sample_project", tmp_path)
    _, err, code = _chat(fake_server, project, tmp_path / "data", "")
    assert code == 0, err
    assert _listed(tmp_path / "data") == []
    assert "saved" not in err


def test_a_chat_that_cannot_be_saved_runs_and_says_how_to_keep_one(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn("hello there"))
    project = copy_example("sample_project", tmp_path)
    blocked = tmp_path / "data"
    blocked.write_text("a file where the data directory should be", encoding="utf-8")
    out, err, code = _chat(fake_server, project, blocked, "hi\n")
    assert code == 0, err
    assert "hello there" in out
    assert "this chat was not saved" in err
    assert "minipi chat --session NAME" in err
