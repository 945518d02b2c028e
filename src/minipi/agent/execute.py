"""Running the calls of one reply: look each up, check its arguments, ask the rules, run it.

Every call of the reply is screened before any runs (``Rules.screen``, the view saying how
many of its calls were let through before it); each ``CallOutcome`` says whether its handler
ran, or which rule refused it (``refused_by``). Calls are answered in the model's order.
Consecutive independent calls run together, at most ``max_parallel_tools`` at a time; a
``mutating`` tool runs alone, after everything before it, in the caller's thread. Events are
sent from the caller's thread only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from minipi.agent.config import AgentConfig, checked_tools
from minipi.agent.events import EventSink, ToolCallStarted, ToolExecuting, ToolResultReady
from minipi.agent.rules import Rules, call_key
from minipi.agent.tools import AgentTool, ToolResult, parse_arguments
from minipi.agent.types import CallOutcome, Checked, End, Note, Rule, RunView
from minipi.ai.textcalls import INVALID_CALL_NAME
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item
from minipi.said import Said

__all__ = ["Toolbox", "beyond_limit", "close_open_calls", "opening_calls"]


@dataclass(frozen=True, slots=True)
class _Prepared:
    call: Checked
    answer: ToolResult | None = None  # decided without running the tool
    refused_by: Rule | None = None

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
        view: RunView,
        emit: EventSink,
        deadline: float | None = None,
    ) -> Iterator[CallOutcome]:
        """Run ``calls``, yielding their outcomes in the model's order as each batch ends
        (none is waited for past ``deadline``, a ``time.monotonic()``)."""
        prepared = self._prepare_all(calls, rules, view)
        turn = view.turns
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

    def _prepare_all(
        self, calls: Sequence[FunctionCall], rules: Rules, view: RunView
    ) -> list[_Prepared]:
        prepared: list[_Prepared] = []
        admitted = 0
        for call in calls:
            p = self._prepare(call, rules, replace(view, admitted=admitted))
            admitted += p.runnable
            prepared.append(p)
        return prepared

    def _prepare(self, call: FunctionCall, rules: Rules, view: RunView) -> _Prepared:
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
        checked = Checked(call, tool, call_key(call.name, parsed), parsed)
        refusal = rules.screen(checked, view)
        if refusal is not None:
            return _Prepared(checked, refusal.result, refusal.rule)
        return _Prepared(checked)

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

    def _run_batch(self, batch: list[_Prepared], deadline: float | None) -> list[CallOutcome]:
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


def _in_threads(batch: list[_Prepared], workers: int, deadline: float | None) -> list[CallOutcome]:
    slots = threading.BoundedSemaphore(workers)
    outcomes: list[CallOutcome | None] = [None] * len(batch)
    finished = [threading.Event() for _ in batch]

    def work(index: int) -> None:
        with slots:
            outcomes[index] = _run_one(batch[index])
        finished[index].set()

    for index in range(len(batch)):
        threading.Thread(target=work, args=(index,), daemon=True, name="minipi-tool").start()
    results: list[CallOutcome] = []
    for index, p in enumerate(batch):
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        outcome = outcomes[index] if finished[index].wait(left) else None
        results.append(outcome or CallOutcome(p.call, _OVERRUN, True, seconds=left or 0.0))
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


def _run_one(p: _Prepared) -> CallOutcome:
    if p.answer is not None or p.call.tool is None:
        answer = p.answer or ToolResult.error("tool_failure", "not run")
        return CallOutcome(p.call, answer, False, p.refused_by)
    start = time.perf_counter()
    result = p.call.tool.execute(p.call.arguments, validated=True)
    return CallOutcome(p.call, result, True, seconds=time.perf_counter() - start)


def opening_calls(config: AgentConfig, history: Sequence[Item]) -> tuple[FunctionCall, ...]:
    """``AgentConfig.opening_calls`` as a run's first calls (turn 0), or none: the history
    already holds a tool result."""
    if any(isinstance(item, FunctionCallOutput) for item in history):
        return ()
    return tuple(
        FunctionCall(f"call_opening_{n}", name, json.dumps(dict(arguments)))
        for n, (name, arguments) in enumerate(config.opening_calls, 1)
    )


def beyond_limit(
    calls: Sequence[FunctionCall], limit: int
) -> tuple[Note, tuple[FunctionCallOutput, ...]]:
    """The calls of a reply beyond its ``limit``, not run: one note for them all, and the
    answer to each."""
    told = Said.of("calls_not_run", count=len(calls), limit=limit)
    note = f"error [too_many_calls]: not run: at most {limit} calls a reply; ask again"
    answers = tuple(FunctionCallOutput(c.call_id, note, is_error=True) for c in calls)
    return Note(told.text(), "too_many_calls", told), answers


def close_open_calls(
    history: list[Item], end: End, started: set[str]
) -> tuple[FunctionCallOutput, ...]:
    """Answer every call that has no result yet, so the history stays valid to send again:
    a call whose handler had begun when the run was cancelled may have done its work."""
    answered = {i.call_id for i in history if isinstance(i, FunctionCallOutput)}
    closed: list[FunctionCallOutput] = []
    for item in history:
        if isinstance(item, FunctionCall) and item.call_id not in answered:
            if end.status != "cancelled":
                note = f"not executed: {end.detail}"
            elif item.call_id in started:
                note = "interrupted: outcome unknown, verify before retrying"
            else:
                note = "not executed: interrupted before it ran"
            closed.append(FunctionCallOutput(item.call_id, note, is_error=True))
    history.extend(closed)
    return tuple(closed)
