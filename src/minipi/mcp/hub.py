"""The one background event-loop thread that owns every MCP session, and the sync calls into it.

minipi's core is synchronous, the SDK is async: an anyio blocking portal (one thread running
one asyncio loop) owns all sessions; a tool handler, on whatever thread the loop runs it,
submits a call and waits on a ``concurrent.futures.Future`` with a timeout. The wait is a
plain lock wait, so Ctrl-C interrupts it in the main thread; the call is then cancelled on
the loop (the server is told) and KeyboardInterrupt goes on up.

Nothing here raises for a call: a timeout, a server that exited, an error answer are tool
errors the model sees (``call_timeout``, ``server_exited``, ``server_error``, ...).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minipi.agent.tools import ToolResult
from minipi.errors import ConfigError, MiniPiError
from minipi.mcp.config import McpConfig, McpServer
from minipi.mcp.failures import exit_code, refused, seconds, session_expired, why_not
from minipi.mcp.process import GRACE, ServerLog, start_process, stop_process

if TYPE_CHECKING:
    import anyio
    from anyio.from_thread import BlockingPortal
    from mcp_types import CallToolResult

    from minipi.mcp.connection import Connection

__all__ = ["Hub", "Link", "seconds"]

_MARGIN = 5.0  # the loop's own timeout fires first; this only guards a stuck loop
_STOP_WAIT = 4 * GRACE + 5.0  # a server's full stop escalation, with room to spare


@dataclass
class Link:
    """One server as the hub holds it: its process and log, its session, why it is gone."""

    server: McpServer
    process: subprocess.Popen[bytes] | None = None
    log: ServerLog | None = None
    ready: Future[Connection] = field(default_factory=Future)
    owner: Future[None] | None = None
    stop: anyio.Event | None = None
    connection: Connection | None = None
    gone: ToolResult | None = None
    """Once set, every call is answered with it (``server_exited``)."""
    refusals: list[int] = field(default_factory=list)
    """HTTP statuses >= 400 the server answered (for messages)."""

    def refused(self) -> str:
        """`` (HTTP 401)`` for the last refusal not yet reported, else ""."""
        if not self.refusals:
            return ""
        status = self.refusals[-1]
        self.refusals.clear()
        return f" (HTTP {status})"

    def tail(self) -> str:
        """The server's last stderr lines, its secrets (``McpServer.secrets``) masked."""
        return self.server.redact(self.log.tail()) if self.log is not None else ""


class Hub:
    """Started servers and their sessions. Build it with ``Hub.start``; ``close`` stops all."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self.links: dict[str, Link] = {}
        self.failures: dict[str, MiniPiError] = {}
        """Servers that could not be connected, and why (they have no session): a
        ``ConfigError``, or code ``max_seconds`` when the run's deadline came first."""
        self.deadline: float | None = None
        """A ``time.monotonic()`` after which calls are refused (the run's max_seconds)."""
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None

    @classmethod
    def start(cls, servers: Sequence[McpServer], config: McpConfig, log_dir: Path) -> Hub:
        """Start every server (stdio processes first, before the SDK is imported, so they
        boot meanwhile), connect them all in parallel within ``connect_timeout`` (and before
        ``config.deadline``), and list their tools. A server that fails (a command not found,
        no answer...) is in ``failures``; the others are connected."""
        hub = cls(config)
        try:
            for server in servers:
                try:
                    hub.links[server.name] = _spawn(server, log_dir)
                except ConfigError as error:
                    hub.links[server.name] = Link(server)
                    hub.failures[server.name] = error
            hub._connect_all()
        except BaseException:
            hub.close()
            raise
        return hub

    def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call ``tool`` of ``server``; every outcome is a ToolResult (KeyboardInterrupt is
        re-raised after the call is cancelled). An HTTP server that no longer knows the
        session (it restarted: HTTP 404) gets a new one, and the call is sent once more."""
        from minipi.mcp.results import to_tool_result

        link = self.links[server]
        if link.gone is not None:
            return link.gone
        if link.process is not None and link.process.poll() is not None:
            return self._exited(link, None)
        timeout = self._time_left()
        if timeout <= 0:
            return ToolResult.error("budget_exhausted", "not run: the run's time is up")
        outcome = self._send(link, tool, arguments, timeout)
        if session_expired(link, outcome) and self._reconnect(link):
            outcome = self._send(link, tool, arguments, self._time_left())
        if isinstance(outcome, BaseException):
            return self._failed(link, tool, outcome, timeout)
        return to_tool_result(outcome, server, tool, self.config.max_output_chars)

    def _send(
        self, link: Link, tool: str, arguments: Mapping[str, Any], timeout: float
    ) -> CallToolResult | BaseException:
        from minipi.mcp.connection import call_tool

        assert self._portal is not None
        assert link.connection is not None
        link.refusals.clear()  # only what this call meets may be named in its error
        client = link.connection.client
        future = self._portal.start_task_soon(call_tool, client, tool, arguments, timeout)
        try:
            result: CallToolResult = future.result(timeout + _MARGIN)
        except KeyboardInterrupt:
            future.cancel()
            raise
        except BaseException as error:
            future.cancel()
            return error
        return result

    def _reconnect(self, link: Link) -> bool:
        """A new session for ``link`` (HTTP), the old one left; False if it cannot be had."""
        assert self._portal is not None
        if link.stop is not None:
            with contextlib.suppress(RuntimeError):
                self._portal.call(link.stop.set)
        link.ready = Future()
        self._launch(link)
        wait = self.config.connect_timeout
        if self.deadline is not None:  # a call's reconnection does not outlive the run
            wait = max(min(wait, self.deadline - time.monotonic()), 0.0)
        try:
            link.connection = link.ready.result(wait)
        except Exception:
            return False
        return True

    def close(self) -> None:
        """Stop every server (in parallel: close stdin, SIGTERM, SIGKILL) and the loop thread.
        Idempotent."""
        owners = []
        for link in self.links.values():
            if link.owner is None:
                continue
            owners.append(link.owner)
            if not link.ready.done():
                link.owner.cancel()  # still connecting (Ctrl-C at start): no need to wait
            elif link.stop is not None and self._portal is not None:
                with contextlib.suppress(RuntimeError):  # the loop is already gone
                    self._portal.call(link.stop.set)
        _, stuck = concurrent.futures.wait(owners, _STOP_WAIT)
        for owner in stuck:
            owner.cancel()
        concurrent.futures.wait(stuck, _STOP_WAIT)
        self._stack.close()
        self._portal = None
        for link in self.links.values():  # started, but never handed to a session
            if link.process is not None and link.owner is None:
                stop_process(link.process)
                _close_pipes(link.process)

    def _connect_all(self) -> None:
        import anyio.from_thread

        from minipi.threads import sigint_held

        with sigint_held():  # its thread starts no process (ours are spawned here): born deaf
            portal = self._stack.enter_context(
                anyio.from_thread.start_blocking_portal("asyncio", name="minipi-mcp")
            )
        self._portal = portal
        links = [link for name, link in self.links.items() if name not in self.failures]
        for link in links:
            self._launch(link)
        deadline, late = self._start_deadline()
        for link in links:
            self._await_ready(link, deadline, late)

    def _start_deadline(self) -> tuple[float, str | None]:
        """When the servers must be ready: ``connect_timeout`` from now, or the run's deadline
        when it comes first, with what its passing means."""
        now = time.monotonic()
        deadline, run = now + self.config.connect_timeout, self.config.deadline
        if run is None or run >= deadline:
            return deadline, None
        left = seconds(max(run - now, 0.0))
        return run, (
            f"was not ready when the run's time ran out ({left} s of --max-seconds were left "
            "for it to start and list its tools); raise --max-seconds if it is just slow to start"
        )

    def _launch(self, link: Link) -> None:
        """Start ``link``'s owner task (it connects, then publishes through ``link.ready``)."""
        from minipi.mcp.connection import own

        assert self._portal is not None
        link.stop = self._portal.call(_new_event)
        link.owner = self._portal.start_task_soon(
            own,
            link.server,
            link.process,
            link.log,
            self.config.connect_timeout,
            link.ready,
            link.stop,
            link.refusals,
        )
        link.owner.add_done_callback(functools.partial(self._ended, link))

    def _await_ready(self, link: Link, deadline: float, late: str | None = None) -> None:
        """Wait for ``link``'s session until ``deadline``: the run's deadline when ``late``
        says what its passing means (code ``max_seconds``), else the connect timeout's."""
        try:
            link.connection = link.ready.result(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            assert link.owner is not None
            link.owner.cancel()
            self.failures[link.server.name] = self._timed_out(link, late)
        except Exception as error:
            failure = self._start_error(link, why_not(link, error))
            self.failures[link.server.name] = ConfigError(failure, code="mcp_server_failed")

    def _timed_out(self, link: Link, late: str | None) -> MiniPiError:
        """The failure of a server not ready in time: the run's (``late``), or the connect
        timeout's."""
        if late is not None:
            return MiniPiError(self._start_error(link, late), code="max_seconds")
        slow = (
            f"did not answer within {seconds(self.config.connect_timeout)} s; if it is just "
            "slow to start, raise --mcp-connect-timeout"
        )
        return ConfigError(self._start_error(link, slow), code="mcp_server_failed")

    def _start_error(self, link: Link, what: str) -> str:
        """Why ``link``'s server did not start: ``what``, its log, its last stderr lines."""
        tail = link.tail()
        where = f"; its log: {link.log.path}" if link.log is not None else ""
        lines = "".join(f"\n  {line}" for line in tail.splitlines())
        return link.server.redact(
            f"MCP server {link.server.name!r} ({link.server.label()}) {what}{where}"
            + (f"\nits last stderr lines:{lines}" if lines else "")
        )

    def _time_left(self) -> float:
        timeout = self.config.call_timeout
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
        return timeout

    def _failed(self, link: Link, tool: str, error: BaseException, timeout: float) -> ToolResult:
        from minipi.mcp.connection import closed, leaf

        error = leaf(error)
        name = link.server.name
        if link.process is not None and (closed(error) or link.process.poll() is not None):
            return self._exited(link, tool)
        if isinstance(error, TimeoutError):
            return ToolResult.error(
                "call_timeout",
                f"{tool} on MCP server {name!r} did not answer within {seconds(timeout)} s and was "
                "cancelled; its outcome is unknown, check before repeating it (the limit is "
                "--mcp-call-timeout, and the run's --max-seconds)",
            )
        return refused(link, tool, error)

    def _exited(self, link: Link, running: str | None) -> ToolResult:
        """The answer to a call of ``running`` that the exit of ``link``'s server cut short
        (its outcome is unknown), or, with None, to a call made after the exit (not run).
        Every later call gets the second one."""
        name, code = link.server.name, exit_code(link.process)
        tail = "".join(f"\n  {line}" for line in link.tail().splitlines())
        stderr = f" Its last stderr lines:{tail}" if tail else " It wrote nothing to stderr."
        if link.gone is None:
            link.gone = ToolResult.error(
                "server_exited",
                f"not run: MCP server {name!r} exited{code} earlier in this run; its tools "
                f"cannot be used until minipi starts it again.{stderr}",
            )
        if running is None:
            return link.gone
        return ToolResult.error(
            "server_exited",
            f"MCP server {name!r} exited{code} while {running} ran: the outcome of this call "
            f"is unknown (check before repeating it); its tools cannot be used for the rest "
            f"of this run.{stderr}",
        )

    def _ended(self, link: Link, owner: Future[None]) -> None:
        """The owner task ended: after a close that is expected; otherwise the session is
        gone and later calls are answered at once."""
        if link.process is not None and link.process.poll() is not None:
            self._exited(link, None)


def _new_event() -> anyio.Event:
    import anyio

    return anyio.Event()


def _spawn(server: McpServer, log_dir: Path) -> Link:
    if server.command is None:
        return Link(server)
    log, fd = ServerLog.open(log_dir, server)
    try:
        return Link(server, start_process(server, fd), log)
    finally:
        os.close(fd)  # the child has its own copy


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):
            if pipe is not None:
                pipe.close()
