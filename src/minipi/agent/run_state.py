"""The state of one run of the loop (``minipi.agent.loop``): the client, the tools and rules,
the history, the counts and the event sink, with the few moves the loop makes on them
(ask the model, keep a reply, deliver a result, note, finish)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from minipi.agent.config import AgentConfig
from minipi.agent.decide import Reply
from minipi.agent.events import (
    AssistantText,
    EventSink,
    GuardedSink,
    ItemsAdded,
    ModelDelta,
    ModelResponded,
    Notice,
    RunEnd,
    SinkFailed,
    TurnStart,
)
from minipi.agent.execute import Toolbox, close_open_calls
from minipi.agent.result import RunResult
from minipi.agent.rules import Rules
from minipi.agent.tools import AgentTool
from minipi.agent.types import CallOutcome, End, FinalAnswer, Note, RunView
from minipi.ai.types import (
    Delta,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    Usage,
    last_question,
)
from minipi.errors import ModelStreamError
from minipi.reading import Question

__all__ = ["OutOfTime", "Run"]


class OutOfTime(Exception):
    """Raised from the delta sink when ``max_seconds`` passes while a reply streams (F6)."""


class Run:
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
        self.question = Question.of(last_question(self.history))  # read once, carried
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
        self.emit(Notice(self.turns, note.text, note.code, said=note.said))

    def view(self) -> RunView:
        return self.rules.view(self.history, self.turns, self.tools.executed, self.question)

    def ask(self, shaped: Callable[[ModelRequest], ModelRequest] | None = None) -> Reply:
        """Send the next request, as the rules shape it (then ``shaped``, a caller's last
        word: a structured answer's request); the reply, read once (a broken stream is a
        reply too)."""
        self.turns += 1
        view = self.view()
        request = self.rules.request(replace(self.asking, items=view.history), view)
        if shaped is not None:
            request = shaped(request)
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
            result = self._result(End.failed(failed.error))
            self.emit(RunEnd(result))
        return result

    def _result(self, outcome: FinalAnswer | End) -> RunResult:
        counts = (self.turns, self.tools.executed)
        evidence = self.rules.evidence
        return RunResult.ended(
            outcome, (*self.history,), self.usage, counts, evidence, self.question
        )

    def _on_delta(self, delta: Delta) -> None:
        self.emit(ModelDelta(self.turns, delta))
        if self.rules.deadline.passed():  # a slow stream does not outlive the run's budget
            raise OutOfTime
