"""MCP servers' tools as ``AgentTool``s: names, read-only or not, approvals, the context manager.

    with open_mcp_tools([parse_server_command("uvx mcp-server-git")], McpConfig()) as mcp:
        result = run_agent(client, [*file_tools, *mcp.with_approval(approver)], config, question)

A tool keeps its server's name (or ``SERVER__TOOL`` with ``prefix_names``); a name taken by a
reserved (built-in) tool or by another server's tool is refused at start, naming both. A tool
is ``mutating`` (asks before it runs, runs alone) unless the server marks it read-only *and*
its configuration trusts the server. Its parameters are the server's input schema as is: the
loop checks arguments against it before the call, and the wire layer decides ``strict``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minipi.agent.tools import AgentTool, Approver, ToolResult, compile_schema, needs_approval
from minipi.errors import ConfigError, MiniPiError
from minipi.mcp.config import McpConfig, McpServer, unique_servers

if TYPE_CHECKING:
    from minipi.mcp.connection import RemoteTool
    from minipi.mcp.hub import Hub

__all__ = [
    "PREFIX_OPTION",
    "McpTools",
    "ServerTools",
    "ToolInfo",
    "estimate_tokens",
    "inspect_servers",
    "name_clashes",
    "open_mcp_tools",
]

PREFIX_OPTION = "--mcp-prefix"
DEADLINE_GRACE = 0.5
MAX_DESCRIPTION = 4000
"""A longer tool description is cut (it is sent with every model request)."""
_MODEL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI-compatible APIs accept


@dataclass(frozen=True)
class ToolInfo:
    """One MCP tool as minipi offers it."""

    server: str
    name: str
    """The name the model calls (``remote_name``, or ``SERVER__TOOL``)."""
    remote_name: str
    description: str
    parameters: dict[str, Any]
    read_only_hint: bool
    """The server says it changes nothing (``annotations.readOnlyHint``)."""
    mutating: bool
    """Asks before it runs: always, unless the hint is given and the server is trusted."""
    tokens: int
    """Estimated tokens its declaration adds to every request (UTF-8 bytes / 3)."""


@dataclass(frozen=True)
class ServerTools:
    """What one server offers, or why it offers nothing."""

    server: McpServer
    tools: tuple[ToolInfo, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()
    """(tool name, why) for tools that cannot be offered (a name or schema models refuse)."""
    error: str | None = None
    """Why the server could not be used (it did not start, did not answer...)."""
    log_path: Path | None = None
    protocol: str = ""


class McpTools:
    """Connected servers and their tools; yielded by ``open_mcp_tools``."""

    def __init__(self, hub: Hub, servers: tuple[ServerTools, ...]) -> None:
        self._hub = hub
        self.servers = servers
        self.tools = tuple(_agent_tool(hub, info) for s in servers for info in s.tools)
        """Every tool; the mutating ones are flagged but not wrapped (see with_approval)."""

    def with_approval(self, approver: Approver) -> list[AgentTool]:
        """``tools``, each mutating one asking ``approver`` first (server, tool, arguments)."""
        infos = {info.name: info for s in self.servers for info in s.tools}
        return [
            needs_approval(tool, approver, _describer(infos[tool.name])) if tool.mutating else tool
            for tool in self.tools
        ]

    def set_deadline(self, deadline: float | None) -> None:
        """Refuse calls after ``deadline`` (``time.monotonic()``) and cut waits to it: the
        run's ``max_seconds`` then holds during MCP calls too. None: only the call timeout.

        A call is cut ``DEADLINE_GRACE`` seconds after it: the run's own clock starts a
        moment after the caller's, and a call answered "time is up" before that clock ran
        out would send the model one more request."""
        self._hub.deadline = None if deadline is None else deadline + DEADLINE_GRACE


@contextmanager
def open_mcp_tools(servers: Sequence[McpServer], config: McpConfig) -> Iterator[McpTools]:
    """Start and connect ``servers``, yield their tools, stop them all on exit.

    Raises ConfigError (nothing left running) when the ``mcp`` extra is missing, a server
    cannot be started or does not answer within ``connect_timeout``, or two tools would have
    the same name; a ``MiniPiError`` of code ``max_seconds`` when the servers that failed
    were only not ready by ``config.deadline``."""
    with _connected(servers, config) as (hub, listed):
        failed = list(hub.failures.values())
        if len(failed) == 1:
            raise failed[0]
        if failed:
            joined = "\n".join(map(str, failed))
            if all(f.code == "max_seconds" for f in failed):
                raise MiniPiError(joined, code="max_seconds")
            raise ConfigError(joined, code="mcp_server_failed")
        clashes = name_clashes(listed, config.reserved_names)
        if clashes:
            raise ConfigError("\n".join(clashes), code="mcp_name_clash")
        yield McpTools(hub, listed)


def inspect_servers(servers: Sequence[McpServer], config: McpConfig) -> list[ServerTools]:
    """Connect each server, list what it offers (or why it cannot be used), stop them all.
    For ``minipi mcp list``; raises only when the ``mcp`` extra is missing."""
    with _connected(servers, config) as (_, listed):
        return list(listed)


def name_clashes(listed: Sequence[ServerTools], reserved: Sequence[str]) -> list[str]:
    """One message per name that two tools would share (a reserved one, or two servers')."""
    owners: dict[str, str] = {}
    messages = []
    for server in listed:
        for info in server.tools:
            if info.name in reserved:
                other: str | None = f"minipi's built-in tool {info.name!r}"
            else:
                other = owners.get(info.name)
            if other is None:
                owners[info.name] = f"the tool {info.name!r} of MCP server {server.server.name!r}"
                continue
            messages.append(
                f"the tool {info.name!r} of MCP server {server.server.name!r} has the same name as "
                f"{other}; pass {PREFIX_OPTION} to call MCP tools SERVER__TOOL "
                f"({server.server.name}__{info.remote_name}), or leave one of them out"
            )
    return messages


def estimate_tokens(declaration: Mapping[str, Any]) -> int:
    """Tokens a tool declaration takes, estimated as its JSON's UTF-8 bytes / 3."""
    return -(-len(json.dumps(declaration, ensure_ascii=False).encode()) // 3)


@contextmanager
def _connected(
    servers: Sequence[McpServer], config: McpConfig
) -> Iterator[tuple[Hub, tuple[ServerTools, ...]]]:
    _require_sdk()
    from minipi.mcp.hub import Hub

    with _log_dir(config.log_dir) as log_dir, _sdk_log(log_dir):
        hub = Hub.start(unique_servers(servers), config, log_dir)
        try:
            yield hub, tuple(_listed(hub, config))
        finally:
            hub.close()


@contextmanager
def _log_dir(log_dir: Path | None) -> Iterator[Path]:
    if log_dir is not None:
        yield log_dir
        return
    import shutil
    import tempfile

    temporary = Path(tempfile.mkdtemp(prefix="minipi-mcp-"))
    try:
        yield temporary
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


@contextmanager
def _sdk_log(log_dir: Path) -> Iterator[None]:
    """The SDK's warnings go to ``log_dir/sdk.log`` while servers are open: with no handler
    configured, Python would print them (tracebacks included) on the screen. Records still
    reach the application's own handlers."""
    import logging

    from minipi.mcp.process import private_dir

    private_dir(log_dir)
    handler = logging.FileHandler(log_dir / "sdk.log", encoding="utf-8", delay=True)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    loggers = [logging.getLogger(name) for name in ("mcp", "client")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        handler.close()


def _listed(hub: Hub, config: McpConfig) -> Iterator[ServerTools]:
    for name, link in hub.links.items():
        log_path = link.log.path if link.log is not None else None
        failure = hub.failures.get(name)
        if failure is not None or link.connection is None:
            yield ServerTools(link.server, error=str(failure), log_path=log_path)
            continue
        kept, left_out = _offered(link.server, link.connection.tools, config)
        left_out = (*link.connection.rejected, *left_out)
        yield ServerTools(
            link.server, kept, left_out, log_path=log_path, protocol=link.connection.protocol
        )


def _offered(
    server: McpServer, remote: Sequence[RemoteTool], config: McpConfig
) -> tuple[tuple[ToolInfo, ...], tuple[tuple[str, str], ...]]:
    kept: list[ToolInfo] = []
    left_out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for tool in remote:
        name = f"{server.name}__{tool.name}" if config.prefix_names else tool.name
        problem = _unusable(name, tool, seen)
        if problem is not None:
            left_out.append((tool.name, problem))
            continue
        seen.add(name)
        description = _bounded(tool.description)
        declaration = {"name": name, "description": description, "parameters": tool.parameters}
        kept.append(
            ToolInfo(
                server.name,
                name,
                tool.name,
                description,
                tool.parameters,
                tool.read_only_hint,
                mutating=not (tool.read_only_hint and server.trust),
                tokens=estimate_tokens(declaration),
            )
        )
    return tuple(kept), tuple(left_out)


def _unusable(name: str, tool: RemoteTool, seen: set[str]) -> str | None:
    """Why a tool cannot be offered, or None."""
    schema = tool.parameters
    if name in seen:
        return "the server lists this name twice"
    if not _MODEL_NAME.fullmatch(name):
        return f"the name {name!r} is not accepted by model APIs (1-64 letters, digits, '_' or '-')"
    if tool.task_support == "required":
        return 'it runs only as a task (taskSupport "required"); minipi does not run tasks'
    if schema.get("type") != "object":
        return "its input schema is not an object schema"
    problem = compile_schema(schema)  # ~0.8 ms; the tool compiles it again at its first call
    return problem if isinstance(problem, str) else None


def _bounded(description: str) -> str:
    """A description the model reads in every request, at most ``MAX_DESCRIPTION`` chars."""
    if len(description) <= MAX_DESCRIPTION:
        return description
    return f"{description[:MAX_DESCRIPTION]}… [description cut: {len(description):,} characters]"


def _agent_tool(hub: Hub, info: ToolInfo) -> AgentTool:
    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        result = hub.call(info.server, info.remote_name, arguments)
        # A tool that may have changed things makes earlier identical reads re-runnable.
        return replace(result, changed=True) if info.mutating and not result.is_error else result

    description = info.description or f"{info.remote_name} (MCP server {info.server})"
    return _McpTool(info.name, description, info.parameters, handler, mutating=info.mutating)


class _McpTool(AgentTool):
    """An ``AgentTool`` whose check leaves the arguments as the model sent them: the
    validator fills in schema defaults where it checks, and the server must receive only
    what the model chose (its own defaults may differ from the ones it declares)."""

    def validate(self, arguments: Mapping[str, Any]) -> str | None:
        return super().validate(copy.deepcopy(dict(arguments)))


def _describer(info: ToolInfo) -> Callable[[Mapping[str, Any]], Mapping[str, str]]:
    """What an approval shows: the server, the tool, each argument in full."""

    def describe(arguments: Mapping[str, Any]) -> Mapping[str, str]:
        lines = {"MCP server": info.server, "tool": info.remote_name}
        if not arguments:
            lines["arguments"] = "(none)"
        for key, value in arguments.items():
            lines[f"argument {key}"] = json.dumps(value, ensure_ascii=False)
        return lines

    return describe


def _require_sdk() -> None:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise ConfigError(
            "MCP servers need the `mcp` extra: pip install 'minipi[mcp]'", code="missing_extra"
        )
