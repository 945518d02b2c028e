"""MCP servers' tools as minipi tools (the optional extra ``minipi[mcp]``).

    from minipi.mcp import McpConfig, open_mcp_tools, parse_server_command

    servers = [parse_server_command("uvx mcp-server-git --repository .")]
    with open_mcp_tools(servers, McpConfig(log_dir=data_dir / "mcp")) as mcp:
        tools = [*create_project_tools(files, approver), *mcp.with_approval(approver)]
        result = run_agent(client, tools, AgentConfig(), "What changed last week?")

Servers are stdio commands (each in its own process group, stopped on exit, never outliving
minipi) or streamable-HTTP URLs, driven by the official ``mcp`` SDK from one background
event-loop thread; the tools are plain synchronous ``AgentTool``s. Importing this package
does not import the SDK: that happens when servers are opened.
"""

from __future__ import annotations

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
