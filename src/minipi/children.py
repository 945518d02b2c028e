"""minipi's child processes: started so that they never outlive minipi, stopped as a group.

    process = spawn([...], stdin=..., stdout=..., stderr=..., env=...)
    ...
    stop(process, grace=5.0)   # SIGTERM to its group, up to grace s, then SIGKILL to the group

``spawn`` starts the child as the leader of a new session (so a terminal's Ctrl-C reaches
minipi only, and the whole group can be signalled) and, on Linux, asks the kernel to SIGTERM
it when minipi dies, even by SIGKILL (``PR_SET_PDEATHSIG``, ``die_with_parent``). ``stop``
is the one stop procedure: SIGTERM to the group, a grace period until the leader and every
member are gone, then SIGKILL to the group. The embedded engine (``minipi.local.engine``)
is such a child.

A stdio MCP server is started with ``launch``: through this file run as a script, the launcher,
``python -I -S children.py MINIPI_PID COMMAND ARGS…`` (``minipi.mcp.process``). The launcher
leads the group, starts COMMAND in it on the same pipes and waits; when minipi dies (the
kernel's SIGTERM, or, where there is no ``PR_SET_PDEATHSIG``, its parent checked twice a second)
it stops the whole group the same way (``stop_group``), so a server's own children die with it.
It exits with the server's status (128 + N for signal N); a command that cannot be started is
reported on stderr and exits 127. Hence: standard library only, no ``minipi`` import (it must
start in milliseconds)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

TYPE_CHECKING = False  # not typing's: the launcher must not import typing (~10 ms)
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Mapping, Sequence
    from typing import IO, Any, TypeAlias

    _Stream: TypeAlias = int | IO[Any] | None

__all__ = ["GRACE", "die_with_parent", "group_alive", "launch", "spawn", "stop", "stop_group"]

GRACE = 2.0
"""Seconds a group gets between SIGTERM and SIGKILL unless the caller says otherwise."""

_PR_SET_PDEATHSIG = 1
_STEP = 0.01


def die_with_parent(death: int = signal.SIGTERM) -> bool:
    """Ask Linux to send the calling process ``death`` (SIGTERM) when its parent dies, even
    by SIGKILL; False where that is not available (the launcher then polls its parent)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        answer: int = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, death)
    except (OSError, AttributeError):
        return False
    return answer == 0


def spawn(
    command: Sequence[str],
    *,
    stdin: _Stream,
    stdout: _Stream,
    stderr: _Stream,
    env: Mapping[str, str],
    cwd: str | None = None,
    death: int = signal.SIGTERM,
) -> subprocess.Popen[bytes]:
    """Start ``command`` as the leader of a new session that dies with minipi (Linux), by
    ``death``: a child with nothing to save is given SIGKILL (the engine: on SIGTERM its
    server waits for the reply it is generating, which can take minutes)."""
    linux = sys.platform.startswith("linux")
    preexec = (lambda: die_with_parent(death)) if linux else None
    return _popen(
        list(command), preexec, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd
    )


def launch(
    command: Sequence[str],
    *,
    stdin: _Stream,
    stdout: _Stream,
    stderr: _Stream,
    env: Mapping[str, str],
    cwd: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``command`` under the launcher (this file as a script), which leads the new
    session and stops the whole group when minipi dies, on any platform. No ``preexec_fn``
    (the launcher asks for ``PR_SET_PDEATHSIG`` itself): safe while other threads run."""
    launcher = [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid())]
    return _popen(
        [*launcher, *command], None, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd
    )


def _popen(
    command: list[str],
    preexec: Callable[[], object] | None,
    *,
    stdin: _Stream,
    stdout: _Stream,
    stderr: _Stream,
    env: Mapping[str, str],
    cwd: str | None,
) -> subprocess.Popen[bytes]:
    import subprocess  # here: the launcher never needs it (~15 ms)

    return subprocess.Popen(
        command,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        preexec_fn=preexec,
    )


def stop(process: subprocess.Popen[bytes], grace: float = GRACE) -> None:
    """Stop ``process`` (a ``spawn``ed leader) and its group: ``stop_group``, then reap it.
    Never raises; idempotent."""
    import subprocess

    group = process.pid  # the leader's pid is its group's id (start_new_session)
    if process.poll() is None or group_alive(group):
        stop_group(group, lambda: process.poll() is not None and not group_alive(group), grace)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)
    # SIGKILL is delivered, not yet done: a member killed a moment ago may still be running.
    # Wait (bounded: an unreaped zombie keeps a group "alive") until the group is gone, so
    # that nothing of it outlives this call.
    deadline = time.monotonic() + grace
    while group_alive(group) and time.monotonic() < deadline:
        time.sleep(_STEP)


def stop_group(group: int, done: Callable[[], bool], grace: float = GRACE) -> None:
    """SIGTERM to process group ``group`` (0: the caller's own), up to ``grace`` seconds
    until ``done()``, then SIGKILL to the group."""
    _signal(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not done() and time.monotonic() < deadline:
        time.sleep(_STEP)
    _signal(group, signal.SIGKILL)


def group_alive(group: int) -> bool:
    """Whether any process of ``group`` still exists."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(group: int, sig: int) -> None:
    # The group's id stays reserved while any member lives, so this reaches only our group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


# The launcher (run as a script, see the module docstring).


class _Stop(Exception):
    """SIGTERM arrived (minipi died, or is stopping the group)."""


def _launch(argv: list[str]) -> int:
    parent, command = int(argv[1]), argv[2:]
    signal.signal(signal.SIGTERM, _raise_stop)
    try:
        watched = die_with_parent()
        if os.getppid() != parent:  # minipi died before the kernel could watch it
            raise _Stop
        pid = os.fork()
        if pid == 0:
            _exec(command)
        _let_go_of_pipes()
        return _status(_wait(pid, parent, polling=not watched))
    except _Stop:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_group(0, _server_gone)  # the SIGKILL ends the launcher too
        return 128 + signal.SIGTERM


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


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


def _server_gone() -> bool:
    """Whether the launcher's child has exited (reaped now); its own children may not have."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(_launch(sys.argv))
