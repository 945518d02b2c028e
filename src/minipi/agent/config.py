"""Configuration of one agent run: a frozen value, built by the caller (the CLI reads env vars)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from minipi.ai.types import RESERVED_OPTIONS
from minipi.errors import AgentError

if TYPE_CHECKING:
    from minipi.agent.tools import AgentTool
    from minipi.agent.types import Rule

__all__ = ["AgentConfig", "EvidenceMode", "checked_tools"]

EvidenceMode: TypeAlias = Literal["off", "warn", "require"]


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """How the loop runs (keyword arguments only). Budgets end a run ``budget_exhausted``;
    nothing else is inferred."""

    instructions: str | None = None
    """System instructions (the seed's ``instructions``)."""
    max_turns: int = 8
    """Model requests allowed (the seed's meaning). The calls of the last turn still run."""
    answer_on_last_turn: bool = False
    """The last request ``max_turns`` allows asks for the answer (``tool_choice`` ``none``)
    once a tool result follows the question; off, it is a request like the others, as the
    seed's ``--max-turns 2`` experiment shows. The CLI turns it on for guided runs."""
    max_tool_calls: int | None = None
    """Tool calls allowed in the whole run; calls beyond it are answered, not executed."""
    max_calls_per_reply: int = 32
    """Calls one reply may ask for; the rest are answered "not run" in one short result each
    (a reply of 5,000 calls must not run them all, nor flood the log and the next request)."""
    max_seconds: float | None = None
    """Wall-clock budget, checked before each model request."""
    started: float | None = None
    """The ``time.monotonic()`` that ``max_seconds`` counts from (None: the run's start). A
    caller that waited for something before the run (servers starting) passes its own start,
    so that the budget covers those waits too and the run gets what they left of it."""
    required_tools: tuple[str, ...] = ()
    """Tools that must succeed, in this order, before the model may choose freely."""
    request_options: Mapping[str, Any] = field(default_factory=dict)
    """Extra request keys (temperature, max_output_tokens, reasoning...)."""
    parallel_tool_calls: bool = True
    """Let the model ask for several calls in one response."""
    max_parallel_tools: int = 8
    """Threads for independent calls of one response; mutating tools always run alone."""
    max_repeats: int = 3
    """Identical calls refused before the run fails ``stuck_loop``."""
    max_repeated_errors: int = 3
    """The same tool error this many times in a row fails the run ``repeated_tool_error``."""
    max_tool_output_chars: int = 50_000
    """A longer tool output is cut, with a notice saying what was left out."""
    context_tokens: int | None = None
    """The model's context window in tokens, if known: older tool outputs are then shortened
    to keep each request inside it, and a run that cannot fit ends ``context_exhausted``
    before the server would refuse the request (see ``agent/context.py``)."""
    reserve_tokens: int | None = None
    """Tokens of the window kept free for the reply (default: 1/8 of it, at least 256)."""
    evidence: EvidenceMode = "warn"
    """Check an answer's figures against the run's tool results (``RunResult.evidence``):
    ``warn`` keeps the check, ``require`` also refuses an answer with a figure no tool result
    holds (once; then the run fails ``unsupported_figures``), ``off`` checks nothing."""
    opening_calls: Sequence[tuple[str, Mapping[str, Any]]] = ()
    """Calls (tool name, arguments) run before the first model request of a conversation, as
    if the model had asked for them, so that their results are in that request: the CLI opens
    a guided run with the project's top-level listing (every small model measured began with
    that call, and a guided reply is one call). Not run when the history already holds a tool
    result (a chat's later questions); a tool that changes things may not be named."""
    rules: Sequence[Callable[[], Rule]] = ()
    """Extra rules, as factories called once per run (rules keep state): each rule
    (``minipi.agent.rules.Rule``) has the built-in rules' hooks, after them: it sees every
    request, call and outcome, and may refuse a call or an answer (the evidence policy is one)."""


def checked_tools(config: AgentConfig, tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
    """The tools by name, after checking that ``config`` and ``tools`` make a valid run
    (``AgentError`` before any request otherwise)."""
    by_name = _tool_map(tools)
    _check_config(config, by_name)
    return by_name


def _tool_map(tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
    by_name: dict[str, AgentTool] = {}
    for tool in tools:
        if tool.name in by_name:
            raise AgentError(
                f"two tools are named {tool.name!r}; tool names must be unique",
                code="duplicate_tool",
            )
        by_name[tool.name] = tool
    return by_name


def _check_config(config: AgentConfig, tools: dict[str, AgentTool]) -> None:
    unknown = sorted(set(config.required_tools) - set(tools))
    if unknown:
        raise AgentError(
            f"required tool(s) not registered: {', '.join(unknown)}; "
            f"registered: {', '.join(sorted(tools))}",
            code="unknown_required_tool",
        )
    for name, _ in config.opening_calls:
        tool = tools.get(name)
        if tool is None or tool.mutating:
            why = "is not registered" if tool is None else "changes things"
            raise AgentError(
                f"opening call {name!r} {why}: an opening call only reads",
                code="invalid_opening_call",
            )
    reserved = sorted(RESERVED_OPTIONS & set(config.request_options))
    if reserved:
        raise AgentError(
            f"request options may not override the loop's own keys: {', '.join(reserved)}",
            code="reserved_request_key",
        )
    if config.evidence not in ("off", "warn", "require"):
        raise AgentError(
            f"evidence must be off, warn or require, not {config.evidence!r}",
            code="invalid_evidence",
        )
    if config.max_calls_per_reply < 1:
        raise AgentError("max_calls_per_reply must be at least 1", code="invalid_budget")
    if config.max_turns < 1:
        raise AgentError("max_turns must be at least 1", code="invalid_budget")
