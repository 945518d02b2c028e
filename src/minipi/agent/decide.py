"""What one model reply means for the run: ``decide`` is the only place that says it.

A reply is an answer (text, no calls), calls to run (the calls win over any text beside
them), or unusable: cut off at the output limit, unfinished (no known finish reason),
``tool_calls`` with no call in it, empty, or a stream that broke off. An unusable reply is
asked for once more (the ``ReplyRetry`` rule); a filtered one ends the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from minipi.agent.types import Decision, End, FinalAnswer, Retry, Rule, RunTools, RunView
from minipi.ai.types import (
    FunctionCall,
    ModelRequest,
    ModelResponse,
    output_text,
    parse_function_calls,
)
from minipi.errors import ModelStreamError
from minipi.said import Said

__all__ = ["Reply", "ReplyRetry", "decide"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One model reply read once: the response, its text and calls; or the stream error
    that left no usable response (``failure``)."""

    response: ModelResponse | None
    text: str = ""
    calls: tuple[FunctionCall, ...] = ()
    failure: ModelStreamError | None = None

    @classmethod
    def of(cls, response: ModelResponse) -> Reply:
        calls = tuple(parse_function_calls(response.items))
        return cls(response, output_text(response.items), calls)


@dataclass
class ReplyRetry(Rule):
    """A reply that cannot be used (cut off, unfinished, empty, a broken stream) is asked for
    once more; a second one in a row ends the run with its code. After a cut-off each request
    asks for twice the output tokens (when a limit was set)."""

    in_a_row: int = 0
    raise_limit: bool = False

    def again(self, code: str, what: str | Said) -> Retry | End:
        self.in_a_row += 1
        self.raise_limit = self.raise_limit or code == "truncated"
        if self.in_a_row < 2:
            return Retry(Said.of("once_more", what=what))
        return End.worded(code, Said.of("twice", what=what))

    def usable(self) -> None:
        self.in_a_row = 0

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        """The request, with the output-token limit doubled after a cut-off."""
        if not self.raise_limit:
            return request
        return replace(request, options=_raised(request.options))


def _raised(options: Mapping[str, Any]) -> Mapping[str, Any]:
    raised = dict(options)
    for key in ("max_output_tokens", "max_tokens", "max_completion_tokens"):
        value = raised.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            raised[key] = value * 2
    return raised


def decide(reply: Reply, retry: ReplyRetry) -> Decision:
    """What one reply means for the run; the calls win over any text beside them. A reply
    that cannot be used (a broken stream, cut off, unfinished, empty) is asked for again."""
    if reply.failure is not None:
        return retry.again(reply.failure.code, reply.failure.said or reply.failure.message)
    assert reply.response is not None
    finish = reply.response.finish_reason
    if finish == "content_filter":
        return End.saying("content_filter")
    problem = _unusable(finish, reply)
    if problem is not None:
        return retry.again(*problem)
    retry.usable()
    return RunTools(reply.calls) if reply.calls else FinalAnswer(reply.text)


def _unusable(finish: str, reply: Reply) -> tuple[str, Said] | None:
    """The code of a reply that cannot be used, and what is wrong with it (``minipi.said``
    words each under its code)."""
    if finish == "length":
        code = "truncated"
    elif finish == "unknown" and not reply.calls:
        code = "unfinished"
    elif finish == "tool_calls" and not reply.calls:
        code = "calls_missing"
    elif not reply.text and not reply.calls:
        code = "empty_output"
    else:
        return None
    return code, Said.of(code)
