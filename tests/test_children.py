"""minipi.children: a spawned child and everything it started stop together."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from minipi import children

# A child that ignores SIGTERM and leaves a grandchild (also deaf to SIGTERM) in its group.
_STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(grandchild.pid, flush=True)
time.sleep(60)
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for init counts as gone
        return stat.read().split(") ")[1].startswith("Z")


def test_stop_kills_the_whole_group_after_the_grace() -> None:
    process = children.spawn(
        [sys.executable, "-c", _STUBBORN],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None,
        env=os.environ,
    )
    assert process.stdout is not None
    grandchild = int(process.stdout.readline())
    assert os.getpgid(grandchild) == process.pid != os.getpgid(0)
    started = time.monotonic()
    children.stop(process, grace=0.5)
    assert process.returncode == -9  # deaf to SIGTERM: killed after the grace
    assert 0.5 <= time.monotonic() - started < 5
    deadline = time.monotonic() + 5
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(grandchild)
    children.stop(process)  # idempotent
    process.stdout.close()


def test_stop_of_a_child_that_obeys_is_quick() -> None:
    process = children.spawn(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=None,
        env=os.environ,
    )
    started = time.monotonic()
    children.stop(process, grace=5.0)
    assert process.returncode == -15
    assert time.monotonic() - started < 2
