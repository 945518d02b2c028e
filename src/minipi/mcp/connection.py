"""One server's session on the event-loop thread: connect, list its tools, call them.

Each connection is owned by one task (``own``) from connect to close: anyio cancel scopes and
task groups must be left by the task that entered them, so the session is entered, used by
other tasks (each call is one task), and left by its owner when ``stop`` is set or the owner is
cancelled. Imports the SDK: only imported once servers are configured and started.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Implementation, Tool

from minipi import __version__
from minipi.mcp.config import McpServer
from minipi.mcp.process import ServerLog
from minipi.mcp.transports import Streams, http_transport, pipe_transport

__all__ = ["CONNECTION_CLOSED", "Connection", "RemoteTool", "call_tool", "own"]

CONNECTION_CLOSED = -32000
_MAX_PAGES = 100
_CLIENT = Implementation(name="minipi", version=__version__)


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server declared it (the SDK's ``Tool``, reduced to what minipi uses)."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only_hint: bool


@dataclass
class Connection:
    """What the owner task publishes once connected (read by the call tasks)."""

    client: Client
    tools: tuple[RemoteTool, ...]
    protocol: str


async def own(
    server: McpServer,
    process: subprocess.Popen[bytes] | None,
    log: ServerLog | None,
    connect_timeout: float,
    ready: Future[Connection],
    stop: anyio.Event,
    refusals: list[int],
) -> None:
    """Connect, list the tools, publish them through ``ready``, then hold the session until
    ``stop`` is set. A failure before that goes to ``ready`` as its exception. HTTP answers
    >= 400 are noted in ``refusals``."""
    try:
        async with Client(
            _transport(server, process, log, connect_timeout, refusals),
            mode="auto",
            cache=None,
            client_info=_CLIENT,
        ) as client:
            tools = await _list_tools(client)
            ready.set_result(Connection(client, tools, client.protocol_version))
            await stop.wait()
    except BaseException as error:
        if not ready.done():
            ready.set_exception(leaf(error))
        if not isinstance(error, Exception):
            raise  # cancellation and the like belong to anyio


async def call_tool(
    client: Client, name: str, arguments: Mapping[str, Any], timeout: float
) -> CallToolResult:
    """One ``tools/call``; TimeoutError after ``timeout`` seconds (the SDK then tells the
    server the request is cancelled)."""
    with anyio.fail_after(timeout):
        return await client.call_tool(name, dict(arguments))


def leaf(error: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def closed(error: BaseException) -> bool:
    """True for the SDK's "connection closed" (the server went away)."""
    return isinstance(error, MCPError) and error.code == CONNECTION_CLOSED


def rpc_error(error: BaseException) -> tuple[int, str] | None:
    """(code, message) of a JSON-RPC error answer, else None."""
    if isinstance(error, MCPError):
        return error.code, error.message
    return None


@contextlib.asynccontextmanager
async def _transport(
    server: McpServer,
    process: subprocess.Popen[bytes] | None,
    log: ServerLog | None,
    connect_timeout: float,
    refusals: list[int],
) -> AsyncIterator[Streams]:
    if process is not None:
        async with pipe_transport(process, log) as streams:
            yield streams
    else:
        async with http_transport(server, connect_timeout, refusals) as streams:
            yield streams


async def _list_tools(client: Client) -> tuple[RemoteTool, ...]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(_remote(tool) for tool in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


def _remote(tool: Tool) -> RemoteTool:
    hint = tool.annotations.read_only_hint if tool.annotations is not None else None
    return RemoteTool(tool.name, tool.description or "", dict(tool.input_schema), hint is True)
