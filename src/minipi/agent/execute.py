"""Running the calls of one reply: look each up, check its arguments, ask the rules, run it.

Calls are answered in the model's order. Consecutive independent calls run together in a
bounded thread pool; a ``mutating`` tool runs alone, after everything before it. Events are
sent from the caller's thread only (handlers may run in the pool).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from minipi.agent.config import AgentConfig, checked_tools
from minipi.agent.events import EventSink, ToolCallStarted, ToolExecuting, ToolResultReady
from minipi.agent.rules import Checked, Rules, call_key
from minipi.agent.tools import AgentTool, ToolResult, parse_arguments
from minipi.ai.textcalls import INVALID_CALL_NAME
from minipi.ai.types import FunctionCall, JsonObject

__all__ = ["Outcome", "Toolbox"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One call and its result; ``ran``: its handler ran (it was not answered before)."""

    call: Checked
    result: ToolResult
    ran: bool
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class _Prepared:
    call: Checked
    arguments: JsonObject | None = None
    answer: ToolResult | None = None  # decided without running the tool

    @property
    def runnable(self) -> bool:
        return self.answer is None


class Toolbox:
    """The run's tools by name and as declared (``specs``); which calls began (``started``)
    and how many ran (``executed``)."""

    def __init__(self, tools: Sequence[AgentTool], config: AgentConfig) -> None:
        self.by_name = checked_tools(config, tools)
        self.specs = tuple(tool.spec() for tool in tools if tool.offered)
        self.workers = config.max_parallel_tools
        self.started: set[str] = set()
        self.executed = 0

    def run(
        self, calls: Sequence[FunctionCall], rules: Rules, turn: int, emit: EventSink
    ) -> Iterator[Outcome]:
        """Run ``calls``, yielding their outcomes in the model's order as each batch ends."""
        prepared = [self._prepare(call, rules) for call in calls]
        for p in prepared:
            call = p.call.call
            emit(ToolCallStarted(turn, call.call_id, call.name, call.arguments))
        for batch in _batches(prepared):
            for p in batch:
                if p.runnable:
                    self.started.add(p.call.call.call_id)
                    emit(ToolExecuting(turn, p.call.call.call_id, p.call.call.name))
            for outcome in self._run_batch(batch):
                call, result = outcome.call.call, outcome.result
                emit(ToolResultReady(turn, call.call_id, call.name, result, outcome.seconds))
                yield outcome

    def _prepare(self, call: FunctionCall, rules: Rules) -> _Prepared:
        tool = self.by_name.get(call.name)
        if tool is None:
            return _Prepared(Checked(call), answer=self._unknown(call))
        allow_empty = not tool.parameters.get("properties")
        parsed = parse_arguments(call.arguments, allow_empty=allow_empty)
        if isinstance(parsed, ToolResult):
            return _Prepared(Checked(call, tool), answer=parsed)
        problem = tool.validate(parsed)  # checked here, so ToolExecuting means "about to act"
        if problem is not None:
            invalid = ToolResult.error("invalid_arguments", f"{tool.name}: {problem}")
            return _Prepared(Checked(call, tool), answer=invalid)
        checked = Checked(call, tool, call_key(call.name, parsed))
        return _Prepared(checked, parsed, rules.screen(call, parsed))

    def _unknown(self, call: FunctionCall) -> ToolResult:
        names = ", ".join(sorted(self.by_name))
        if call.name == INVALID_CALL_NAME:
            return ToolResult.error(
                "invalid_tool_call",
                "the <tool_call> block could not be used: write exactly one JSON object "
                '{"name": TOOL, "arguments": {...}} between <tool_call> and </tool_call>, '
                f"with TOOL one of: {names}",
            )
        return ToolResult.error(
            "unknown_tool", f"unknown tool {call.name!r}; available tools: {names}"
        )

    def _run_batch(self, batch: list[_Prepared]) -> list[Outcome]:
        runnable = sum(1 for p in batch if p.runnable)
        self.executed += runnable
        if runnable <= 1 or self.workers <= 1:
            return [_run_one(p) for p in batch]
        run: Callable[[_Prepared], Outcome] = _run_one
        pool = ThreadPoolExecutor(max_workers=min(self.workers, runnable))
        try:
            return list(pool.map(run, batch))
        finally:  # Ctrl-C: do not wait for handlers still running (an MCP call ends on close)
            pool.shutdown(wait=False, cancel_futures=True)


def _batches(prepared: list[_Prepared]) -> list[list[_Prepared]]:
    """Runs of independent calls; each runnable call of a mutating tool is a batch alone."""
    batches: list[list[_Prepared]] = []
    for p in prepared:
        if _alone(p) or not batches or _alone(batches[-1][-1]):
            batches.append([p])
        else:
            batches[-1].append(p)
    return batches


def _alone(p: _Prepared) -> bool:
    return p.call.tool is not None and p.call.tool.mutating and p.runnable


def _run_one(p: _Prepared) -> Outcome:
    if p.answer is not None or p.call.tool is None or p.arguments is None:
        return Outcome(p.call, p.answer or ToolResult.error("tool_failure", "not run"), False)
    start = time.perf_counter()
    result = p.call.tool.execute(p.arguments, validated=True)
    return Outcome(p.call, result, True, time.perf_counter() - start)
