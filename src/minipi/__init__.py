"""minipi: a small, transparent agent loop for OpenAI-compatible models.

from minipi import AgentConfig, Endpoint, ProjectFiles, connect, create_project_tools
from minipi import run_agent

client = connect(Endpoint("http://127.0.0.1:8021/v1", "my-model"))
with ProjectFiles("examples/sample_project") as files:
    result = run_agent(client, create_project_tools(files), AgentConfig(evidence="require"),
                       "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。")
print(result.status, result.answer)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minipi._lazy import lazy_names

if TYPE_CHECKING:
    from minipi.agent import (
        AgentConfig,
        AgentEvent,
        AgentTool,
        ApprovalRequest,
        RunResult,
        ToolResult,
        arun_agent,
        needs_approval,
        run_agent,
        tool_from_function,
    )
    from minipi.ai import ClientConfig, Endpoint, connect
    from minipi.errors import (
        AgentError,
        ConfigError,
        FileAccessError,
        MiniPiError,
        ModelError,
        ToolError,
    )
    from minipi.evidence import CheckedClaim, Evidence, Source, check_evidence
    from minipi.files import ProjectFiles, create_project_tools

# The public names and the module each lives in. They are imported on first use (PEP 562),
# so that `minipi --version` or `import minipi.ai` do not pay for the whole package.
_HOMES = {
    "minipi.agent": (
        "AgentConfig",
        "AgentEvent",
        "AgentTool",
        "ApprovalRequest",
        "RunResult",
        "ToolResult",
        "arun_agent",
        "needs_approval",
        "run_agent",
        "tool_from_function",
    ),
    "minipi.evidence": ("CheckedClaim", "Evidence", "Source", "check_evidence"),
    "minipi.ai": ("ClientConfig", "Endpoint", "connect"),
    "minipi.errors": (
        "AgentError",
        "ConfigError",
        "FileAccessError",
        "MiniPiError",
        "ModelError",
        "ToolError",
    ),
    "minipi.files": ("ProjectFiles", "create_project_tools"),
}
__getattr__ = lazy_names(__name__, _HOMES)


__version__ = "0.1.0"

__all__ = [
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "AgentTool",
    "ApprovalRequest",
    "CheckedClaim",
    "ClientConfig",
    "ConfigError",
    "Endpoint",
    "Evidence",
    "FileAccessError",
    "MiniPiError",
    "ModelError",
    "ProjectFiles",
    "RunResult",
    "Source",
    "ToolError",
    "ToolResult",
    "__version__",
    "arun_agent",
    "check_evidence",
    "connect",
    "create_project_tools",
    "needs_approval",
    "run_agent",
    "tool_from_function",
]
