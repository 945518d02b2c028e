"""Starting and stopping stdio servers; their stderr logs.

Each server starts through the launcher (``minipi.children.launch``: a few milliseconds of
``python -I -S``) as the leader of its own process group, so that Ctrl-C at the terminal
reaches minipi only, and so that the whole group can be stopped, and dies with minipi even
when minipi is killed.
Processes are started with the standard library before the ``mcp`` SDK is imported: a server
boots while minipi imports the SDK (measured: this overlap saves the server's start-up time,
about as long as the import, from every ``minipi ask``; see bench/perf_mcp.py).

Stopping (``stop_process``) follows the MCP spec: close stdin, wait; then minipi's one stop
procedure (``minipi.children.stop``): SIGTERM the group, wait until the launcher and every
member are gone, SIGKILL the group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from minipi import children
from minipi.errors import ConfigError
from minipi.mcp.config import McpServer

__all__ = ["GRACE", "ServerLog", "private_dir", "server_env", "start_process", "stop_process"]

GRACE = children.GRACE
"""Seconds given at each step of a stop (the SDK's own stdio client waits as long)."""

# The variables a server inherits (the SDK's get_default_environment on POSIX): minipi's API
# keys and the rest of its environment stay in minipi.
_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
_ROTATE_BYTES = 1 << 20
_TAIL_BYTES = 16384


@dataclass(frozen=True)
class ServerLog:
    """The stderr log of one server, and where this run's part of it starts."""

    path: Path
    start: int

    @classmethod
    def open(cls, directory: Path, server: McpServer) -> tuple[ServerLog, int]:
        """Append to ``directory/NAME.log`` (0600, moved to ``NAME.log.1`` past 1 MiB); the
        log and an fd for the child's stderr (the caller closes it once the child has it)."""
        private_dir(directory)
        path = directory / f"{server.name}.log"
        with contextlib.suppress(OSError):
            if path.lstat().st_size > _ROTATE_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as error:
            raise ConfigError(
                f"cannot write the log of MCP server {server.name!r} at {path}: "
                f"{error.strerror}; check the data directory",
                code="mcp_log",
            ) from None
        header = f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} minipi {os.getpid()} starts "
        os.write(fd, (header + server.label() + "\n").encode("utf-8", "replace"))
        return cls(path, os.fstat(fd).st_size), fd

    def tail(self, lines: int = 8) -> str:
        """The last non-blank ``lines`` this run's server wrote (each at most 300 chars)."""
        try:
            with self.path.open("rb") as log:
                log.seek(max(self.start, log.seek(0, os.SEEK_END) - _TAIL_BYTES))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return ""
        kept = [line.rstrip()[:300] for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])


def private_dir(directory: Path) -> None:
    """Make ``directory`` and each missing parent 0700 (the data directory MCP may be the
    first to create holds logs of what servers were given and said)."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)


def server_env(server: McpServer) -> dict[str, str]:
    """What the server's process sees: a few of minipi's variables, then the server's own."""
    inherited = {k: os.environ[k] for k in _INHERITED if k in os.environ}
    return inherited | dict(server.env)


def start_process(server: McpServer, stderr: int) -> subprocess.Popen[bytes]:
    """Start ``server`` through the launcher; ConfigError, before anything starts, when its
    command cannot be found or its directory does not exist."""
    env = server_env(server)
    command = server.command or ""
    found = shutil.which(command, path=env.get("PATH"))
    if found is None:
        raise ConfigError(
            f"MCP server {server.name!r}: command {command!r} not found on PATH; install it "
            "or give its full path",
            code="mcp_command_not_found",
        )
    if server.cwd is not None and not os.path.isdir(server.cwd):
        raise ConfigError(
            f"MCP server {server.name!r}: its directory {server.cwd} does not exist",
            code="mcp_config",
        )
    try:
        return children.launch(
            [found, *server.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=server.cwd,
        )
    except OSError as error:
        raise ConfigError(
            f"MCP server {server.name!r} could not be started: {error.strerror}",
            code="mcp_server_failed",
        ) from None


def stop_process(process: subprocess.Popen[bytes], grace: float = GRACE) -> None:
    """Stop the server and its process group: close stdin, wait ``grace`` seconds, then
    ``children.stop`` (SIGTERM, ``grace`` seconds, SIGKILL, to the whole group). Never
    raises. stdout stays open (the caller may still be draining it)."""
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)
    children.stop(process, grace)
