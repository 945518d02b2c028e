"""Every decision value of the loop, in one place: small frozen values, never flags.

A reply means ``FinalAnswer``, ``RunTools``, ``Retry`` (asked for once more) or ``End``
(``Decision``). A rule answers a call with a ``Refusal`` (which names the rule, so that the
rule knows its own refusals by identity, never by a code string), an answer with a ``Nudge``
or an ``End``, a coming request with a ``Note`` (something to tell whoever watches) or an
``End``. ``End`` is the one way a run stops; its ``code`` is a key of
``minipi.agent.ends.END_CODES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from minipi.agent.ends import RunStatus, status_of
from minipi.ai.types import FunctionCall

if TYPE_CHECKING:
    from minipi.agent.hooks import Rule
    from minipi.agent.tools import ToolResult

__all__ = ["Decision", "End", "FinalAnswer", "Note", "Nudge", "Refusal", "Retry", "RunTools"]


@dataclass(frozen=True, slots=True)
class End:
    """The decision that ends a run: ``code`` (a key of ``END_CODES``) and what happened."""

    code: str
    detail: str

    @property
    def status(self) -> RunStatus:
        return status_of(self.code)


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The model answered (text, no calls); the answer rules have not yet accepted it."""

    text: str


@dataclass(frozen=True, slots=True)
class RunTools:
    """The model asked for these calls (the calls win over any text beside them)."""

    calls: tuple[FunctionCall, ...]


@dataclass(frozen=True, slots=True)
class Retry:
    """The decision to ask the model once more: nothing of its reply is kept."""

    reason: str


Decision: TypeAlias = FinalAnswer | RunTools | Retry | End
"""What a reply means: answer, run these calls, ask once more, or end the run."""


@dataclass(frozen=True, slots=True)
class Nudge:
    """The decision to tell the model ``message`` (as a user message) and ask once more."""

    message: str
    notice: str


@dataclass(frozen=True, slots=True)
class Note:
    """Something a rule did before a request that whoever watches is told (a ``Notice``)."""

    text: str
    code: str


@dataclass(frozen=True, slots=True)
class Refusal:
    """``rule`` answers the call with ``result`` instead of running it."""

    rule: Rule
    result: ToolResult
