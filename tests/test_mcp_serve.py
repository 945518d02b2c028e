"""``minipi mcp serve``: the real process, driven by the official SDK's clients (stdio and
streamable HTTP) and by another minipi, against the fake model server.

The inner minipi's model is scripted: it reads the sample project's daily report and
answers with its order count, so the answer is backed by line 3 of that file."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

import anyio
import httpx
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from support.cli import EXAMPLES, clean_env, json_lines, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn

REPORT = "reports/daily-2026-09-06.json"
READ_REPORT = Turn(calls=[Call("read_file", {"path": REPORT})])
QUESTION = "How many orders are in the daily report?"
Session = Callable[[ClientSession], Awaitable[None]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES / "sample_project", target)
    return target


def serve_args(project: Path, server: FakeServer, *flags: str) -> list[str]:
    base = ["--project", str(project), "--base-url", server.base_url, "-m", "fake-model"]
    return ["-m", "minipi", "mcp", "serve", *base, *flags]


def over_stdio(args: list[str], env: dict[str, str], log: Path, use: Session) -> None:
    """Start ``python ARGS`` as the SDK's stdio client does and hand its session to ``use``;
    the server's stderr goes to ``log``."""

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=args, env=env)
        with log.open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await use(session)

    anyio.run(main)


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_host_lists_the_tools_and_gets_a_backed_answer_with_its_sources(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    fake_server.add(READ_REPORT, Turn("The daily report has 128 orders."))
    fake_server.add(READ_REPORT, Turn("日报里有 128 个订单。"))
    fake_server.add(READ_REPORT, Turn("128 orders."), Turn('{"orders": 128}'))
    seen: dict[str, Any] = {}

    async def use(session: ClientSession) -> None:
        seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
        told: list[tuple[float, str | None]] = []

        async def note(progress: float, total: float | None, message: str | None) -> None:
            told.append((progress, message))

        asked: dict[str, Any] = {"question": QUESTION}
        seen["answer"] = await session.call_tool("ask_project", asked, progress_callback=note)
        seen["progress"] = told
        seen["chinese"] = await session.call_tool("ask_project", {"question": "日报里有多少订单？"})
        schema = {"type": "object", "properties": {"orders": {"type": "integer"}}}
        asked = {"question": QUESTION, "schema": schema}
        seen["schema"] = await session.call_tool("ask_project", asked)
        for bad in ({"type": "nonsense"}, ["orders"]):
            asked = {"question": QUESTION, "schema": bad}
            seen[f"bad {bad}"] = await session.call_tool("ask_project", asked)
        seen["empty"] = await session.call_tool("ask_project", {"question": "  "})
        seen["lines"] = await session.call_tool("read_sources", {"path": REPORT, "line": 3})
        with pytest.raises(MCPError, match="no tool ask; there are: ask_project, read_sources"):
            await session.call_tool("ask", {})

    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    args = serve_args(project, fake_server, "--session", "served")
    over_stdio(args, env, tmp_path / "server.log", use)

    tools = seen["tools"]
    assert set(tools) == {"ask_project", "read_sources"}
    ask = tools["ask_project"]
    assert ask.input_schema["required"] == ["question"]
    assert set(ask.input_schema["properties"]) == {"question", "schema"}
    assert ask.output_schema is not None
    assert set(ask.output_schema["required"]) == {
        "status",
        "answer",
        "verdict",
        "sources",
        "end_code",
    }
    assert ask.annotations is not None
    assert ask.annotations.read_only_hint is True
    assert tools["read_sources"].input_schema["required"] == ["path", "line"]
    assert tools["read_sources"].output_schema is not None

    answer = seen["answer"]  # the SDK client checked it against the output schema
    assert not answer.is_error
    body = answer.structured_content
    assert body["status"] == "succeeded"
    assert body["answer"] == "The daily report has 128 orders."
    assert body["verdict"] == {"kind": "backed", "reason": None}
    assert body["end_code"] is None
    source = {
        key: body["sources"][0][key] for key in ("figure", "path", "line", "pointer", "status")
    }
    assert source == {
        "figure": "128",
        "path": REPORT,
        "line": 3,
        "pointer": "/orders",
        "status": "exact",
    }
    text = text_of(answer)
    assert text.startswith("The daily report has 128 orders.\n")
    assert "[verdict] backed" in text
    assert f"128  {REPORT}:3  /orders" in text

    assert seen["progress"] == [
        (1, "waiting for the model (turn 1)"),
        (2, "running read_file"),
        (3, "waiting for the model (turn 2)"),
    ]

    chinese = text_of(seen["chinese"])
    assert chinese.startswith("日报里有 128 个订单。")
    assert "[结论] backed" in chinese
    assert f"{REPORT}:3" in chinese

    shaped = seen["schema"].structured_content
    assert shaped["answer"] == '{"orders": 128}'
    assert shaped["output"]["value"] == {"orders": 128}
    (field,) = shaped["output"]["fields"]
    assert (field["pointer"], field["status"]) == ("/orders", "supported")
    assert (field["sources"][0]["path"], field["sources"][0]["line"]) == (REPORT, 3)
    assert shaped["verdict"]["kind"] == "backed"
    assert seen["bad {'type': 'nonsense'}"].is_error
    assert seen["bad ['orders']"].is_error
    assert "the schema does not compile" in text_of(seen["bad {'type': 'nonsense'}"])
    assert "schema must be a JSON object (a JSON Schema), not list" in text_of(
        seen["bad ['orders']"]
    )
    assert seen["empty"].is_error
    assert "question must be a non-empty string" in text_of(seen["empty"])

    lines = seen["lines"].structured_content
    assert (lines["first_line"], lines["last_line"], lines["total_lines"]) == (1, 5, 5)
    assert lines["lines"][2] == {"line": 3, "text": '  "orders": 128,'}
    assert '> 3    "orders": 128,' in text_of(seen["lines"])

    assert fake_server.remaining == 0  # no model request for the refused calls
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "serving ask_project and read_sources" in log
    assert "each question is saved in session served" in log
    assert "Traceback" not in log
    listed = minipi("sessions", "list", "--json", env=env)
    saved = next(s for s in json.loads(listed.stdout) if s["name"] == "served")
    assert saved["runs"] == 3  # a refused call is not a run


def test_a_failed_run_is_a_tool_error_with_the_same_content(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    fake_server.add(READ_REPORT, READ_REPORT)  # never answers within --max-turns 2
    seen: dict[str, Any] = {}

    async def use(session: ClientSession) -> None:
        seen["result"] = await session.call_tool("ask_project", {"question": QUESTION})

    args = serve_args(project, fake_server, "--max-turns", "2")
    over_stdio(args, clean_env(), tmp_path / "server.log", use)
    result = seen["result"]
    assert result.is_error
    body = result.structured_content
    assert (body["status"], body["end_code"], body["verdict"]) == (
        "budget_exhausted",
        "max_turns",
        None,
    )
    assert "max_turns" in text_of(result)
    assert "--max-turns" in text_of(result)


def test_changes_are_allowed_only_when_the_command_line_says_so(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('approve = "all"\n', encoding="utf-8")
    hints: list[bool | None] = []

    async def use(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("ask_project", "read_sources"):
            annotations = tools[name].annotations
            assert annotations is not None
            hints.append(annotations.read_only_hint)

    env = clean_env(MINIPI_CONFIG=str(config))
    over_stdio(serve_args(project, fake_server), env, tmp_path / "file.log", use)
    over_stdio(
        serve_args(project, fake_server, "--approve", "all"), env, tmp_path / "flag.log", use
    )
    assert hints == [True, True, False, True]  # the config file's approve is not a server's
    assert "read-only (--approve all allows changes)" in (tmp_path / "file.log").read_text()
    assert "changes allowed without asking" in (tmp_path / "flag.log").read_text()


def test_read_sources_never_leaves_the_project(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password = hunter2\n", encoding="utf-8")
    (project / "outside").symlink_to(secret)
    (project / ".env").write_text("TOKEN=abc\n", encoding="utf-8")
    refused: dict[str, str] = {}

    async def use(session: ClientSession) -> None:
        for path in ("../secret.txt", str(secret), str(project / REPORT), "outside", ".env"):
            result = await session.call_tool("read_sources", {"path": path, "line": 1})
            assert result.is_error, path
            refused[path] = text_of(result)
        for arguments in ({"line": 9}, {"line": 0}, {"line": 1, "context": 51}, {"lines": 3}):
            result = await session.call_tool("read_sources", {"path": REPORT, **arguments})
            assert result.is_error, arguments
            refused[str(arguments)] = text_of(result)
        still = await session.call_tool("read_sources", {"path": REPORT, "line": 2, "context": 0})
        assert not still.is_error  # the refusals broke nothing
        assert still.structured_content["lines"] == [{"line": 2, "text": '  "date": "2026-09-06",'}]

    over_stdio(serve_args(project, fake_server), clean_env(), tmp_path / "server.log", use)
    assert "contains '..'" in refused["../secret.txt"]
    assert "is absolute" in refused[str(secret)]
    assert "is absolute" in refused[str(project / REPORT)]
    assert "symbolic links are never followed" in refused["outside"]
    assert "may hold secrets" in refused[".env"]
    assert "hunter2" not in "".join(refused.values())
    assert refused["{'line': 9}"] == f"line 9 is past the end of {REPORT}, which has 5 lines"
    assert "line must be a whole number from 1, not 0" in refused["{'line': 0}"]
    assert "context must be a whole number from 0 to 50" in refused["{'line': 1, 'context': 51}"]
    assert refused["{'lines': 3}"] == "unknown arguments: lines (there are: context, line, path)"
    assert fake_server.posts == 0


def test_another_minipi_uses_it_as_a_tool(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    fake_server.add(READ_REPORT, Turn("The daily report has 128 orders."))
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn("The other project's daily report has 128 orders.")

    with FakeServer([Turn(calls=[Call("ask_project", {"question": QUESTION})]), answer]) as outer:
        serve = shlex.join([sys.executable, *serve_args(project, fake_server)])
        here = tmp_path / "here"
        here.mkdir()
        endpoint = ["--base-url", outer.base_url, "-m", "fake-model"]
        proc = minipi(
            "ask",
            "How many orders does the other project's daily report have?",
            *["-p", str(here), *endpoint, "--mcp", serve, "--mcp-trust", "minipi", "--json"],
            env=clean_env(MINIPI_DATA_DIR=str(tmp_path / "data")),
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    end = json_lines(proc.stdout)[-1]
    assert end["answer"] == "The other project's daily report has 128 orders."
    assert end["verdict"]["kind"] == "backed"  # the figure is in the inner minipi's answer
    (told,) = tool_outputs(seen[0])
    assert told.startswith("The daily report has 128 orders.\n")
    assert "[verdict] backed" in told
    assert f"{REPORT}:3" in told
    log = (tmp_path / "data" / "mcp" / "minipi.log").read_text(encoding="utf-8")
    assert "[succeeded] 2 model requests, 1 tool call" in log


def test_streamable_http_on_a_port(fake_server: FakeServer, project: Path) -> None:
    command = [sys.executable, *serve_args(project, fake_server, "--port", "0")]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=clean_env()) as server:
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            assert found is not None, line
            assert http_tools(found.group(0)) == ["ask_project", "read_sources"]
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=20) == 0  # shut down, and what it held closed
            assert "Traceback" not in server.stderr.read()
        finally:
            if server.poll() is None:
                server.kill()


def http_tools(url: str) -> list[str]:
    """The tools the SDK's streamable HTTP client lists at ``url``, after checking that a
    request naming another host (DNS rebinding) is refused."""
    listed: list[str] = []

    async def main() -> None:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed.extend(t.name for t in (await session.list_tools()).tools)

    anyio.run(main)
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Host": "attacker.example", "Accept": "application/json, text/event-stream"}
    other = httpx.post(url, json=body, headers=headers, timeout=10)
    assert other.status_code in (400, 403, 421)
    return listed


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ((), "minipi mcp serve needs --project DIR"),
        (("--project", "{tmp}/nowhere"), "does not exist"),
        (("--project", "{tmp}", "--approve", "ask"), "--approve ask: a server has nobody to ask"),
        (("--project", "{tmp}", "--base-url", "http://127.0.0.1:9/v1"), "no model name"),
        (
            ("--project", "{tmp}", "--model-file", "{tmp}/none.gguf"),
            "none.gguf (from --model-file)",
        ),
    ],
)
def test_what_cannot_start_says_why(tmp_path: Path, flags: tuple[str, ...], said: str) -> None:
    args = [flag.format(tmp=tmp_path) for flag in flags]
    proc = minipi("mcp", "serve", *args, stdin="")
    assert proc.returncode == 2
    assert said in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_a_port_in_use_says_so(tmp_path: Path, fake_server: FakeServer) -> None:
    from minipi.mcp.server import listening_socket

    with listening_socket(0) as taken:
        port = str(taken.getsockname()[1])
        proc = minipi("mcp", "serve", *serve_args(tmp_path, fake_server)[4:], "--port", port)
    assert proc.returncode == 2
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert os.linesep + "Traceback" not in proc.stderr


def test_with_a_token_only_requests_that_carry_it_are_served(
    fake_server: FakeServer, project: Path, tmp_path: Path
) -> None:
    """``MINIPI_MCP_TOKEN``: a request without ``Authorization: Bearer TOKEN``, or with
    another token, is refused 401 before the MCP server sees it; a second minipi that sends
    it (an ``mcpServers`` file's headers) gets its backed answer."""
    fake_server.add(READ_REPORT, Turn("The daily report has 128 orders."))
    command = [sys.executable, *serve_args(project, fake_server, "--port", "0")]
    env = clean_env(MINIPI_MCP_TOKEN="s3cret-token")
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env) as server:
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            assert "a bearer token is required (MINIPI_MCP_TOKEN)" in line
            found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            assert found is not None, line
            url = found.group(0)
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            accept = {"Accept": "application/json, text/event-stream"}
            for given in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
                refused = httpx.post(url, json=body, headers={**accept, **given}, timeout=10)
                assert refused.status_code == 401, given
                assert refused.headers["www-authenticate"].startswith("Bearer")
            servers = {"minipi": {"url": url, "headers": {"Authorization": "Bearer ${TOKEN}"}}}
            config = tmp_path / "mcp.json"
            config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
            here = tmp_path / "here"
            here.mkdir()
            asked = Turn(calls=[Call("ask_project", {"question": QUESTION})])
            seen: list[dict[str, Any]] = []

            def answer(body: dict[str, Any]) -> Turn:
                seen.append(body)
                return Turn("It has 128 orders.")

            with FakeServer([asked, answer]) as outer:
                proc = minipi(
                    "ask", "How many orders does the other project's report have?",
                    "-p", str(here), "--base-url", outer.base_url, "-m", "fake-model",
                    "--mcp-config", str(config), "--mcp-trust", "minipi", "--json",
                    env=clean_env(TOKEN="s3cret-token", MINIPI_DATA_DIR=str(tmp_path / "data")),
                    timeout=120,
                )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            (told,) = tool_outputs(seen[0])
            assert told.startswith("The daily report has 128 orders.\n")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=20)


def test_a_blank_token_is_a_usage_error(tmp_path: Path, fake_server: FakeServer) -> None:
    args = serve_args(tmp_path, fake_server)[4:]
    proc = minipi("mcp", "serve", *args, "--port", "0", env=clean_env(MINIPI_MCP_TOKEN=" "))
    assert proc.returncode == 2
    assert "MINIPI_MCP_TOKEN is set but empty" in proc.stderr
