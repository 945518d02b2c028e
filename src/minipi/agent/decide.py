"""What one model reply means for the run: ``decide`` is the only place that says it.

A reply is an answer (text, no calls), calls to run (the calls win over any text beside
them), or unusable: cut off at the output limit, unfinished (no known finish reason),
``tool_calls`` with no call in it, empty, or a stream that broke off. An unusable reply is
asked for once more (``ReplyRetry``); a filtered one ends the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from minipi.agent.ends import End
from minipi.agent.rules import ReplyRetry, Retry
from minipi.ai.types import FunctionCall, ModelResponse
from minipi.errors import ModelStreamError

__all__ = ["Answer", "Decision", "Reply", "RunTools", "decide"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One model reply read once: the response, its text and calls; or the stream error
    that left no usable response (``failure``)."""

    response: ModelResponse | None
    text: str = ""
    calls: tuple[FunctionCall, ...] = ()
    failure: ModelStreamError | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    text: str


@dataclass(frozen=True, slots=True)
class RunTools:
    calls: tuple[FunctionCall, ...]


Decision = Answer | RunTools | Retry | End
"""What a reply means: answer, run these calls, ask once more, or end the run."""


def decide(reply: Reply, retry: ReplyRetry) -> Decision:
    """What one reply means for the run; the calls win over any text beside them. A reply
    that cannot be used (a broken stream, cut off, unfinished, empty) is asked for again."""
    if reply.failure is not None:
        return retry.again(reply.failure.code, reply.failure.message)
    assert reply.response is not None
    finish = reply.response.finish_reason
    if finish == "content_filter":
        return End("content_filter", "the endpoint filtered the model's reply")
    problem = _unusable(finish, reply)
    if problem is not None:
        return retry.again(*problem)
    retry.usable()
    return RunTools(reply.calls) if reply.calls else Answer(reply.text)


def _unusable(finish: str, reply: Reply) -> tuple[str, str] | None:
    if finish == "length":
        return "truncated", (
            "the model's reply was cut off at its output-token limit (raise max_output_tokens)"
        )
    if finish == "unknown" and not reply.calls:
        return "unfinished", (
            "the model's reply did not say it was finished (no known finish reason)"
        )
    if finish == "tool_calls" and not reply.calls:
        return "calls_missing", (
            "the reply said it held tool calls but none arrived (the server's tool-call parser "
            "may have dropped them)"
        )
    if not reply.text and not reply.calls:
        return "empty_output", "the model returned neither text nor a tool call"
    return None
