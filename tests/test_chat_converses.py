"""Issue 38 item 7, a chat that converses, through the real ``minipi chat``: a greeting, the
chat's own ``/`` commands (never sent to the model), a follow-up that reuses this
conversation's read of an unchanged file (and reads a changed one again), and a cancelled
question counted as its session records it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from minipi.files.sandbox import SETTLED_NS
from support.cli import clean_env, minipi, tool_outputs
from support.fake import Call, FakeServer, RawReply, Turn
from support.terminal import Terminal

NOTES = "alpha 17\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES, encoding="utf-8")
    return root


def _chat(server: FakeServer, project: Path, data: Path, stdin: str) -> tuple[str, str, int]:
    proc = minipi(
        "chat",
        "-p",
        str(project),
        "--base-url",
        server.base_url,
        "-m",
        "fake-model",
        "--session",
        "talk",
        stdin=stdin,
        env=clean_env(MINIPI_DATA_DIR=str(data)),
    )
    return proc.stdout, proc.stderr, proc.returncode


def _saved_outputs(data: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """Each saved tool result: its run's question, its output, its details."""
    shown = minipi("sessions", "show", "talk", "--json", env=clean_env(MINIPI_DATA_DIR=str(data)))
    assert shown.returncode == 0, shown.stderr
    found = []
    for run in json.loads(shown.stdout)["runs"]:
        for event in run["events"]:
            for item in event.get("items", []) if event["type"] == "items" else []:
                if item["type"] == "function_call_output":
                    found.append((run["question"], item["output"], item.get("details", {})))
    return found


def _read_notes() -> Turn:
    return Turn(calls=[Call("read_file", {"path": "notes.txt"})])


def test_a_follow_up_reuses_an_unchanged_read_and_reads_a_changed_file_again(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    notes = project / "notes.txt"
    time.sleep(SETTLED_NS / 1e9 + 0.2)  # a file changed just before a read is never reused
    written = notes.stat()

    def rewrite(body: dict[str, Any]) -> Turn:
        """Same size, and the modification time put back: only the change time tells."""
        notes.write_text("alpha 18\n", encoding="utf-8")
        os.utime(notes, ns=(written.st_atime_ns, written.st_mtime_ns))
        return _read_notes()

    fake_server.add(
        _read_notes(),
        Turn("17"),
        _read_notes(),
        Turn("still 17"),
        rewrite,
        Turn("now 18"),
    )
    stdin = "what is alpha?\nand again?\nand now?\n"
    out, err, code = _chat(fake_server, project, tmp_path / "data", stdin)
    assert code == 0, err
    assert out.splitlines() == ["17", "still 17", "now 18"]
    saved = _saved_outputs(tmp_path / "data")
    assert [(q, text, d.get("reused", False)) for q, text, d in saved] == [
        ("what is alpha?", NOTES, False),  # read
        ("and again?", NOTES, True),  # unchanged: the same text, not read again
        ("and now?", "alpha 18\n", False),  # changed: read again
    ]
    # the model got the same result as a new read would give, each time
    assert tool_outputs(fake_server.requests[3].body) == [NOTES, NOTES]
    assert tool_outputs(fake_server.requests[5].body) == [NOTES, NOTES, "alpha 18\n"]


def test_a_chat_greets_and_answers_its_own_commands_without_the_model(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    fake_server.add(Turn("a path question"))
    stdin = "/help\n/model\n/nope\n/HELP\n/etc/hosts what is it?\n"
    out, err, code = _chat(fake_server, project, tmp_path / "data", stdin)
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == (
        f"minipi chat: project {project}, model fake-model. Ask a question; /help lists the "
        "commands, exit or Ctrl-D leaves"
    )
    assert err.count("commands:\n  /help   lists these commands\n  /clear  ") == 2
    assert "  /model  shows the model in use" in err
    assert f"[model] fake-model at {fake_server.base_url}" in lines
    assert "unknown command /nope, /help lists them; nothing was sent to the model" in lines
    asked = [r.body["messages"][-1]["content"] for r in fake_server.requests if r.body]
    assert asked == ["/etc/hosts what is it?"]  # a path is a question; no command was sent
    assert out == "a path question\n"


def test_clear_starts_a_new_conversation_in_the_same_session(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    fake_server.add(Turn("first"), Turn("second"))
    out, err, code = _chat(fake_server, project, tmp_path / "data", "one?\n/clear\ntwo?\n")
    assert code == 0, err
    assert out.splitlines() == ["first", "second"]
    assert "[session talk] context cleared: the next question starts a new conversation" in err
    sent = fake_server.requests[-1].body or {}
    assert [m["content"] for m in sent["messages"] if m["role"] != "system"] == ["two?"]
    shown = minipi(
        "sessions", "show", "talk", "--json", env=clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    )
    assert [r["question"] for r in json.loads(shown.stdout)["runs"]] == ["one?", "two?"]


@pytest.mark.timeout(120)
def test_a_cancelled_question_counts_the_request_its_session_records(
    fake_server: FakeServer, project: Path, tmp_path: Path, terminals: list[Terminal]
) -> None:
    fake_server.add(RawReply(body=b"{}", delay=30))
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    args = ["chat", "-p", str(project), "--base-url", fake_server.base_url, "-m", "fake-model"]
    terminal = Terminal([*args, "--session", "talk"], env)
    terminals.append(terminal)
    terminal.expect("> ")
    terminal.send(b"a slow question\r")
    deadline = time.monotonic() + 20
    while not fake_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    terminal.send(b"\x03")  # Ctrl-C while the model is asked
    shown = terminal.expect("> ")
    assert "[cancelled] 1 model request, 0 tool calls" in shown
    terminal.send(b"exit\r")
    assert terminal.close() == 0
    saved = minipi("sessions", "show", "talk", env=env)
    assert "  total  1 model request, 0 tool calls" in saved.stdout
