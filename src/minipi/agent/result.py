"""How a run ended: exactly one status, the answer only when it succeeded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from minipi.agent.ends import RunStatus
from minipi.agent.types import End, FinalAnswer
from minipi.ai.types import Item, Message, Usage, last_question
from minipi.evidence.verdict import Verdict, judge
from minipi.reading import NO_QUESTION, Question
from minipi.said import Said

if TYPE_CHECKING:
    from minipi.evidence import Evidence
    from minipi.structured.trace import StructuredOutput

__all__ = ["RunResult", "RunStatus"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of ``run_agent``.

    ``answer`` is the model's final text, and is empty unless ``status == "succeeded"``:
    half-done work is never reported as an answer. ``code``/``error`` say why a run did not
    succeed (``budget_exhausted``, ``empty_output``, ``endpoint_unreachable``...). ``items`` is
    the whole history (question, model output, tool results), valid to send again.
    ``evidence`` is the check of the last answer's figures against the run's tool results
    (None when the model never answered, or with ``AgentConfig(evidence="off")``); a run that
    failed ``unsupported_figures`` keeps it, to show which figures. ``facts`` are the lines
    minipi cited under the answer (guided mode: ``Message.cited``), not the model's text;
    ``verdict`` is what the answer rests on (``minipi.evidence.verdict``), None unless the run
    succeeded.
    """

    status: RunStatus
    answer: str
    items: tuple[Item, ...]
    usage: Usage
    turns: int
    tool_calls: int
    code: str | None = None
    error: str | None = None
    evidence: Evidence | None = None
    facts: tuple[str, ...] = ()
    verdict: Verdict | None = None
    question: Question = NO_QUESTION
    """The caller's question of the run, as read once when it started."""
    said: Said | None = None
    """``error`` as a message of ``minipi.said``, for a run shown in another language (None:
    ``error`` is the only wording)."""
    output: StructuredOutput | None = None
    """The answer as the caller's shape asked (``run_agent(output=...)``): the JSON value
    with each field's sources; ``answer`` is its JSON text, ``evidence`` and ``verdict``
    are its fields'."""

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @classmethod
    def ended(
        cls,
        by: FinalAnswer | End,
        items: tuple[Item, ...],
        usage: Usage,
        counts: tuple[int, int],
        evidence: Evidence | None,
        question: Question | None = None,
    ) -> RunResult:
        """The result of a run that ended ``by`` an accepted answer or an ``End``, after
        ``counts`` (turns, tool calls)."""
        asked = question if question is not None else Question.of(last_question(items))
        if isinstance(by, FinalAnswer) and by.structured is not None:
            done = by.structured
            return cls(
                "succeeded",
                by.text,
                items,
                usage,
                *counts,
                evidence=done.evidence,
                verdict=done.verdict,
                question=asked,
                output=done.output,
            )
        if isinstance(by, FinalAnswer):
            facts = _cited(items)
            verdict = judge(evidence, question=asked, facts=facts, items=items, answer=by.text)
            return cls(
                "succeeded",
                by.text,
                items,
                usage,
                *counts,
                None,
                None,
                evidence,
                facts,
                verdict,
                asked,
            )
        return cls(
            by.status,
            "",
            items,
            usage,
            *counts,
            by.code,
            by.detail,
            evidence,
            question=asked,
            said=by.said,
        )


def _cited(items: tuple[Item, ...]) -> tuple[str, ...]:
    """The lines minipi cited under the answer: the last assistant message's."""
    answers = (i for i in reversed(items) if isinstance(i, Message) and i.role == "assistant")
    last = next(answers, None)
    return last.cited if last is not None else ()
