"""The rules protocol: the hooks every rule of a run has, and the read-only view they get.

Each hook is called at one fixed point of every turn, for every rule alike (the built-in
ones first, then the caller's, ``AgentConfig.rules``); a rule overrides the ones it needs:

- ``before_request(view)``: before each model request; an ``End`` ends the run, a ``Note``
  is told to whoever watches;
- ``request(request, view)``: the request about to be sent, changed as the rule needs (the
  ``tool_choice``, the options, the items as sent);
- ``responded(request, response)``: the model's response to it arrived;
- ``screen(call, view)``: before a call runs, pure (it changes no state, so the order of
  the screens does not matter); a ``Refusal`` answers the call instead of running it;
- ``observe(outcome, view)``: after each call's outcome; an ``End`` ends the run once every
  call of the reply is answered;
- ``accept(answer, view)``: before an answer is accepted; an ``End`` ends the run instead,
  a ``Nudge`` keeps the answer in the history, tells the model what is wrong with it and
  asks again.

A rule keeps its own state; it reads the run only through the ``RunView`` it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from minipi.agent.decisions import End, Note, Nudge, Refusal
from minipi.agent.tools import AgentTool, ToolResult
from minipi.ai.types import FunctionCall, Item, ModelRequest, ModelResponse
from minipi.reading import NO_QUESTION, Question

if TYPE_CHECKING:
    from minipi.agent.execute import CallOutcome

__all__ = ["Checked", "Rule", "RunView"]


@dataclass(frozen=True, slots=True)
class RunView:
    """What a rule may read of the run, as of the hook's call; nothing in it can be changed."""

    history: tuple[Item, ...]
    turns: int
    """Model requests made so far (0 before the first)."""
    calls_run: int
    """Calls whose handler has run (or been started) so far."""
    shortened: frozenset[str] = frozenset()
    """call_ids whose outputs requests no longer carry (shortened to fit the context)."""
    admitted: int = 0
    """While a reply's calls are screened: how many of them were let through before this one
    (they have not run yet)."""
    question: Question = NO_QUESTION
    """The caller's question, read once when the run started (``minipi.reading.Question``)."""


@dataclass(frozen=True, slots=True)
class Checked:
    """A call whose tool exists and whose arguments passed the schema (``key`` says which
    calls are identical, ``arguments`` are the parsed ones), or one answered before that
    (``tool`` None, ``key`` "")."""

    call: FunctionCall
    tool: AgentTool | None = None
    key: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)

    @property
    def mutating(self) -> bool:
        return self.tool is not None and self.tool.mutating


class Rule:
    """A rule with no opinion; subclasses override the hooks they need."""

    def before_request(self, view: RunView) -> End | Note | None:
        return None

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        return request

    def responded(self, request: ModelRequest, response: ModelResponse) -> None:
        return None

    def screen(self, call: Checked, view: RunView) -> Refusal | None:
        return None

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        return None

    def accept(self, answer: str, view: RunView) -> End | Nudge | None:
        return None

    def refuse(self, code: str, message: str) -> Refusal:
        """This rule's refusal: the call is answered ``error [code]: message``."""
        return Refusal(self, ToolResult.error(code, message))
