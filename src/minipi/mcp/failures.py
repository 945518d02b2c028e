"""What went wrong with an MCP server, in words a person can act on: why a start failed (what
the server answered first: an error answer, a protocol version, a 401 — before the exit that
followed it), whether a call met an expired HTTP session, and a refused call as a tool error.
``minipi.mcp.hub`` calls these; they read a ``Link`` and never raise."""

from __future__ import annotations

import contextlib
import subprocess
from typing import TYPE_CHECKING

from minipi.agent.tools import ToolResult

if TYPE_CHECKING:
    from minipi.mcp.config import McpServer
    from minipi.mcp.hub import Link

__all__ = ["exit_code", "refused", "seconds", "session_expired", "why_not"]


def why_not(link: Link, error: BaseException) -> str:
    """Why ``link``'s server could not be used, from what it answered first: an error
    answer or a protocol version outranks the exit that followed it."""
    from minipi.mcp.connection import StartFailure, closed, leaf

    step = "initialize"
    if isinstance(error, StartFailure):
        step, error = error.step, error.error
    error = leaf(error)
    answered = _answered(link, step, error)
    if answered is not None:
        return answered
    if link.process is not None and (closed(error) or link.process.poll() is not None):
        return f"exited during start{exit_code(link.process)}"
    text = (str(error)[:300] or type(error).__name__) + link.refused()
    if link.process is None:
        return f"could not be connected: {text}; check the url, its headers, and that it runs"
    return f"failed during {step}: {text}"


def _answered(link: Link, step: str, error: BaseException) -> str | None:
    """What the server answered at ``step`` that made the start fail, else None."""
    from minipi.mcp.connection import closed, rpc_error

    version = _version_problem(error)
    if version is not None:
        return version
    if link.process is None and 401 in link.refusals:
        link.refusals.clear()
        return _unauthorized(link.server)
    answer = rpc_error(error)
    if answer is None or closed(error):
        return None
    code = f"JSON-RPC error {answer[0]}{link.refused().replace(' (', ', ').rstrip(')')}"
    return f"answered {step} with an error: {answer[1][:300]} ({code})"


def _unauthorized(server: McpServer) -> str:
    """An HTTP 401 at start: minipi sends only the headers it is given (no OAuth)."""
    if any(key.lower() == "authorization" for key in server.headers):
        return (
            "refused the Authorization header it was given (HTTP 401): check the token; "
            "minipi does not support OAuth, only a token in the server's headers"
        )
    return (
        "asks for authorization (HTTP 401); minipi does not support OAuth: give a token "
        'in the server\'s "headers" in --mcp-config ("Authorization": "Bearer ${TOKEN}")'
    )


def _version_problem(error: BaseException) -> str | None:
    """The start failure when the two sides share no protocol version, else None."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from minipi.mcp.connection import supported_versions

    ours = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
    fix = "update the server, or minipi's `mcp` package (pip install -U 'minipi[mcp]')"
    if isinstance(error, MCPError) and error.code == UNSUPPORTED_PROTOCOL_VERSION:
        theirs = ", ".join(supported_versions(error)) or "versions it did not name"
        return f"speaks MCP protocol {theirs} only, minipi speaks {ours}: {fix}"
    prefix = "Unsupported protocol version from the server: "
    if isinstance(error, RuntimeError) and str(error).startswith(prefix):
        theirs = str(error)[len(prefix) :][:40]
        return f"answered initialize with MCP protocol {theirs}, minipi speaks {ours}: {fix}"
    return None


def session_expired(link: Link, outcome: object) -> bool:
    """An HTTP server answered 404 to a call: the session it gave is gone (the spec's
    signal to start a new one); the call was not run."""
    from minipi.mcp.connection import rpc_error

    return (
        link.process is None
        and isinstance(outcome, BaseException)
        and rpc_error(outcome) is not None
        and 404 in link.refusals
    )


def refused(link: Link, tool: str, error: BaseException) -> ToolResult:
    """A call that failed with the server still there: refused, unreachable, or else."""
    from minipi.mcp.connection import closed, rpc_error

    name = link.server.name
    answer = rpc_error(error)
    if answer is not None and not closed(error):
        text = link.server.redact(answer[1][:500])
        return ToolResult.error(
            "server_error",
            f"MCP server {name!r} refused {tool}: {text} (JSON-RPC error {answer[0]})",
        )
    if closed(error) or isinstance(error, OSError) or type(error).__module__ == "httpx2":
        return ToolResult.error(
            "server_unreachable",
            f"MCP server {name!r} ({link.server.label()}) could not be reached for {tool}: "
            f"{link.server.redact(str(error)[:300]) or type(error).__name__}{link.refused()}",
        )
    return ToolResult.error(
        "tool_failure", f"{tool} on MCP server {name!r} failed: {type(error).__name__}"
    )


def seconds(value: float) -> str:
    """``4`` for 3.98863, ``0.5`` for 0.4987: what a person reads in a message."""
    return f"{value:.0f}" if value >= 1 else f"{value:.1g}"


def exit_code(process: subprocess.Popen[bytes] | None) -> str:
    if process is None:
        return ""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(1.0)  # the pipe may close just before the process is reaped
    code = process.returncode
    return f" (exit code {code})" if code is not None else ""
