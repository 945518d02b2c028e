"""The loop's contract: the values rules and the loop exchange, in one leaf module.

Decisions (what a reply means, and what a rule answers):

Every decision value of the loop, in one place: small frozen values, never flags.

A reply means ``FinalAnswer``, ``RunTools``, ``Retry`` (asked for once more) or ``End``
(``Decision``). A rule answers a call with a ``Refusal`` (which names the rule, so that the
rule knows its own refusals by identity, never by a code string), an answer with a ``Nudge``
or an ``End``, a coming request with a ``Note`` (something to tell whoever watches) or an
``End``. ``End`` is the one way a run stops; its ``code`` is a key of
``minipi.agent.ends.END_CODES``.

The rules protocol:

The rules protocol: the hooks every rule of a run has, and the read-only view they get.

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
from typing import TYPE_CHECKING, Any, TypeAlias

from minipi.agent.ends import RunStatus, status_of
from minipi.agent.tools import AgentTool, ToolResult
from minipi.ai.types import FunctionCall, Item, ModelRequest, ModelResponse
from minipi.errors import MiniPiError
from minipi.reading import NO_QUESTION, Question
from minipi.said import Said, SaidValue

if TYPE_CHECKING:
    from minipi.evidence import Evidence
    from minipi.evidence.verdict import Verdict
    from minipi.structured.trace import StructuredOutput

__all__ = [
    "CallOutcome",
    "Checked",
    "Decision",
    "End",
    "FinalAnswer",
    "Note",
    "Nudge",
    "Refusal",
    "Retry",
    "Rule",
    "RunTools",
    "RunView",
]


@dataclass(frozen=True, slots=True)
class End:
    """The decision that ends a run: ``code`` (a key of ``END_CODES``) and what happened;
    ``said`` is that as a message of ``minipi.said`` (``detail`` is its English text), for a
    run shown in another language (None: ``detail`` is the only wording)."""

    code: str
    detail: str
    said: Said | None = None

    @classmethod
    def saying(cls, code: str, **values: SaidValue) -> End:
        """The end ``code``, worded by the message of ``minipi.said`` that the code names."""
        return cls.worded(code, Said.of(code, **values))

    @classmethod
    def worded(cls, code: str, said: Said) -> End:
        return cls(code, said.text(), said)

    @classmethod
    def failed(cls, error: MiniPiError) -> End:
        """The end an error raised by the model layer or a sink makes, with its wording."""
        return cls(error.code, error.message, error.said)

    @property
    def status(self) -> RunStatus:
        return status_of(self.code)


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The model answered (text, no calls); the answer rules have not yet accepted it.
    ``structured``: the answer as the caller's shape asked (``minipi.agent.output``)."""

    text: str
    structured: Structured | None = None


@dataclass(frozen=True, slots=True)
class Structured:
    """A structured answer, traced: the value with each field's sources (a
    ``minipi.structured.trace.StructuredOutput``), the check of its fields (an ``Evidence``)
    and the fields' verdict (None: ``--evidence off``)."""

    output: StructuredOutput
    evidence: Evidence
    verdict: Verdict | None


@dataclass(frozen=True, slots=True)
class RunTools:
    """The model asked for these calls (the calls win over any text beside them)."""

    calls: tuple[FunctionCall, ...]


@dataclass(frozen=True, slots=True)
class Retry:
    """The decision to ask the model once more: nothing of its reply is kept. ``said``: why,
    in each language (``reason`` is its English)."""

    said: Said

    @property
    def reason(self) -> str:
        return self.said.text()


Decision: TypeAlias = FinalAnswer | RunTools | Retry | End
"""What a reply means: answer, run these calls, ask once more, or end the run."""


@dataclass(frozen=True, slots=True)
class Nudge:
    """The decision to tell the model ``message`` (as a user message) and ask once more;
    ``notice`` is what whoever watches is told (``said``: the same as a message of
    ``minipi.said``, for a run shown in another language)."""

    message: str
    notice: str
    said: Said | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """Something a rule did before a request that whoever watches is told (a ``Notice``)."""

    text: str
    code: str
    said: Said | None = None
    """``text`` as a message of ``minipi.said`` (None: ``text`` is the only wording)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """``rule`` answers the call with ``result`` instead of running it."""

    rule: Rule
    result: ToolResult


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


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """One call and its result. ``ran``: its handler ran (or began: an overrun); otherwise
    it was answered before, by ``refused_by`` (a rule) or for want of a tool or of valid
    arguments (``refused_by`` None)."""

    call: Checked
    result: ToolResult
    ran: bool
    refused_by: Rule | None = None
    seconds: float = 0.0
