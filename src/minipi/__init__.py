"""minipi: a small, transparent agent loop for OpenAI-compatible models.

from minipi import AgentConfig, Endpoint, ProjectFiles, connect, create_project_tools
from minipi import run_agent

client = connect(Endpoint("http://127.0.0.1:8021/v1", "qwen3-0.6b"))
with ProjectFiles("examples/sample_project") as files:
    result = run_agent(client, create_project_tools(files), AgentConfig("qwen3-0.6b"),
                       "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。")
print(result.status, result.answer)
"""

from minipi.agent import (
    AgentConfig,
    AgentEvent,
    AgentTool,
    ApprovalRequest,
    RunResult,
    ToolResult,
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
from minipi.files import ProjectFiles, create_project_tools

__version__ = "0.1.0"

__all__ = [
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "AgentTool",
    "ApprovalRequest",
    "ClientConfig",
    "ConfigError",
    "Endpoint",
    "FileAccessError",
    "MiniPiError",
    "ModelError",
    "ProjectFiles",
    "RunResult",
    "ToolError",
    "ToolResult",
    "__version__",
    "connect",
    "create_project_tools",
    "run_agent",
    "tool_from_function",
]
