"""The agent loop: ask the model, run the calls it asks for, feed results back, repeat.

``run_agent`` is the seed's loop with its exits made explicit: a run ends ``succeeded`` only
when the model answers with text and no call is left unanswered; budgets end it
``budget_exhausted``; infrastructure faults end it ``failed``; Ctrl-C ends it ``cancelled``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from minipi.agent.config import AgentConfig, checked_tools
from minipi.agent.context import ContextWindow, cut_output
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
    ToolExecuting,
    TurnStart,
)
from minipi.agent.execute import Ledger, Outcome, run_calls
from minipi.agent.result import RunResult
from minipi.agent.steps import AskAgain, FinalAnswer, Reply, RunTools, Step, Stop, close_open_calls
from minipi.agent.tools import AgentTool
from minipi.ai.types import (
    Delta,
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Usage,
    output_text,
    parse_function_calls,
)
from minipi.errors import AgentError, ConfigError, MiniPiError, ModelError, ModelStreamError

__all__ = ["run_agent"]


def run_agent(
    client: ModelClient,
    tools: Sequence[AgentTool],
    config: AgentConfig,
    question_or_history: str | Sequence[Item],
    on_event: EventSink | None = None,
) -> RunResult:
    """Run the loop until the model answers, a budget runs out, or something fatal happens.

    Raises ``AgentError`` only for a misconfigured run (before any request is sent), and
    ``ConfigError`` for a request that cannot be encoded; every other outcome, including model
    and network failures and a ``MiniPiError`` from ``on_event`` (a session that could not be
    saved), is a ``RunResult``. After a sink failed, later events still go to it but its
    errors are ignored: the run is ending.
    """
    run = _Run(client, tools, config, question_or_history, on_event)
    try:
        result = _loop(run)
    except KeyboardInterrupt:
        result = run.end(Stop("cancelled", "cancelled", "cancelled by the user"))
    except _OutOfTime:
        result = run.end(_time_is_up(config))
    except ModelError as error:
        result = run.end(Stop("failed", error.code, error.message))
    except (ConfigError, AgentError):
        raise
    except MiniPiError as error:  # an event sink could not do its job (a session not saved)
        run.sink_failed = True
        result = run.end(Stop("failed", error.code, error.message))
    run.emit(RunEnd(result))
    return result


def _loop(run: _Run) -> RunResult:
    config = run.config
    while True:
        stop = _before_request(run)
        if stop is not None:
            return run.end(stop)
        run.turns += 1
        step = _decide(run, run.ask_model())
        if isinstance(step, FinalAnswer):
            return _finish(run, step)
        if isinstance(step, Stop):
            return run.end(step)
        if isinstance(step, AskAgain):
            run.emit(Notice(run.turns, step.reason, "retry"))
            continue
        for outcome in run_calls(step.calls, run.ledger, run.turns, run.emit):
            run.deliver(outcome)
        if run.ledger.stop is not None:
            return run.end(Stop("failed", *run.ledger.stop))
        if run.ledger.budget_hit:
            return run.end(
                Stop(
                    "budget_exhausted",
                    "max_tool_calls",
                    f"the tool-call budget ({config.max_tool_calls}) is used up",
                )
            )


def _before_request(run: _Run) -> Stop | None:
    """The budgets checked before each model request, and the context fit."""
    config = run.config
    if run.turns >= config.max_turns:
        return Stop(
            "budget_exhausted",
            "max_turns",
            f"no final answer after {config.max_turns} model requests",
        )
    if run.out_of_time():
        return _time_is_up(config)
    return run.fit_context()


class _OutOfTime(Exception):
    """Raised from the delta sink when ``max_seconds`` passes while a reply streams (F6)."""


def _time_is_up(config: AgentConfig) -> Stop:
    return Stop("budget_exhausted", "max_seconds", f"no final answer within {config.max_seconds} s")


def _finish(run: _Run, answer: FinalAnswer) -> RunResult:
    """Success is a property of what ran, not of the model's text: a denied change fails."""
    if run.ledger.denied:
        refused = "; ".join(run.ledger.denied.values())
        return run.end(
            Stop(
                "failed",
                "user_denied",
                f"a change the model asked for was denied, nothing was changed: {refused}",
            )
        )
    if run.ledger.failed_changes:
        failed = "; ".join(run.ledger.failed_changes.values())
        return run.end(
            Stop(
                "failed", "change_failed", f"a change the model asked for did not happen: {failed}"
            )
        )
    return run.end(Stop("succeeded", "", ""), answer=answer.text)


def _decide(run: _Run, reply: Reply) -> Step:
    """What one model response means for the run (the calls win over any text beside them)."""
    response, text, calls = reply.response, reply.text, reply.calls
    finish = response.finish_reason
    if finish == "content_filter":
        return Stop("failed", "content_filter", "the endpoint filtered the model's reply")
    if finish == "length":
        run.limit_raised = True
        return _once_more(
            run,
            "truncated",
            "the model's reply was cut off at its output-token limit (raise max_output_tokens)",
        )
    if finish == "unknown" and not calls:
        return _once_more(
            run,
            "unfinished",
            "the model's reply did not say it was finished (no known finish reason)",
        )
    if calls:
        return RunTools(calls)
    if text:
        return FinalAnswer(text)
    return _once_more(run, "empty_output", "the model returned neither text nor a tool call")


def _once_more(run: _Run, code: str, what: str) -> Step:
    """A reply that cannot be used (cut off, unfinished, empty): nothing of it is kept; it is
    asked for once more, and a second one in a row fails the run ``code``."""
    run.unusable += 1
    if run.unusable < 2:
        return AskAgain(f"{what}; nothing in it was used, asking once more")
    return Stop("failed", code, f"{what}, twice in a row; nothing in it was executed")


def _usable(response: ModelResponse, text: str, calls: list[FunctionCall]) -> bool:
    """A reply the loop keeps: finished (or with calls), not filtered, not empty."""
    finish = response.finish_reason
    if finish in ("length", "content_filter") or (finish == "unknown" and not calls):
        return False
    return bool(text or calls)


class _Run:
    """The mutable state of one run: history, counters, the tool ledger, the event sink."""

    def __init__(
        self,
        client: ModelClient,
        tools: Sequence[AgentTool],
        config: AgentConfig,
        question_or_history: str | Sequence[Item],
        on_event: EventSink | None,
    ) -> None:
        self.client = client
        self.config = config
        self.tools = checked_tools(config, tools)
        self.specs = tuple(tool.spec() for tool in tools)
        if isinstance(question_or_history, str):
            self.history: list[Item] = [Message("user", question_or_history)]
        else:
            self.history = list(question_or_history)
        self.sink = on_event
        self.started_calls: set[str] = set()  # calls whose handler began (ToolExecuting)
        self.sink_failed = False
        self.ledger = Ledger(self.tools, config)
        self.window = (
            ContextWindow.for_run(
                config.context_tokens, config.reserve_tokens, config.instructions, self.specs
            )
            if config.context_tokens
            else None
        )
        self.turns = 0
        self.unusable = 0  # unusable replies in a row (see _once_more)
        self.limit_raised = False  # a reply was cut at the output limit: ask for twice as much
        self.required_index = 0
        self.usage = Usage()
        self.started = time.monotonic()
        question = next(
            (i.text for i in reversed(self.history) if isinstance(i, Message) and i.role == "user"),
            "",
        )
        self.emit(RunStart(question, client.model, tuple(self.tools)))

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, ToolExecuting):
            self.started_calls.add(event.call_id)
        if self.sink is None:
            return
        if not self.sink_failed:
            self.sink(event)
            return
        with contextlib.suppress(MiniPiError):  # it failed already: the run is ending
            self.sink(event)

    def out_of_time(self) -> bool:
        limit = self.config.max_seconds
        return limit is not None and time.monotonic() - self.started >= limit

    def tool_choice(self) -> str:
        required = self.config.required_tool_names
        return required[self.required_index] if self.required_index < len(required) else "auto"

    def ask_model(self) -> Reply:
        choice = self.tool_choice()
        items = self.window.view(self.history) if self.window else self.history
        request = ModelRequest(
            items=items,
            instructions=self.config.instructions,
            tools=self.specs,
            tool_choice=choice,
            parallel_tool_calls=self.config.parallel_tool_calls,
            options=_raised_limit(self.config.request_options)
            if self.limit_raised
            else self.config.request_options,
            on_delta=self.on_delta,
        )
        self.emit(TurnStart(self.turns, choice, items))
        started = time.perf_counter()
        response = self._create(request)
        self.usage = self.usage + response.usage
        if self.window is not None:
            self.window.observe(items, response.usage.input_tokens)
        self.emit(ModelResponded(self.turns, response, time.perf_counter() - started))
        text = output_text(response.items)
        calls = parse_function_calls(response.items)
        if not _usable(response, text, calls):
            return Reply(response, text, calls)  # cut off, unfinished or empty: not kept
        if text:
            self.emit(AssistantText(self.turns, text))
        self.unusable = 0
        self.history.extend(response.items)  # replay the model's own items first, verbatim
        self.emit(ItemsAdded(self.turns, response.items))
        return Reply(response, text, calls)

    def deliver(self, outcome: Outcome) -> None:
        result = outcome.result
        limit = self.config.max_tool_output_chars
        if self.window is not None:
            limit = min(limit, self.window.output_limit())
        content = cut_output(result.content, limit)
        output = FunctionCallOutput(outcome.call.call_id, content, result.choices, result.is_error)
        self.history.append(output)
        self.emit(ItemsAdded(self.turns, (output,)))
        required = self.config.required_tool_names
        if (
            self.required_index < len(required)
            and outcome.call.name == required[self.required_index]
            and not result.is_error
        ):
            self.required_index += 1

    def fit_context(self) -> Stop | None:
        """Shorten old tool outputs so the next request fits the window; a Stop if it can't."""
        if self.window is None:
            return None
        newly = self.window.fit(self.history)
        if newly is None:
            return Stop(
                "failed",
                "context_exhausted",
                f"the conversation no longer fits the model's context "
                f"({self.window.limit} tokens, {self.window.reserve} kept for the reply) "
                "even with older tool outputs shortened",
            )
        if newly:
            self.ledger.forget(newly)  # a shortened result may be asked for again
            self.emit(
                Notice(
                    self.turns,
                    f"shortened {len(newly)} earlier tool output(s) to fit the model's "
                    f"context: {', '.join(newly)}",
                    "context_shortened",
                )
            )
        return None

    def _create(self, request: ModelRequest) -> ModelResponse:
        """One model request; a stream that stalled or broke off is asked once more (its
        partial reply is dropped, the tools are never re-run: none ran for it)."""
        try:
            return self.client.create(request)
        except ModelStreamError as error:
            self.emit(Notice(self.turns, f"{error.message}; asking once more", "retry"))
            return self.client.create(request)

    def on_delta(self, delta: Delta) -> None:
        self.emit(ModelDelta(self.turns, delta))
        if self.out_of_time():  # a slow stream does not outlive the run's wall-clock budget
            raise _OutOfTime

    def end(self, stop: Stop, answer: str = "") -> RunResult:
        closed = close_open_calls(self.history, stop, self.started_calls)
        if closed:
            self.emit(ItemsAdded(self.turns, closed))
        return RunResult(
            status=stop.status,
            answer=answer,
            items=tuple(self.history),
            usage=self.usage,
            turns=self.turns,
            tool_calls=self.ledger.executed,
            code=stop.code or None,
            error=stop.message or None,
        )


def _raised_limit(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """``options`` with the output-token limit doubled, for the request after a cut-off."""
    raised = dict(options)
    for key in ("max_output_tokens", "max_tokens", "max_completion_tokens"):
        value = raised.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            raised[key] = value * 2
    return raised
