"""Building the test servers' configurations; starting the HTTP one; checking processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from minipi.local.ports import free_port
from minipi.mcp import McpServer

HERE = Path(__file__).resolve().parent
TOOLBOX = HERE / "toolbox.py"
SILENT = HERE / "silent.py"


def toolbox(*flags: str, name: str = "toolbox", trust: bool = False) -> McpServer:
    """The toolbox over stdio, started with the test's Python."""
    return McpServer(name, command=sys.executable, args=(str(TOOLBOX), *flags), trust=trust)


def silent(*flags: str, name: str = "silent") -> McpServer:
    return McpServer(name, command=sys.executable, args=(str(SILENT), *flags))


class HttpToolbox:
    """The toolbox over streamable HTTP on a free 127.0.0.1 port."""

    def __init__(self, process: subprocess.Popen[bytes], port: int) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}/mcp"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@contextmanager
def http_toolbox(*flags: str) -> Iterator[HttpToolbox]:
    """A started ``HttpToolbox``, stopped on exit."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(TOOLBOX), "--http", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    served = HttpToolbox(process, port)
    try:
        wait_listening(port, process)
        yield served
    finally:
        served.stop()


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    """Return once the HTTP toolbox answers on ``port``."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the HTTP toolbox exited"
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise AssertionError("the HTTP toolbox did not start")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of the processes in group ``pgid``, zombies included."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                members.append((int(entry), fields[0]))
    return members


def group_alive(pgid: int) -> bool:
    """A process of group ``pgid`` still runs (zombies waiting for their reaper do not count:
    an init that reaps slowly is not ours to judge)."""
    return any(state != "Z" for _, state in group_members(pgid))


def wait_group_gone(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """The pids still alive after waiting up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]
