"""What a user sees of MCP servers at the start of a run and at its end, through the real CLI
(``minipi mcp list`` / ``minipi ask`` in a subprocess, the fake model over HTTP): the real
cause of a failed start, tools left out one by one with the reason, what a read-only run
offers, secrets never shown, the answer printed before the servers stop."""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import HERE, TOOLBOX, HttpToolbox, http_toolbox, wait_listening
from minipi.local.ports import free_port
from support.cli import clean_env, json_lines, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn

SCRIPTED = HERE / "scripted.py"
BOX = shlex.join([sys.executable, str(TOOLBOX)])


def scripted(*flags: str) -> str:
    return shlex.join([sys.executable, str(SCRIPTED), *flags])


def mcp_list(tmp_path: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"), **env)
    return minipi("mcp", "list", *flags, env=environment, timeout=60)


def ask(
    server: FakeServer,
    tmp_path: Path,
    *flags: str,
    data: Path | None = None,
    question: str = "what?",
) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    base = ("--project", str(project), "--base-url", server.base_url, "--model", "fake-model")
    env = clean_env(MINIPI_DATA_DIR=str(data or tmp_path / "data"))
    return minipi("ask", question, *base, *flags, env=env, timeout=120)


def config_file(tmp_path: Path, **servers: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_an_initialize_error_is_the_cause_shown_not_the_exit_that_followed(
    tmp_path: Path,
) -> None:
    proc = mcp_list(tmp_path, "--mcp", scripted("--init-error", "database is locked"))
    assert proc.returncode == 2
    assert "answered initialize with an error: database is locked (JSON-RPC error -32603)" in (
        proc.stdout
    )
    assert "exited during start" not in proc.stdout


def test_a_protocol_version_mismatch_names_both_sides(tmp_path: Path) -> None:
    proc = mcp_list(tmp_path, "--mcp", scripted("--version", "1999-01-01"))
    assert proc.returncode == 2
    assert "answered initialize with MCP protocol 1999-01-01, minipi speaks 2024-11-05" in (
        proc.stdout
    )
    assert "pip install -U 'minipi[mcp]'" in proc.stdout
    assert "exited during start" not in proc.stdout


def test_a_server_that_ignores_unknown_requests_starts_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = mcp_list(tmp_path, "--mcp", scripted("--ignore-unknown"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "echo_args" in proc.stdout
    assert time.monotonic() - started < 6  # no 10 s discovery probe before initialize


def test_one_tool_minipi_cannot_declare_is_left_out_with_the_reason(tmp_path: Path) -> None:
    tools = [
        {"name": "good", "inputSchema": {"type": "object"}},
        {"name": "broken", "inputSchema": "not a schema"},
        {
            "name": "queued",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"},
        },
    ]
    proc = mcp_list(tmp_path, "--mcp", scripted("--tools", json.dumps(tools)))
    assert proc.returncode == 0, proc.stdout
    assert "1 tools" in proc.stdout.splitlines()[0]
    assert "left out: broken: its declaration is not valid MCP (inputSchema:" in proc.stdout
    assert 'left out: queued: it runs only as a task (taskSupport "required")' in proc.stdout


def test_a_read_only_run_says_which_mcp_tools_it_offers_and_why_not_the_others(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn("nothing to do"))
    proc = ask(fake_server, tmp_path, "--mcp", BOX)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    head = next(line for line in lines if "MCP server 'toolbox' offers" in line)
    assert head.endswith("offers 0 of 14 tools to this run: none")
    changing = next(line for line in lines if "--approve ask offers them" in line)
    assert "add" in changing
    assert "echo" not in changing
    hinted = next(line for line in lines if "--mcp-trust toolbox offers them" in line)
    assert "echo" in hinted
    assert "marked read-only, but the server is not trusted" in hinted

    fake_server.add(Turn("nothing to do"))
    proc = ask(fake_server, tmp_path, "--mcp", BOX, "--mcp-trust", "toolbox")
    head = next(line for line in proc.stderr.splitlines() if "offers" in line)
    assert "echo" in head.split(":", 2)[2]
    assert "--mcp-trust" not in proc.stderr


def test_a_run_in_chinese_says_which_mcp_tools_it_offers_in_chinese(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """One language per run: what the start says of the tools offered and left out."""
    fake_server.add(Turn("没什么可做"))
    proc = ask(fake_server, tmp_path, "--mcp", BOX, question="现在几点？")
    lines = proc.stderr.splitlines()
    assert "minipi：MCP 服务器 'toolbox' 向本次运行提供 0/14 个工具：无" in lines
    assert any(
        line.startswith("  未提供：") and "--approve ask 会先询问再提供" in line for line in lines
    )
    assert any("--mcp-trust toolbox 会提供" in line for line in lines)
    assert not [line for line in lines if "offers" in line or "not offered" in line]


def test_schema_defaults_the_model_did_not_send_are_not_added(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn("done")

    fake_server.add(Turn(calls=[Call("echo_args", {"text": "hi"})]), answer)
    path = config_file(
        tmp_path, box={"command": sys.executable, "args": [str(SCRIPTED)], "trust": True}
    )
    proc = ask(fake_server, tmp_path, "--mcp-config", str(path))
    assert proc.returncode == 0, proc.stderr
    assert tool_outputs(seen[0]) == ['{"text": "hi"}']  # no "limit": 10 of the schema


def test_secrets_given_in_args_are_never_shown(tmp_path: Path) -> None:
    secret = "s3cr3t-7f2a9"
    args = [str(SCRIPTED), "--marker", "${TOKEN}", "--init-error", "bad token ${TOKEN}"]
    path = config_file(tmp_path, box={"command": sys.executable, "args": args})
    proc = mcp_list(tmp_path, "--mcp-config", str(path), TOKEN=secret)
    assert proc.returncode == 2
    assert "answered initialize with an error: bad token ***" in proc.stdout
    assert "--marker '${TOKEN}'" in proc.stdout  # the label shows the config as written
    assert secret not in proc.stdout + proc.stderr
    log = (tmp_path / "data" / "mcp" / "box.log").read_text(encoding="utf-8")
    assert "${TOKEN}" in log.splitlines()[0]
    assert secret not in log


def test_a_401_says_oauth_is_not_supported(tmp_path: Path) -> None:
    with http_toolbox("--token", "t0ken") as served:
        path = config_file(tmp_path, web={"url": served.url})
        proc = mcp_list(tmp_path, "--mcp-config", str(path))
    assert proc.returncode == 2
    assert "asks for authorization (HTTP 401); minipi does not support OAuth" in proc.stdout
    assert '"Authorization": "Bearer ${TOKEN}"' in proc.stdout


def test_a_long_tool_description_is_cut_before_it_reaches_the_model(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn("done")

    fake_server.add(answer)
    tools = [{"name": "wordy", "description": "blah " * 400_000, "inputSchema": {"type": "object"}}]
    listing = tmp_path / "tools.json"
    listing.write_text(json.dumps(tools), encoding="utf-8")
    proc = ask(
        fake_server, tmp_path, "--mcp", scripted("--tools", f"@{listing}"), "--approve", "all"
    )
    assert proc.returncode == 0, proc.stderr
    declared = next(t for t in seen[0]["tools"] if t["function"]["name"] == "wordy")
    description = declared["function"]["description"]
    assert len(description) < 4100
    assert description.endswith("[description cut: 2,000,000 characters]")


def test_the_answer_is_printed_before_the_servers_are_stopped(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn("the answer"))
    project = tmp_path / "project"
    project.mkdir()
    slow = shlex.join([sys.executable, str(TOOLBOX), "--linger", "3"])
    command = [sys.executable, "-m", "minipi", "ask", "now?", "--project", str(project)]
    command += ["--base-url", fake_server.base_url, "--model", "fake-model", "--mcp", slow]
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as p:
        assert p.stdout is not None
        line = p.stdout.readline()
        printed = time.monotonic()
        p.wait(60)
    assert line.decode().strip() == "the answer"
    assert time.monotonic() - printed > 1.5  # the server took its time to stop, after it


def test_no_model_request_after_max_seconds_ran_out_inside_a_call(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn(calls=[Call("nap", {"seconds": 30})]), Turn("too late"))
    started = time.monotonic()
    proc = ask(fake_server, tmp_path, "--mcp", BOX, "--mcp-trust", "toolbox", "--max-seconds", "2")
    assert time.monotonic() - started < 20
    assert proc.returncode != 0
    assert "max_seconds" in proc.stderr or "--max-seconds" in proc.stderr
    assert fake_server.posts == 1


def test_a_call_timeout_reads_in_whole_seconds(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.add(Turn(calls=[Call("nap", {"seconds": 30})]), Turn("done"))
    flags = ("--mcp", BOX, "--mcp-trust", "toolbox", "--mcp-call-timeout", "1.26", "--json")
    proc = ask(fake_server, tmp_path, *flags)
    result = next(e for e in json_lines(proc.stdout) if e["type"] == "tool_result")
    assert "did not answer within 1 s and was cancelled" in json.dumps(result)


def test_a_data_directory_mcp_creates_is_private(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.add(Turn("done"))
    data = tmp_path / "new" / "data"
    proc = ask(fake_server, tmp_path, "--mcp", BOX, data=data)
    assert proc.returncode == 0, proc.stderr
    for directory in (data.parent, data, data / "mcp"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


def test_after_an_http_server_restarts_a_new_session_is_started(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    port = free_port()
    served = [_http_on(port)]
    seen: list[dict[str, Any]] = []

    def restart(body: dict[str, Any]) -> Turn:
        served[0].stop()
        served[0] = _http_on(port)
        return Turn(calls=[Call("echo", {"text": "after"})])

    def answer(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn("done")

    fake_server.add(Turn(calls=[Call("echo", {"text": "before"})]), restart, answer)
    path = config_file(tmp_path, web={"url": f"http://127.0.0.1:{port}/mcp", "trust": True})
    try:
        proc = ask(fake_server, tmp_path, "--mcp-config", str(path))
    finally:
        served[0].stop()
    assert proc.returncode == 0, proc.stderr
    assert tool_outputs(seen[0]) == ["before", "after"]


def _http_on(port: int) -> HttpToolbox:
    process = subprocess.Popen(
        [sys.executable, str(TOOLBOX), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_listening(port, process)
    return HttpToolbox(process, port)
