"""``minipi chat`` (seed 004's terminal) and Ctrl-C, through the real command."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from support.cli import EXAMPLES, clean_env, minipi
from support.fake import Call, FakeServer, RawReply, Turn


def chat(server: FakeServer, stdin: str) -> subprocess.CompletedProcess[str]:
    """``minipi chat`` on the treasure hunt, its questions on a piped stdin."""
    return minipi(
        "chat",
        "--project",
        str(EXAMPLES / "treasure_hunt"),
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        stdin=stdin,
    )


def test_chat_keeps_history_across_questions(fake_server: FakeServer) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "step1.txt"})]),
        Turn(text="线索1 让我去读 step2.txt。"),
        Turn(text="你刚才问的是 step1.txt。"),
    )
    proc = chat(fake_server, "读一下 step1.txt\n我刚才问了什么？\nexit\nnever asked\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["线索1 让我去读 step2.txt。", "你刚才问的是 step1.txt。"]
    assert len(fake_server.requests) == 3
    last: Any = fake_server.requests[-1].body
    contents = [m.get("content") for m in last["messages"] if m["role"] in ("user", "tool")]
    assert contents[0] == "读一下 step1.txt"
    assert "线索1" in contents[1]
    assert contents[-1] == "我刚才问了什么？"


def test_chat_ends_on_eof(fake_server: FakeServer) -> None:
    proc = chat(fake_server, "")
    assert proc.returncode == 0
    assert fake_server.requests == []


def test_ctrl_c_during_a_model_request_cancels(fake_server: FakeServer) -> None:
    fake_server.add(RawReply(body=b"{}", delay=30))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minipi",
            "ask",
            "hi",
            "--project",
            str(EXAMPLES / "sample_project"),
            "--base-url",
            fake_server.base_url,
            "--model",
            "fake-model",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    deadline = time.monotonic() + 20
    while not fake_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert '"status": "cancelled"' in out.splitlines()[-1]
    assert "Traceback" not in err
