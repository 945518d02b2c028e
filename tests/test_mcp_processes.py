"""stdio servers are process groups that never outlive minipi: stopped on close with their
children, killed with minipi even by SIGKILL; their stderr goes to the log, not the screen."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import (
    TOOLBOX,
    alive,
    group_alive,
    toolbox,
    wait_gone,
    wait_group_gone,
)
from minipi.mcp import McpConfig, McpServer, open_mcp_tools

TESTS = Path(__file__).resolve().parent

# A minipi program in a child process: open the toolbox, print the server's pid and group and
# the pid of a grandchild it started, then hang in a call that blocks the server.
HOLDER = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(TESTS)!r})
from mcp_servers.helpers import toolbox
from minipi.mcp import McpConfig, open_mcp_tools

with open_mcp_tools([toolbox()], McpConfig(call_timeout=600, log_dir=Path(sys.argv[1]))) as mcp:
    tools = {{t.name: t for t in mcp.tools}}
    print(tools["whoami"].execute({{}}).content, tools["spawn"].execute({{}}).content, flush=True)
    tools["block"].execute({{"seconds": 600}})
"""


def ids(text: str) -> tuple[int, int, int]:
    pid, group, grandchild = (int(word) for word in text.split())
    return pid, group, grandchild


def test_each_server_has_its_own_group_and_close_stops_it_with_its_children(
    tmp_path: Path,
) -> None:
    with open_mcp_tools([toolbox()], McpConfig(log_dir=tmp_path)) as mcp:
        tools = {t.name: t for t in mcp.tools}
        pid, group = (int(w) for w in tools["whoami"].execute({}).content.split())
        grandchild = int(tools["spawn"].execute({}).content)
        assert group not in (os.getpgid(0), pid)  # its own group, led by the launcher
        assert os.getpgid(grandchild) == group
        assert alive(pid)
        assert alive(grandchild)
    assert not alive(pid)
    assert not alive(grandchild)  # the server exited on stdin's end; its child was stopped
    assert not group_alive(group)


def test_servers_die_with_minipi_even_when_it_is_killed(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    with holder:
        assert holder.stdout is not None
        pid, group, grandchild = ids(holder.stdout.readline())
        time.sleep(0.3)  # the blocking call is under way: only a signal can stop the server
        assert alive(pid)
        holder.kill()
        _, stderr = holder.communicate(timeout=10)
    assert wait_gone([pid, grandchild], 10) == []
    assert wait_group_gone(group, 5)
    assert stderr == ""  # nothing of the server's reached the screen


def test_a_server_that_ignores_stdin_and_sigterm_is_killed(tmp_path: Path) -> None:
    code = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        f"sys.argv = [{str(TOOLBOX)!r}]; "
        "import runpy; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    server = McpServer("stubborn", command=sys.executable, args=("-c", code))
    with open_mcp_tools([server], McpConfig(log_dir=tmp_path, call_timeout=0.5)) as mcp:
        tools = {t.name: t for t in mcp.tools}
        pid = int(tools["whoami"].execute({}).content.split()[0])
        assert tools["block"].execute({"seconds": 300}).code == "call_timeout"
        started = time.monotonic()
    assert time.monotonic() - started < 3 * 2 + 3  # stdin, SIGTERM, SIGKILL: 2 s each at most
    assert not alive(pid)
