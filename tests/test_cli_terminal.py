"""A newcomer's first minutes (issue 15), through the real command; on a pseudo-terminal where
the point is about a terminal: the status line, what a run says about its root, its
summary, the question from stdin, and the read-only default."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.cli import EXAMPLES, QUESTION, clean_env, json_lines, minipi
from support.fake import Call, FakeServer, Turn
from support.terminal import Terminal

SAMPLE = EXAMPLES / "sample_project"
REPORT = "reports/daily-2026-09-06.json"


def on_tty(args: list[str], env: dict[str, str] | None = None, timeout: float = 30) -> str:
    """``python -m minipi ARGS`` with a pseudo-terminal as stdin, stdout and stderr; all it
    wrote (the terminal turns ``\\n`` into ``\\r\\n``)."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "minipi", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env or clean_env(),
        close_fds=True,
    )
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        process.kill()
        process.wait()
        os.close(master)
    return out.decode("utf-8", "replace")


def endpoint(server: FakeServer, project: Path = SAMPLE) -> list[str]:
    return ["--project", str(project), "--base-url", server.base_url, "--model", "fake-model"]


def slow_answer(body: dict[str, Any]) -> Turn:
    time.sleep(1.5)
    return Turn("订单数为128。")


def test_a_terminal_shows_what_minipi_waits_for_and_for_how_long(fake_server: FakeServer) -> None:
    fake_server.add(Turn(calls=[Call("list_files", {"path": "reports"})]), slow_answer)
    out = on_tty(["ask", QUESTION, *endpoint(fake_server)])
    assert "等待模型回复（第 2 轮）… 1 s" in out  # the seconds tick
    assert "\r\x1b[K" in out  # and the line is erased before anything else is written
    after = out[out.rindex("等待模型回复") :]
    assert "\r\x1b[K" in after.split("\n")[0]
    assert "[无依据：有内容未在任何工具结果中找到] 2 次模型请求" in out  # 128: not read


def test_no_status_line_off_a_terminal_or_with_json(fake_server: FakeServer) -> None:
    fake_server.add(slow_answer)
    piped = minipi("ask", QUESTION, *endpoint(fake_server))
    assert "等待" not in piped.stderr
    assert "\x1b" not in piped.stderr
    fake_server.add(slow_answer)
    out = on_tty(["ask", QUESTION, *endpoint(fake_server), "--json"])
    assert "等待" not in out
    assert "\x1b[K" not in out


def test_the_root_is_said_and_the_home_directory_is_refused(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn("ok"))
    here = minipi("ask", "What is here?", "--base-url", fake_server.base_url, "-m", "fake-model")
    assert f"[project] {Path.cwd()} (the current directory)" in here.stderr
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    refused = minipi("ask", "hi", "-p", str(home), "--base-url", fake_server.base_url, env=env)
    assert refused.returncode == 2
    assert "your home directory" in refused.stderr
    assert "--allow-broad-root" in refused.stderr
    root = minipi("ask", "hi", "--project", "/", "--base-url", fake_server.base_url)
    assert (root.returncode, "the file system's root" in root.stderr) == (2, True)
    assert len(fake_server.requests) == 1  # nothing was sent for the refused roots


def test_the_question_can_come_from_stdin(fake_server: FakeServer) -> None:
    fake_server.add(lambda body: Turn("you asked: " + body["messages"][-1]["content"]))
    proc = minipi("ask", "-", *endpoint(fake_server), stdin="这份日报的营收是多少？\n")
    assert proc.stdout.strip() == "you asked: 这份日报的营收是多少？"
    empty = minipi("ask", *endpoint(fake_server), stdin="  \n")
    assert (empty.returncode, "the question is empty" in empty.stderr) == (2, True)


def test_short_flags_and_a_system_prompt_of_ones_own(fake_server: FakeServer) -> None:
    fake_server.add(Turn("ok"))
    base = ["-p", str(SAMPLE), "--base-url", fake_server.base_url, "-m", "fake-model"]
    proc = minipi("ask", "q", *base, "-s", "Answer in one word.")
    assert proc.returncode == 0, proc.stderr
    system = (fake_server.requests[-1].body or {})["messages"][0]["content"]
    assert system.startswith("You answer questions about the files of one project")
    assert system.endswith("\n\nAnswer in one word.")


def test_the_summary_says_when_every_tool_call_failed(fake_server: FakeServer) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "reports/nope.json"})]),
        Turn("营收是 9600 元。"),
    )
    proc = minipi("ask", QUESTION, *endpoint(fake_server))
    assert proc.returncode == 4  # unbacked: 9600 is in no tool result
    assert "但每次工具调用都失败了：答案没有依据工具读到的内容" in proc.stderr


def test_a_refused_connection_is_not_a_model_request() -> None:
    from minipi.local.ports import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = minipi("ask", "How many orders?", "-p", str(SAMPLE), "--base-url", url, "-m", "m")
    assert proc.returncode == 1
    assert "[failed] 0 model requests, 0 tool calls" in proc.stderr
    assert "endpoint_unreachable" in proc.stderr


@pytest.mark.reliability
def test_a_read_only_question_on_a_terminal_is_never_failed_by_a_stray_change(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """The README's first command, as a tiny model did it in tmux: it read the report, then
    asked to move it into its own folder. Read-only by default: the move is not offered, and
    the one the model makes anyway changes nothing and is not asked of the user."""
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"})]),
        Turn(
            calls=[
                Call("move_file", {"source": "reports/daily-2026-09-06.json", "target": "reports"})
            ]
        ),
        Turn("这份日报的日期是2026-09-06，订单数为128，营收为9600元。"),
    )
    out = on_tty(["ask", QUESTION, *endpoint(fake_server), "--no-stream"])
    first = fake_server.requests[0].body or {}
    assert "move_file" not in [t["function"]["name"] for t in first["tools"]]
    assert "[需要确认]" not in out  # nobody was asked
    assert "[工具失败] read_only" in out
    assert "[成功] 3 次模型请求" in out  # the question asked for no change: not failed by one
    assert "未做改动：本次运行只读（加 --approve ask 才能改动）" in out
    assert (SAMPLE / "reports/daily-2026-09-06.json").exists()


def test_a_read_only_question_answered_without_a_change_succeeds_on_a_terminal(
    fake_server: FakeServer,
) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"})]),
        Turn("这份日报的日期是2026-09-06，订单数为128，营收为9600元。"),
    )
    out = on_tty(["ask", QUESTION, *endpoint(fake_server), "--no-stream", "--json"])
    end = json_lines(out.replace("\r\n", "\n"))[-1]
    assert (end["status"], end["evidence"]["supported"]) == ("succeeded", 3)


def test_a_move_onto_its_own_place_changes_nothing_and_fails_nothing(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """The tiny model's stray move of issue 15, with changes allowed: refused before anyone
    is asked (nothing to do), and not a failed change."""
    import shutil

    project = tmp_path / "sample"
    shutil.copytree(SAMPLE, project)
    fake_server.add(
        Turn(calls=[Call("move_file", {"source": REPORT, "target": "reports"})]),
        Turn("订单数为 128。"),
    )
    proc = minipi("ask", QUESTION, *endpoint(fake_server, project), "--approve", "all")
    assert proc.returncode == 4, proc.stderr  # succeeded, unbacked: 128 was never read
    assert "[工具失败] already_there" in proc.stderr
    assert "[需要确认]" not in proc.stderr
    assert (project / REPORT).exists()


@pytest.mark.timeout(240)  # three chats, each a fresh process; slow on a loaded machine
def test_chat_on_a_terminal_edits_lines_keeps_a_history_and_leaves_cleanly(
    fake_server: FakeServer, tmp_path: Path, terminals: list[Terminal]
) -> None:
    fake_server.add(Turn("first answer"), Turn("second answer"), Turn("third answer"))
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    chat = Terminal(["chat", *endpoint(fake_server), "--no-stream"], env)
    terminals.append(chat)
    chat.expect("> ")
    chat.send(b"how many orders?\r")
    shown = chat.expect("> ")
    assert shown.count("first answer") == 1  # the log showed it: not printed twice
    # Ctrl-C clears the line, the chat goes on. Typed once the line is seen, as a person
    # does: a SIGINT that lands between readline drawing its prompt and waiting for a key is
    # handled only at the next key (CPython's readline loop checks signals on EINTR alone).
    chat.send(b"half a line")
    chat.expect("half a line")
    time.sleep(0.2)
    chat.send(b"\x03")
    chat.expect("> ")
    chat.send(b"\x1b[A\r")  # up arrow: the last question again
    chat.expect("second answer")
    chat.expect("> ")
    chat.send(b"\x04")  # Ctrl-D leaves, on a line of its own
    assert chat.close() == 0
    asked = [r.body["messages"][-1]["content"] for r in fake_server.requests if r.body]
    assert asked == ["how many orders?", "how many orders?"]
    assert "how many orders?" in (tmp_path / "data" / "chat_history").read_text()
    assert (tmp_path / "data" / "chat_history").stat().st_mode & 0o777 == 0o600
    # the next chat finds the history, and a resumed session says what it holds
    again = Terminal(["chat", *endpoint(fake_server), "--session", "s", "--no-stream"], env)
    terminals.append(again)
    again.expect("> ")
    again.send(b"\x1b[A\r")
    again.expect("third answer")
    again.send(b"exit\r")
    assert again.close() == 0
    resumed = Terminal(["chat", *endpoint(fake_server), "--session", "s"], env)
    terminals.append(resumed)
    assert "[session s] 1 earlier question" in resumed.expect("> ")
    resumed.send(b"\x04")
    assert resumed.close() == 0


def test_a_config_file_gives_defaults_that_flags_and_the_environment_override(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    key_script = tmp_path / "key.sh"
    key_script.write_text("#!/bin/sh\necho sk-from-the-command\n", encoding="utf-8")
    key_script.chmod(0o700)
    config.write_text(
        f'base_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        f'api_key_command = "{key_script}"\nmax_turns = 1\nsystem = "Be brief."\n',
        encoding="utf-8",
    )
    env = clean_env(MINIPI_CONFIG=str(config))
    fake_server.add(Turn(calls=[Call("list_files", {"path": "."})]))
    proc = minipi("ask", "q", "-p", str(SAMPLE), env=env)
    assert proc.returncode == 3  # max_turns = 1 from the file
    sent = fake_server.requests[-1]
    assert sent.headers.get("authorization") == "Bearer sk-from-the-command"
    assert (sent.body or {})["messages"][0]["content"].endswith("Be brief.")
    assert "sk-from-the-command" not in proc.stderr
    fake_server.add(Turn("ok"))
    flagged = minipi("ask", "q", "-p", str(SAMPLE), "--max-turns", "3", env=env)
    assert flagged.returncode == 0  # the flag wins
    config.write_text('modle = "typo"\n', encoding="utf-8")
    bad = minipi("ask", "q", "-p", str(SAMPLE), env=env)
    assert bad.returncode == 2
    assert f"the config file {config} has an unknown key 'modle'" in bad.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_as_the_readme_documents_it(shell: str) -> None:
    """README: eval "$(_MINIPI_COMPLETE=bash_source minipi)" (zsh_source, fish_source)."""
    script = minipi(env=clean_env(_MINIPI_COMPLETE=f"{shell}_source"))
    assert script.returncode == 0
    assert "_MINIPI_COMPLETE" in script.stdout
    words = clean_env(_MINIPI_COMPLETE="bash_complete", COMP_WORDS="minipi se", COMP_CWORD="1")
    assert minipi(env=words).stdout.split() == ["plain,serve", "plain,sessions"]
