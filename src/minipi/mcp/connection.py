"""One server's session on the event-loop thread: connect, list its tools, call them.

Each connection is owned by one task (``own``) from connect to close: anyio cancel scopes and
task groups must be left by the task that entered them, so the session is entered, used by
other tasks (each call is one task), and left by its owner when ``stop`` is set or the owner is
cancelled. Imports the SDK: only imported once servers are configured and started.

The handshake is ``initialize`` (the SDK's ``mode="legacy"``), without the SDK's
``server/discover`` probe: a server that ignores unknown requests made that probe cost 10 s at
every start. A server that answers ``initialize`` with -32022 naming only newer (2026-era)
versions is then adopted at one of them (HTTP only: a stdio process is started once).
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
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION, CallToolResult, Implementation, Tool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from minipi import __version__
from minipi.mcp.config import McpServer
from minipi.mcp.process import ServerLog
from minipi.mcp.transports import Streams, http_transport, pipe_transport

__all__ = ["CONNECTION_CLOSED", "Connection", "RemoteTool", "StartFailure", "call_tool", "own"]

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
    task_support: str | None = None
    """``execution.taskSupport``: "required" means it only runs as a task."""


@dataclass
class Connection:
    """What the owner task publishes once connected (read by the call tasks)."""

    client: Client
    tools: tuple[RemoteTool, ...]
    protocol: str
    rejected: tuple[tuple[str, str], ...] = ()
    """(tool name, why) for listed tools whose declaration is not valid MCP."""


class StartFailure(Exception):
    """Why a connection failed before its tools were listed: ``step`` ("initialize" or
    "tools/list") and the ``error`` (unwrapped from exception groups)."""

    def __init__(self, step: str, error: BaseException) -> None:
        super().__init__(f"{step}: {error}")
        self.step = step
        self.error = error


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
    ``stop`` is set. A failure before that goes to ``ready`` as a ``StartFailure``. HTTP
    answers >= 400 are noted in ``refusals`` (cleared once connected)."""
    mode = "legacy"
    while True:
        step = ["initialize"]
        try:
            await _hold(server, process, log, connect_timeout, mode, (ready, stop, refusals), step)
            return
        except BaseException as error:
            found = leaf(error)
            retry = _modern_version(found) if process is None and mode == "legacy" else None
            if retry is not None and not ready.done():
                mode = retry
                continue
            if not ready.done():
                ready.set_exception(StartFailure(step[0], found))
            if not isinstance(error, Exception):
                raise  # cancellation and the like belong to anyio
            return


async def _hold(
    server: McpServer,
    process: subprocess.Popen[bytes] | None,
    log: ServerLog | None,
    connect_timeout: float,
    mode: str,
    signals: tuple[Future[Connection], anyio.Event, list[int]],
    step: list[str],
) -> None:
    ready, stop, refusals = signals
    async with Client(
        _transport(server, process, log, connect_timeout, refusals),
        mode=mode,
        cache=None,
        client_info=_CLIENT,
    ) as client:
        step[0] = "tools/list"
        tools, rejected = await _list_tools(client)
        refusals.clear()  # a refusal before this is no cause of a later error
        ready.set_result(Connection(client, tools, client.protocol_version, rejected))
        await stop.wait()


def _modern_version(error: BaseException) -> str | None:
    """The newest version both sides speak, when ``initialize`` was refused with -32022
    naming only newer versions; else None."""
    if not isinstance(error, MCPError) or error.code != UNSUPPORTED_PROTOCOL_VERSION:
        return None
    mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported_versions(error)]
    return mutual[-1] if mutual else None


def supported_versions(error: MCPError) -> list[str]:
    """The versions a -32022 error says the server speaks."""
    data = error.error.data
    versions = data.get("supported") if isinstance(data, dict) else None
    return [str(v) for v in versions] if isinstance(versions, list) else []


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


async def _list_tools(
    client: Client,
) -> tuple[tuple[RemoteTool, ...], tuple[tuple[str, str], ...]]:
    """The listed tools, and (name, why) for each declaration that is not valid MCP: one
    such tool is left out, not the whole server."""
    tools: list[RemoteTool] = []
    rejected: list[tuple[str, str]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        try:
            page = await client.list_tools(cursor=cursor)
            tools.extend(_remote(tool) for tool in page.tools)
            cursor = page.next_cursor
        except ValidationError:
            cursor = await _list_one_by_one(client, cursor, tools, rejected)
        if not cursor:
            break
    return tuple(tools), tuple(rejected)


async def _list_one_by_one(
    client: Client, cursor: str | None, tools: list[RemoteTool], rejected: list[tuple[str, str]]
) -> str | None:
    """The page at ``cursor`` again, unchecked, each tool then checked on its own (the SDK
    checks a page as a whole); the next cursor."""
    session = client.session
    data: dict[str, Any] = {"method": "tools/list", "params": {"cursor": cursor} if cursor else {}}
    options: CallOptions = {}
    session._stamp(data, options)  # the SDK's own request path, minus its whole-page check
    raw = await session._dispatcher.send_raw_request(data["method"], data["params"], options)
    entries = raw.get("tools") if isinstance(raw, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        try:
            tools.append(_remote(Tool.model_validate(entry, by_name=False)))
        except ValidationError as error:
            name = entry.get("name") if isinstance(entry, dict) else None
            rejected.append((str(name)[:64], f"its declaration is not valid MCP ({_first(error)})"))
    following = raw.get("nextCursor") if isinstance(raw, dict) else None
    return following if isinstance(following, str) else None


def _first(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"{where}: {problem['msg']}"[:200]


def _remote(tool: Tool) -> RemoteTool:
    hint = tool.annotations.read_only_hint if tool.annotations is not None else None
    support = tool.execution.task_support if tool.execution is not None else None
    return RemoteTool(
        tool.name, tool.description or "", dict(tool.input_schema), hint is True, support
    )
