"""MCP servers that misbehave never hang or break minipi: a server that never answers
``initialize``, one that hangs in a call, one that blocks, one that crashes mid-call, one that
prints garbage on stdout, one that exits at start, a command that does not exist; Ctrl-C and
the run's deadline during a call."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import silent, toolbox
from minipi.agent import AgentTool
from minipi.errors import ConfigError
from minipi.mcp import McpConfig, McpServer, McpTools, open_mcp_tools


@pytest.fixture
def fast(tmp_path: Path) -> McpConfig:
    return McpConfig(connect_timeout=20, call_timeout=1.0, log_dir=tmp_path)


@pytest.fixture
def box(fast: McpConfig) -> Iterator[McpTools]:
    with open_mcp_tools([toolbox(trust=True)], fast) as mcp:
        yield mcp


def tool(mcp: McpTools, name: str) -> AgentTool:
    return next(t for t in mcp.tools if t.name == name)


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("flags", [(), ("--ignore-eof", "--ignore-term")])
def test_a_server_that_never_answers_initialize_fails_the_start_in_bounded_time(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    marker = f"--tag={uuid.uuid4()}"
    config = McpConfig(connect_timeout=1.0, log_dir=tmp_path)
    started = time.monotonic()
    with pytest.raises(ConfigError) as raised, open_mcp_tools([silent(*flags, marker)], config):
        pass
    # 1 s to connect, then the stop: stdin closed, SIGTERM after 2 s, SIGKILL after 2 more
    assert time.monotonic() - started < 1 + 4 + 3
    message = str(raised.value)
    assert "MCP server 'silent'" in message
    assert "did not answer within 1 s" in message
    assert "--mcp-connect-timeout" in message
    assert str(tmp_path / "silent.log") in message
    assert "silent: listening, answering nothing" in message  # its stderr, from the log
    assert raised.value.code == "mcp_server_failed"
    assert processes_with(marker) == []


def test_a_call_that_hangs_is_a_tool_error_and_the_server_stays_usable(box: McpTools) -> None:
    started = time.monotonic()
    result = tool(box, "sleep").execute({"seconds": 30})
    assert time.monotonic() - started < 3
    assert (result.is_error, result.code) == (True, "call_timeout")
    assert "sleep on MCP server 'toolbox' did not answer within 1 s" in result.content
    assert "--mcp-call-timeout" in result.content
    assert tool(box, "echo").execute({"text": "still here"}).content == "still here"


def test_a_server_that_blocks_times_out_and_is_still_stopped(fast: McpConfig) -> None:
    started = time.monotonic()
    with open_mcp_tools([toolbox()], fast) as mcp:
        pid = int(tool(mcp, "whoami").execute({}).content.split()[0])
        result = tool(mcp, "block").execute({"seconds": 300})
        assert result.code == "call_timeout"
        assert tool(mcp, "echo").execute({"text": "x"}).code == "call_timeout"
    assert not os.path.exists(f"/proc/{pid}")
    assert time.monotonic() - started < 30


def test_a_server_that_crashes_mid_call_answers_server_exited_with_its_stderr(
    box: McpTools,
) -> None:
    started = time.monotonic()
    result = tool(box, "crash").execute({})
    assert time.monotonic() - started < 3
    assert (result.is_error, result.code) == (True, "server_exited")
    assert "MCP server 'toolbox' exited (exit code 3) while crash ran" in result.content
    assert "the outcome of this call is unknown" in result.content
    stderr = "Its last stderr lines:\n  toolbox: about to crash\n  Traceback: simulated failure"
    assert stderr in result.content
    started = time.monotonic()
    later = tool(box, "echo").execute({"text": "anyone?"})
    assert time.monotonic() - started < 0.5  # answered at once, nothing sent
    assert (later.code, later.is_error) == ("server_exited", True)
    assert later.content.startswith(
        "error [server_exited]: not run: MCP server 'toolbox' exited (exit code 3) earlier"
    )
    assert stderr in later.content
    assert tool(box, "whoami").execute({}) == later


def test_a_server_that_exits_between_calls_is_not_called_again(fast: McpConfig) -> None:
    with open_mcp_tools([toolbox()], fast) as mcp:
        assert tool(mcp, "quit_later").execute({"seconds": 0.1, "code": 5}).content == "bye"
        time.sleep(1)
        result = tool(mcp, "echo").execute({"text": "hello?"})
    assert result.code == "server_exited"
    assert "not run: MCP server 'toolbox' exited (exit code 5) earlier" in result.content


def test_garbage_on_stdout_is_skipped_and_noted_in_the_log(fast: McpConfig) -> None:
    with open_mcp_tools([toolbox("--garbage")], fast) as mcp:
        assert tool(mcp, "echo").execute({"text": "fine"}).content == "fine"
        log = mcp.servers[0].log_path
    assert log is not None
    text = log.read_text(encoding="utf-8")
    assert "[minipi] skipped a line of stdout that is not JSON-RPC: 'starting toolbox...'" in text
    assert "'{not json'" in text


def test_a_server_that_exits_at_start_says_so_with_its_stderr(fast: McpConfig) -> None:
    code = "import sys; sys.stderr.write('cannot open the database\\n'); sys.exit(4)"
    server = McpServer("db", command=sys.executable, args=("-c", code))
    with pytest.raises(ConfigError) as raised, open_mcp_tools([server], fast):
        pass
    assert "MCP server 'db'" in str(raised.value)
    assert "exited during start (exit code 4)" in str(raised.value)
    assert "cannot open the database" in str(raised.value)


def test_a_command_that_does_not_exist_is_refused_before_anything_starts(
    fast: McpConfig,
) -> None:
    server = McpServer("ghost", command="no-such-mcp-server-here")
    with (
        pytest.raises(ConfigError, match="command 'no-such-mcp-server-here' not found on PATH"),
        open_mcp_tools([server], fast),
    ):
        pass


def test_ctrl_c_during_a_call_interrupts_the_wait_and_cancels_the_call(box: McpTools) -> None:
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tool(box, "sleep").execute({"seconds": 0.9 * 60})
    finally:
        timer.cancel()
    assert time.monotonic() - started < 2
    assert tool(box, "echo").execute({"text": "after ctrl-c"}).content == "after ctrl-c"


def test_ctrl_c_while_servers_start_stops_them_at_once(tmp_path: Path) -> None:
    marker = f"--tag={uuid.uuid4()}"
    config = McpConfig(connect_timeout=60, log_dir=tmp_path)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt), open_mcp_tools([silent(marker)], config):
            pass
    finally:
        timer.cancel()
    assert time.monotonic() - started < 4
    assert processes_with(marker) == []


def test_the_runs_deadline_cuts_a_call_and_refuses_later_ones(tmp_path: Path) -> None:
    config = McpConfig(call_timeout=60, log_dir=tmp_path)
    with open_mcp_tools([toolbox(trust=True)], config) as mcp:
        mcp.set_deadline(time.monotonic() + 0.5)
        started = time.monotonic()
        assert tool(mcp, "sleep").execute({"seconds": 30}).code == "call_timeout"
        assert time.monotonic() - started < 2
        late = tool(mcp, "echo").execute({"text": "late"})
        assert (late.code, late.content) == (
            "budget_exhausted",
            "error [budget_exhausted]: not run: the run's time is up",
        )
        mcp.set_deadline(None)
        assert tool(mcp, "echo").execute({"text": "again"}).content == "again"


def test_parallel_calls_share_one_session(box: McpTools) -> None:
    results: list[str] = []
    threads = [
        threading.Thread(
            target=lambda n=n: results.append(tool(box, "echo").execute({"text": str(n)}).content)
        )
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [str(n) for n in range(8)]
