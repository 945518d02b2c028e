"""The agent layer ("pi_agent"): tools, the loop, its rules, events and result."""

from typing import TYPE_CHECKING

from minipi._lazy import lazy_names
from minipi.agent.config import AgentConfig
from minipi.agent.events import (
    AgentEvent,
    AssistantText,
    EventSink,
    ItemsAdded,
    ModelDelta,
    ModelResponded,
    Notice,
    RunEnd,
    RunStart,
    ToolCallStarted,
    ToolExecuting,
    ToolResultReady,
    TurnStart,
    to_json,
)
from minipi.agent.function_tool import tool_from_function
from minipi.agent.loop import run_agent
from minipi.agent.result import RunResult, RunStatus
from minipi.agent.tools import (
    AgentTool,
    ApprovalRequest,
    Approver,
    ToolHandler,
    ToolResult,
    needs_approval,
    parse_arguments,
)
from minipi.agent.types import CallOutcome, Checked, End, Nudge, Refusal, Rule, RunView

if TYPE_CHECKING:
    from minipi.agent.aio import AsyncEventSink, arun_agent

# The async entry point loads asyncio (1.4 MB and 5 ms of every `minipi ask`, measured):
# imported on first use.
__getattr__ = lazy_names(__name__, {"minipi.agent.aio": ("AsyncEventSink", "arun_agent")})

__all__ = [
    "AgentConfig",
    "AgentEvent",
    "AgentTool",
    "ApprovalRequest",
    "Approver",
    "AssistantText",
    "AsyncEventSink",
    "CallOutcome",
    "Checked",
    "End",
    "EventSink",
    "ItemsAdded",
    "ModelDelta",
    "ModelResponded",
    "Notice",
    "Nudge",
    "Refusal",
    "Rule",
    "RunEnd",
    "RunResult",
    "RunStart",
    "RunStatus",
    "RunView",
    "ToolCallStarted",
    "ToolExecuting",
    "ToolHandler",
    "ToolResult",
    "ToolResultReady",
    "TurnStart",
    "arun_agent",
    "needs_approval",
    "parse_arguments",
    "run_agent",
    "to_json",
    "tool_from_function",
]
