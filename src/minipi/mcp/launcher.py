"""The parent of one stdio MCP server: ``python -I -S launcher.py MINIPI_PID COMMAND ARGS…``.

minipi starts this script as the leader of a new process group, with the server's pipes; the
script starts COMMAND in that group on the same pipes and then only waits. It exists so that a
server never outlives minipi, even a minipi killed by SIGKILL: on Linux the kernel sends this
script SIGTERM when minipi dies (``PR_SET_PDEATHSIG``; elsewhere it checks its parent twice a
second), and it then stops the whole group: SIGTERM, then SIGKILL after 2 s. A server's own
children die with it that way, which a signal to the server alone would not do.

It exits with the server's status (128 + N for signal N); a command that cannot be started is
reported on stderr (the server's log) and exits 127. Standard library only, no ``minipi``
import: it must start in milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

GRACE = 2.0
_PR_SET_PDEATHSIG = 1


class _Stop(Exception):
    """SIGTERM arrived (minipi died, or is stopping the group)."""


def main(argv: list[str]) -> int:
    parent, command = int(argv[1]), argv[2:]
    signal.signal(signal.SIGTERM, _raise_stop)
    try:
        watched = _die_with_parent()
        if os.getppid() != parent:  # minipi died before the kernel could watch it
            raise _Stop
        pid = os.fork()
        if pid == 0:
            _exec(command)
        _let_go_of_pipes()
        return _status(_wait(pid, parent, polling=not watched))
    except _Stop:
        _stop_group()
        return 128 + signal.SIGTERM


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def _die_with_parent() -> bool:
    """Ask Linux for SIGTERM when minipi dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        answer: int = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        return answer == 0
    except (OSError, AttributeError):
        return False


def _exec(command: list[str]) -> None:
    """In the forked child: become the server (default SIGTERM handling restored)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        os.write(2, f"minipi: cannot start {command[0]}: {error.strerror}\n".encode())
    os._exit(127)


def _let_go_of_pipes() -> None:
    """Only the server may hold the pipes: minipi sees end-of-file when it exits."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _wait(pid: int, parent: int, *, polling: bool) -> int:
    if not polling:
        return os.waitpid(pid, 0)[1]
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if os.getppid() != parent:
            raise _Stop
        time.sleep(0.5)


def _status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _stop_group() -> None:
    """SIGTERM to the group, a grace period, then SIGKILL to whatever is left (and to us)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.02)  # the server still runs
        except ChildProcessError:
            break  # the server is gone; its own children may not be
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
