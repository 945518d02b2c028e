"""Running the calls of one model response: lookup, argument checks, repeats, concurrency.

Calls are answered in the model's order. Consecutive independent calls run together in a
bounded thread pool; a ``mutating`` tool runs alone, after everything before it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from minipi.agent.config import AgentConfig
from minipi.agent.events import EventSink, ToolCallStarted, ToolExecuting, ToolResultReady
from minipi.agent.tools import AgentTool, ToolResult, parse_arguments
from minipi.ai.textcalls import INVALID_CALL_NAME
from minipi.ai.types import FunctionCall, JsonObject

__all__ = ["Ledger", "Outcome", "run_calls"]


@dataclass(frozen=True, slots=True)
class Outcome:
    call: FunctionCall
    result: ToolResult


@dataclass(slots=True)
class _Prepared:
    call: FunctionCall
    tool: AgentTool | None = None
    arguments: JsonObject | None = None
    key: str = ""
    result: ToolResult | None = None  # decided without running the tool


@dataclass
class Ledger:
    """What the run has executed so far: counts, earlier successes, repeated failures."""

    tools: Mapping[str, AgentTool]
    config: AgentConfig
    executed: int = 0
    successes: dict[str, str] = field(default_factory=dict)  # call key -> call_id
    repeats: Counter[str] = field(default_factory=Counter)
    last_error: str = ""
    same_errors: int = 0
    stop: tuple[str, str] | None = None  # (code, message) that ends the run
    budget_hit: bool = False
    denied: dict[str, str] = field(default_factory=dict)  # call key -> what was refused
    failed_changes: dict[str, str] = field(default_factory=dict)  # change key -> what failed

    def prepare(self, call: FunctionCall) -> _Prepared:
        tool = self.tools.get(call.name)
        if tool is None and call.name == INVALID_CALL_NAME:
            names = ", ".join(sorted(self.tools))
            message = (
                "the <tool_call> block could not be used: write exactly one JSON object "
                '{"name": TOOL, "arguments": {...}} between <tool_call> and </tool_call>, '
                f"with TOOL one of: {names}"
            )
            return _Prepared(call, result=ToolResult.error("invalid_tool_call", message))
        if tool is None:
            names = ", ".join(sorted(self.tools))
            message = f"unknown tool {call.name!r}; available tools: {names}"
            return _Prepared(call, result=ToolResult.error("unknown_tool", message))
        allow_empty = not tool.parameters.get("properties")
        parsed = parse_arguments(call.arguments, allow_empty=allow_empty)
        if isinstance(parsed, ToolResult):
            return _Prepared(call, tool, result=parsed)
        problem = tool.validate(parsed)  # checked here, so ToolExecuting means "about to act"
        if problem is not None:
            invalid = ToolResult.error("invalid_arguments", f"{tool.name}: {problem}")
            return _Prepared(call, tool, result=invalid)
        key = call.name + json.dumps(parsed, sort_keys=True, ensure_ascii=False)
        earlier = self.successes.get(key)
        if earlier is not None:
            self.repeats[key] += 1
            if self.repeats[key] >= self.config.max_repeats:
                self.stop = (
                    "stuck_loop",
                    f"the model repeated {call.name} {call.arguments} "
                    f"{self.repeats[key] + 1} times",
                )
            message = (
                f"not run again: {call.name} was already called with these arguments "
                f"(call_id {earlier}); its result is above, use it"
            )
            return _Prepared(call, tool, parsed, key, ToolResult.error("duplicate_call", message))
        limit = self.config.max_tool_calls
        if limit is not None and self.executed >= limit:
            self.budget_hit = True
            message = f"not run: the run's tool-call budget ({limit}) is used up"
            return _Prepared(call, tool, parsed, key, ToolResult.error("budget_exhausted", message))
        self.executed += 1
        return _Prepared(call, tool, parsed, key)

    def forget(self, call_ids: Sequence[str]) -> None:
        """Let these calls be made again (their results were shortened away)."""
        gone = set(call_ids)
        for key in [k for k, v in self.successes.items() if v in gone]:
            del self.successes[key]

    def record(self, prepared: _Prepared, result: ToolResult) -> None:
        self._track_change(prepared, result)
        if result.code == "user_denied":
            self.denied[prepared.key] = f"{prepared.call.name} {prepared.call.arguments}"
        elif not result.is_error:
            self.denied.pop(prepared.key, None)
        if result.changed:
            self.successes.clear()  # the world changed: earlier reads may be stale now
        if not result.is_error and prepared.key:
            self.successes[prepared.key] = prepared.call.call_id
        if result.is_error and result.code != "duplicate_call":
            signature = f"{prepared.call.name}:{result.code}:{result.content}"
            self.same_errors = self.same_errors + 1 if signature == self.last_error else 1
            self.last_error = signature
            if self.same_errors >= self.config.max_repeated_errors:
                self.stop = (
                    "repeated_tool_error",
                    f"the same tool error {self.same_errors} times: {result.content}",
                )
        elif not result.is_error:
            self.same_errors, self.last_error = 0, ""

    def _track_change(self, prepared: _Prepared, result: ToolResult) -> None:
        """A change (a call of a ``mutating`` tool) that failed keeps the run from
        succeeding until a later change succeeds (the model adapted, e.g. corrected a path):
        success is what happened, never what the model says happened (G8). Calls answered
        before their handler ran (malformed, repeated, over budget) are not changes."""
        tool = prepared.tool
        if tool is None or not tool.mutating or prepared.result is not None:
            return
        if not result.is_error:
            self.failed_changes.clear()
        elif result.code not in _NOT_A_FAILED_CHANGE:
            key = prepared.key or prepared.call.call_id
            self.failed_changes[key] = f"{tool.name} {prepared.call.arguments} ({result.code})"


_NOT_A_FAILED_CHANGE = frozenset({"user_denied"})  # reported as such (Ledger.denied)


def run_calls(
    calls: Sequence[FunctionCall], ledger: Ledger, turn: int, emit: EventSink
) -> Iterator[Outcome]:
    """Run ``calls``, yielding their outcomes in the model's order as each batch finishes."""
    prepared = [ledger.prepare(call) for call in calls]
    for p in prepared:
        emit(ToolCallStarted(turn, p.call.call_id, p.call.name, p.call.arguments))
    for batch in _batches(prepared):
        for p in batch:
            if p.result is None:
                emit(ToolExecuting(turn, p.call.call_id, p.call.name))
        for p, result, seconds in _run_batch(batch, ledger.config.max_parallel_tools):
            ledger.record(p, result)
            emit(ToolResultReady(turn, p.call.call_id, p.call.name, result, seconds))
            yield Outcome(p.call, result)


def _batches(prepared: list[_Prepared]) -> list[list[_Prepared]]:
    """Split into runs of independent calls; each mutating tool call is a batch of its own."""
    batches: list[list[_Prepared]] = []
    for p in prepared:
        if _is_alone(p) or not batches or _is_alone(batches[-1][-1]):
            batches.append([p])
        else:
            batches[-1].append(p)
    return batches


def _is_alone(p: _Prepared) -> bool:
    return p.tool is not None and p.tool.mutating and p.result is None


Timed = tuple[_Prepared, ToolResult, float]


def _run_one(p: _Prepared) -> Timed:
    if p.result is not None or p.tool is None or p.arguments is None:
        return p, p.result or ToolResult.error("tool_failure", "not run"), 0.0
    start = time.perf_counter()
    result = p.tool.execute(p.arguments, validated=True)
    return p, result, time.perf_counter() - start


def _run_batch(batch: list[_Prepared], workers: int) -> list[Timed]:
    runnable = sum(1 for p in batch if p.result is None)
    if runnable <= 1 or workers <= 1:
        return [_run_one(p) for p in batch]
    run: Callable[[_Prepared], Timed] = _run_one
    with ThreadPoolExecutor(max_workers=min(workers, runnable)) as pool:
        return list(pool.map(run, batch))
