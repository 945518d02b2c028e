"""The agent loop: ask the model, run the calls it asks for, feed results back, repeat.

First the opening calls, if any (``AgentConfig.opening_calls``, turn 0). Each turn: the
rules before the request (budgets, the context fit) -> ask the model (``_Run.ask``, the
request as the rules shape it) -> decide what the reply means -> run its calls
(``_execute``, each screened and observed by the rules) or let the rules accept the answer.
The loop knows the rules only as ``Rules`` (``minipi.agent.rules``), whose hooks it calls at
these points. Every phase returns a decision (``minipi.agent.decisions``); ``_Run.finish``
is the one place a run ends, with a code from ``minipi.agent.ends.END_CODES``. A run ends
``succeeded`` only when the model answers and every call it asked for was answered.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import replace

from minipi.agent.config import AgentConfig
from minipi.agent.decide import Reply
from minipi.agent.decisions import End, FinalAnswer, Note, Nudge, Retry, RunTools
from minipi.agent.events import (
    AssistantText,
    EventSink,
    GuardedSink,
    ItemsAdded,
    ModelDelta,
    ModelResponded,
    Notice,
    RunEnd,
    RunStart,
    SinkFailed,
    TurnStart,
)
from minipi.agent.execute import CallOutcome, Toolbox, beyond_limit, close_open_calls, opening_calls
from minipi.agent.hooks import RunView
from minipi.agent.result import RunResult
from minipi.agent.rules import Rules
from minipi.agent.tools import AgentTool
from minipi.ai.types import (
    Delta,
    FunctionCall,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    Usage,
    last_question,
)
from minipi.errors import ModelError, ModelStreamError

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
    ``ConfigError`` for a request that cannot be encoded; every other outcome is a
    ``RunResult``: model and network failures, Ctrl-C, and a ``MiniPiError`` raised by
    ``on_event`` (a session that could not be saved), after which the sink still sees every
    event but its errors are ignored.
    """
    run = _Run(client, tools, config, question_or_history, on_event)
    try:
        outcome = _loop(run)
    except KeyboardInterrupt:
        outcome = End("cancelled", "cancelled by the user")
    except _OutOfTime:
        outcome = run.rules.deadline.end()
    except ModelError as error:
        outcome = End(error.code, error.message)
    except SinkFailed as failed:
        outcome = End(failed.error.code, failed.error.message)
    return run.finish(outcome)


def _loop(run: _Run) -> FinalAnswer | End:
    offered = tuple(spec.name for spec in run.tools.specs)  # inside the run: a sink may fail
    run.emit(RunStart(last_question(run.history), run.client.model, offered))
    opening = opening_calls(run.config, run.history)  # turn 0
    run.add(*opening)
    stop: FinalAnswer | End | None = _execute(run, opening)
    while stop is None:
        stop = run.rules.before_request(run.view(), run.note) or _turn(run)
    return stop


def _turn(run: _Run) -> FinalAnswer | End | None:
    """One request and what its reply means; None: ask again."""
    reply = run.ask()
    decision = run.rules.decide(reply)
    if isinstance(decision, Retry):
        run.note(Note(decision.reason, "retry"))
        return None
    if isinstance(decision, End):
        return decision
    run.keep(reply)
    if isinstance(decision, RunTools):
        return _execute(run, decision.calls)
    verdict = run.rules.accept(decision.text, run.view())
    if isinstance(verdict, Nudge):  # told as a user message, then asked again
        run.note(Note(verdict.notice, "nudge"))
        run.add(Message("user", verdict.message))
        return None
    return verdict or decision


def _execute(run: _Run, calls: Sequence[FunctionCall]) -> End | None:
    """Run the reply's calls (up to ``max_calls_per_reply``); every call is answered before a
    rule's ``End`` takes effect."""
    stop: End | None = None
    limit = run.config.max_calls_per_reply
    # The deadline is the one rule a running handler is not waited for past.
    running = run.tools.run(calls[:limit], run.rules, run.view(), run.emit, run.rules.deadline.at)
    for outcome in running:
        end = run.rules.observe(outcome, run.view())
        stop = stop or end
        run.deliver(outcome)
    if len(calls) > limit:  # answered at once, with one notice for them all
        note, answers = beyond_limit(calls[limit:], limit)
        run.note(note)
        run.add(*answers)
    return stop


class _OutOfTime(Exception):
    """Raised from the delta sink when ``max_seconds`` passes while a reply streams (F6)."""


class _Run:
    """The state of one run: the client, the tools and rules, the history, the counts and
    the event sink."""

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
        self.tools = Toolbox(tools, config)
        self.rules = Rules.for_run(config, self.tools.specs)
        asked = question_or_history
        self.history: list[Item] = [Message("user", asked)] if isinstance(asked, str) else [*asked]
        self.emit: EventSink = GuardedSink(on_event)
        self.turns = 0
        self.usage = Usage()
        self.asking = ModelRequest(  # each request: this, with the items, as the rules shape it
            (),
            config.instructions,
            self.tools.specs,
            parallel_tool_calls=config.parallel_tool_calls,
            options=config.request_options,
            on_delta=self._on_delta,
        )

    def note(self, note: Note) -> None:
        self.emit(Notice(self.turns, note.text, note.code))

    def view(self) -> RunView:
        return self.rules.view(self.history, self.turns, self.tools.executed)

    def ask(self) -> Reply:
        """Send the next request, as the rules shape it; the reply, read once (a broken
        stream is a reply too)."""
        self.turns += 1
        view = self.view()
        request = self.rules.request(replace(self.asking, items=view.history), view)
        self.emit(TurnStart(self.turns, request.tool_choice, request.items))
        started = time.perf_counter()
        try:
            response = self.client.create(request)
        except ModelStreamError as error:  # dropped: its partial reply is never used
            return Reply(None, failure=error)
        self.usage += response.usage
        self.rules.responded(request, response)
        self.emit(ModelResponded(self.turns, response, time.perf_counter() - started))
        return Reply.of(response)

    def keep(self, reply: Reply) -> None:
        """Append a usable reply to the history: the model's own items, verbatim."""
        assert reply.response is not None
        if reply.text:
            self.emit(AssistantText(self.turns, reply.text))
        self.add(*reply.response.items)

    def deliver(self, outcome: CallOutcome) -> None:
        """Append one call's result (cut to what the context can hold)."""
        self.add(self.rules.output(outcome.call.call.call_id, outcome.result))

    def add(self, *items: Item) -> None:
        if items:
            self.history.extend(items)
            self.emit(ItemsAdded(self.turns, items))

    def finish(self, outcome: FinalAnswer | End) -> RunResult:
        """End the run: answer the calls left open, make the result, send ``RunEnd``."""
        if isinstance(outcome, End):
            closed = close_open_calls(self.history, outcome, self.tools.started)
            if closed:
                with contextlib.suppress(SinkFailed):
                    self.emit(ItemsAdded(self.turns, closed))
        result = self._result(outcome)
        try:
            self.emit(RunEnd(result))
        except SinkFailed as failed:  # the end itself could not be saved: say so instead
            result = self._result(End(failed.error.code, failed.error.message))
            self.emit(RunEnd(result))
        return result

    def _result(self, outcome: FinalAnswer | End) -> RunResult:
        counts = (self.turns, self.tools.executed)
        return RunResult.ended(outcome, (*self.history,), self.usage, counts, self.rules.evidence)

    def _on_delta(self, delta: Delta) -> None:
        self.emit(ModelDelta(self.turns, delta))
        if self.rules.deadline.passed():  # a slow stream does not outlive the run's budget
            raise _OutOfTime
