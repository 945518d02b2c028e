"""Our background threads leave Ctrl-C to the main thread (``minipi.threads``): the kernel
then cannot hand SIGINT to a thread that would not wake the main one from a blocking read
(the approval prompt). Checked in the kernel's own view of each thread's signal mask."""

from __future__ import annotations

import io
import signal
import threading
from pathlib import Path

import pytest

from minipi.cli.status import Ticker

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc/self/task"
)


def blocks_sigint(thread: threading.Thread) -> bool:
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("SigBlk:"))
    mask = int(line.split()[1], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))


def test_the_status_line_thread_blocks_sigint_and_the_main_thread_does_not() -> None:
    ticker = Ticker(io.StringIO(), every=0.01)
    ticker.show("waiting")
    try:
        thread = ticker.thread
        assert thread is not None
        assert blocks_sigint(thread)  # from its first instruction (born so), not once it runs
        assert not blocks_sigint(threading.main_thread())
    finally:
        ticker.close()


def test_the_mcp_event_loop_thread_blocks_sigint(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp_servers.helpers import toolbox
    from minipi.mcp import McpConfig, open_mcp_tools

    before = set(threading.enumerate())
    with open_mcp_tools([toolbox()], McpConfig(log_dir=tmp_path)):
        started = [t for t in threading.enumerate() if t not in before]
        assert started, "no event-loop thread"
        assert any(blocks_sigint(t) for t in started)
    assert not blocks_sigint(threading.main_thread())
