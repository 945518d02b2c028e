"""MCP servers' tools through the real ``minipi ask``: a stdio server (the SDK toolbox of
``mcp_servers/``) next to the file tools, against the fake model server.

The model's replies are scripted from what each request carried, so the tests see what the
model was offered (tool declarations, guided schemas) and what it was sent back."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import TOOLBOX
from support.cli import clean_env, json_lines, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn

BOX = shlex.join([sys.executable, str(TOOLBOX)])


def ask(server: FakeServer, tmp_path: Path, *flags: str, question: str = "echo?") -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    base = ("--project", str(project), "--base-url", server.base_url, "--model", "fake-model")
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    return minipi("ask", question, *base, "--mcp", BOX, *flags, env=env, timeout=120)


def offered(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def test_a_trusted_read_only_mcp_tool_answers_next_to_the_file_tools(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def first(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn(calls=[Call("echo", {"text": "九六〇〇"})])

    def second(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn(f"The server said {tool_outputs(body)[-1]}.")

    fake_server.add(first, second)
    proc = ask(fake_server, tmp_path, "--mcp-trust", "toolbox", "--json")
    # unbacked (exit 4): the echo returns the model's own argument, which backs nothing
    assert proc.returncode == 4, proc.stderr
    assert json_lines(proc.stdout)[-1]["status"] == "succeeded"
    names = offered(seen[0])
    assert {"echo", "read_file", "list_files", "whoami"} <= names
    assert "add" not in names  # may change things: withheld from a read-only run
    assert tool_outputs(seen[1]) == ["九六〇〇"]
    events = json_lines(proc.stdout)
    call = next(e for e in events if e["type"] == "tool_call")
    assert (call["name"], json.loads(call["arguments"])) == ("echo", {"text": "九六〇〇"})
    assert events[-1]["answer"] == "The server said 九六〇〇."
    assert (tmp_path / "data" / "mcp" / "toolbox.log").is_file()  # its stderr, not the screen
    assert "Traceback" not in proc.stderr


def test_an_untrusted_server_asks_and_a_pipe_cannot_approve(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def first(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn(calls=[Call("echo", {"text": "hi"})])

    fake_server.add(first, lambda body: Turn("done"))
    proc = ask(fake_server, tmp_path, "--approve", "ask")
    assert "echo" in offered(seen[0])  # offered: a terminal could approve it
    assert proc.returncode == 1
    assert "MCP server     toolbox" in proc.stderr  # the approval shows server, tool, arguments
    assert "denied: stdin is not a terminal" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_guided_mode_offers_every_tool_with_free_text_bounded(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """A free-text argument (``echo``'s ``text``) is offered as text of bounded length, a
    number as a number; a tool that may change things stays out of a read-only run."""
    schemas: list[str] = []

    def guided(reply: str) -> Any:
        def answer(body: dict[str, Any]) -> Turn:
            schemas.append(json.dumps(body["response_format"]["schema"], ensure_ascii=False))
            return Turn(text=reply)

        return answer

    fake_server.add(
        guided('{"tool": "echo", "arguments": {"text": "hi"}}'),
        guided('{"answer": "echoed hi"}'),
    )
    question = "echo hi, nap or whoami?"  # each tool the question fits is offered
    proc = ask(fake_server, tmp_path, "--mcp-trust", "toolbox", "--guided", question=question)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "echoed hi"
    assert "leaves out" not in proc.stderr
    assert '"const": "nap"' in schemas[0]
    assert '"const": "whoami"' in schemas[0]  # no arguments at all
    assert '"const": "echo"' in schemas[0]
    assert '"text": {"type": "string", "maxLength": 160}' in schemas[0]
    assert '"const": "fail"' not in schemas[0]  # may change things: not in a read-only run
    assert "│ hi" in proc.stderr  # the tool really ran with the model's text


def test_guided_mode_leaves_out_the_tools_a_file_question_does_not_fit(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """The opening call's result is in before the first request: the question still decides
    which of the server's tools are offered (Qwen2.5-Coder-1.5B, a time server configured,
    called it in the middle of file questions)."""
    schemas: list[str] = []

    def answer(body: dict[str, Any]) -> Turn:
        schemas.append(json.dumps(body["response_format"]["schema"]))
        return Turn(text='{"answer": "Port 8080."}')

    fake_server.add(answer)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("port = 8080\n", encoding="utf-8")
    asked = "What port does notes.txt give?"
    proc = ask(fake_server, tmp_path, "--mcp-trust", "toolbox", "--guided", question=asked)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Port 8080."
    for name in ("echo", "nap", "whoami"):  # before the fix, every one
        assert f'"const": "{name}"' not in schemas[0]
