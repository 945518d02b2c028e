"""Running the calls of one reply: look each up, check its arguments, ask the rules, run it.

Calls are answered in the model's order. Consecutive independent calls run together, at most
``max_parallel_tools`` at a time; a ``mutating`` tool runs alone, after everything before it,
in the caller's thread. Events are sent from the caller's thread only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
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
        self,
        calls: Sequence[FunctionCall],
        rules: Rules,
        turn: int,
        emit: EventSink,
        deadline: float | None = None,
    ) -> Iterator[Outcome]:
        """Run ``calls``, yielding their outcomes in the model's order as each batch ends
        (none is waited for past ``deadline``, a ``time.monotonic()``)."""
        prepared = [self._prepare(call, rules) for call in calls]
        for p in prepared:
            call = p.call.call
            emit(ToolCallStarted(turn, call.call_id, call.name, call.arguments))
        for batch in _batches(prepared):
            for p in batch:
                if p.runnable:
                    self.started.add(p.call.call.call_id)
                    emit(ToolExecuting(turn, p.call.call.call_id, p.call.call.name))
            for outcome in self._run_batch(batch, deadline):
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

    def _run_batch(self, batch: list[_Prepared], deadline: float | None) -> list[Outcome]:
        """The batch's outcomes in order. A lone call, or a change (which may ask a person),
        runs in this thread; independent calls run in daemon threads, at most ``workers`` at a
        time, waited for until ``deadline`` at most: a handler still running then is left
        behind (it cannot be stopped) and its call is answered ``interrupted``. Ctrl-C waits
        for none of them either."""
        runnable = sum(1 for p in batch if p.runnable)
        self.executed += runnable
        alone = runnable <= 1 and (deadline is None or any(_alone(p) for p in batch))
        if alone or (self.workers <= 1 and deadline is None):
            return [_run_one(p) for p in batch]
        return _in_threads(batch, self.workers, deadline)


def _in_threads(batch: list[_Prepared], workers: int, deadline: float | None) -> list[Outcome]:
    slots = threading.BoundedSemaphore(workers)
    outcomes: list[Outcome | None] = [None] * len(batch)
    finished = [threading.Event() for _ in batch]

    def work(index: int) -> None:
        with slots:
            outcomes[index] = _run_one(batch[index])
        finished[index].set()

    for index in range(len(batch)):
        threading.Thread(target=work, args=(index,), daemon=True, name="minipi-tool").start()
    results: list[Outcome] = []
    for index, p in enumerate(batch):
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        outcome = outcomes[index] if finished[index].wait(left) else None
        results.append(outcome or Outcome(p.call, _OVERRUN, True, left or 0.0))
    return results


_OVERRUN = ToolResult.error(
    "interrupted",
    "interrupted: the run's --max-seconds passed while this call ran; its outcome is unknown",
)


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
