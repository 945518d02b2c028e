"""The agent loop: ask the model, run the calls it asks for, feed results back, repeat.

First the opening calls, if any (``AgentConfig.opening_calls``, turn 0). Each turn: the
rules before the request (budgets, the context fit) -> ask the model (``Run.ask``, the
request as the rules shape it) -> decide what the reply means -> run its calls
(``_execute``, each screened and observed by the rules) or let the rules accept the answer.
The loop knows the rules only as ``Rules`` (``minipi.agent.rules``), whose hooks it calls at
these points. Every phase returns a decision (``minipi.agent.types``); ``Run.finish``
is the one place a run ends, with a code from ``minipi.agent.ends.END_CODES``. A run ends
``succeeded`` only when the model answers and every call it asked for was answered. The
run's state and its moves (ask, keep, deliver, finish) are ``Run``, in
``minipi.agent.run_state``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from minipi.agent.config import AgentConfig
from minipi.agent.events import EventSink, RunStart, SinkFailed
from minipi.agent.execute import beyond_limit, opening_calls
from minipi.agent.result import RunResult
from minipi.agent.run_state import OutOfTime, Run
from minipi.agent.tools import AgentTool
from minipi.agent.types import End, FinalAnswer, Note, Nudge, Retry, RunTools
from minipi.ai.types import FunctionCall, Item, Message, ModelClient
from minipi.errors import ModelError

if TYPE_CHECKING:
    from minipi.structured.shape import OutputShape

__all__ = ["run_agent"]


def run_agent(
    client: ModelClient,
    tools: Sequence[AgentTool],
    config: AgentConfig,
    question_or_history: str | Sequence[Item],
    on_event: EventSink | None = None,
    *,
    output: object = None,
) -> RunResult:
    """Run the loop until the model answers, a budget runs out, or something fatal happens.

    Raises ``AgentError`` only for a misconfigured run (before any request is sent), and
    ``ConfigError`` for a request that cannot be encoded; every other outcome is a
    ``RunResult``: model and network failures, Ctrl-C, and a ``MiniPiError`` raised by
    ``on_event`` (a session that could not be saved), after which the sink still sees every
    event but its errors are ignored.

    ``output`` (a JSON Schema, a dataclass, a pydantic model, or ``--schema`` text) asks for
    the answer as a JSON value of that shape, each field traced to the reads
    (``minipi.agent.output``; ``RunResult.output``); a bad shape is a ``ConfigError``.
    """
    shape = _shape(output)
    run = Run(client, tools, config, question_or_history, on_event)
    try:
        outcome = _loop(run)
        if shape is not None and isinstance(outcome, FinalAnswer):
            from minipi.agent.output import structured_answer

            outcome = structured_answer(run, shape, outcome)
    except KeyboardInterrupt:
        outcome = End("cancelled", "cancelled by the user")
    except OutOfTime:
        outcome = run.rules.deadline.end()
    except ModelError as error:
        outcome = End.failed(error)
    except SinkFailed as failed:
        outcome = End.failed(failed.error)
    return run.finish(outcome)


def _shape(output: object) -> OutputShape | None:
    """The shape ``output`` asks for (loaded only then: the schema validator)."""
    if output is None:
        return None
    from minipi.structured.shape import shape_of

    return shape_of(output)


def _loop(run: Run) -> FinalAnswer | End:
    offered = tuple(spec.name for spec in run.tools.specs)  # inside the run: a sink may fail
    run.emit(RunStart(run.question.text, run.client.model, offered))
    opening = opening_calls(run.config, run.history)  # turn 0
    run.add(*opening)
    stop: FinalAnswer | End | None = _execute(run, opening)
    while stop is None:
        stop = run.rules.before_request(run.view(), run.note) or _turn(run)
    return stop


def _turn(run: Run) -> FinalAnswer | End | None:
    """One request and what its reply means; None: ask again."""
    reply = run.ask()
    decision = run.rules.decide(reply)
    if isinstance(decision, Retry):
        run.note(Note(decision.reason, "retry", decision.said))
        return None
    if isinstance(decision, End):
        return decision
    run.keep(reply)
    if isinstance(decision, RunTools):
        return _execute(run, decision.calls)
    verdict = run.rules.accept(decision.text, run.view())
    if isinstance(verdict, Nudge):  # told as a user message, then asked again
        run.note(Note(verdict.notice, "nudge", verdict.said))
        run.add(Message("user", verdict.message, by_minipi=True))
        return None
    return verdict or decision


def _execute(run: Run, calls: Sequence[FunctionCall]) -> End | None:
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
