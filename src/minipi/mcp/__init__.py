"""MCP servers' tools as minipi tools (the optional extra ``minipi[mcp]``).

    from minipi.mcp import McpConfig, open_mcp_tools, parse_server_command

    servers = [parse_server_command("uvx mcp-server-git --repository .")]
    with open_mcp_tools(servers, McpConfig(log_dir=data_dir / "mcp")) as mcp:
        tools = [*create_project_tools(files, approver), *mcp.with_approval(approver)]
        result = run_agent(client, tools, AgentConfig(), "What changed last week?")

Servers are stdio commands (each in its own process group, stopped on exit, never outliving
minipi) or streamable-HTTP URLs, driven by the official ``mcp`` SDK from one background
event-loop thread; the tools are plain synchronous ``AgentTool``s. Importing this package
imports nothing else: the names load on first use (PEP 562), and the SDK only when servers
are opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minipi._lazy import lazy_names

if TYPE_CHECKING:
    from minipi.mcp.config import (
        DEFAULT_CALL_TIMEOUT,
        DEFAULT_CONNECT_TIMEOUT,
        McpConfig,
        McpServer,
        load_servers,
        parse_server_command,
    )
    from minipi.mcp.toolset import (
        PREFIX_OPTION,
        McpTools,
        ServerTools,
        ToolInfo,
        estimate_tokens,
        inspect_servers,
        open_mcp_tools,
    )

_HOMES = {
    "minipi.mcp.config": (
        "DEFAULT_CALL_TIMEOUT",
        "DEFAULT_CONNECT_TIMEOUT",
        "McpConfig",
        "McpServer",
        "load_servers",
        "parse_server_command",
    ),
    "minipi.mcp.toolset": (
        "PREFIX_OPTION",
        "McpTools",
        "ServerTools",
        "ToolInfo",
        "estimate_tokens",
        "inspect_servers",
        "open_mcp_tools",
    ),
}
__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "PREFIX_OPTION",
    "McpConfig",
    "McpServer",
    "McpTools",
    "ServerTools",
    "ToolInfo",
    "estimate_tokens",
    "inspect_servers",
    "load_servers",
    "open_mcp_tools",
    "parse_server_command",
]
