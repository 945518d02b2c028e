"""The evidence policy: the rule that checks every answer's claims against this
conversation's tool results (``../shared/EVIDENCE.md``) and refuses what ``--evidence``
does not accept. It is one of the run's rules (``minipi.agent.rules.Rules``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minipi.agent.config import EvidenceMode
from minipi.agent.types import End, Nudge, Rule, RunView
from minipi.evidence.verdict import claimed_changes, not_supported
from minipi.said import Said

if TYPE_CHECKING:
    from minipi.evidence import CheckedClaim, Evidence

__all__ = ["EvidencePolicy"]


@dataclass
class EvidencePolicy(Rule):
    """Every answer's claims checked against this conversation's tool results (EVIDENCE.md).

    Under every mode but ``off``, an answer that claims a change no tool of this run made
    ends the run ``change_not_made`` (nothing was changed: the answer must not say so).
    ``warn``: the check is kept (``RunResult.evidence``) and shown. ``require``: an answer is
    accepted only when every claim of it was examined and none is ``unsupported``,
    ``from_question`` or only in a file name (``minipi.evidence.verdict.not_supported``; weak
    claims stay shown-only). An answer too long to examine whole ends the run
    ``answer_unexamined``; one with a claim that is no support is refused once, naming every
    such claim, and the model is asked to answer from the results (it may read more); a
    second such answer ends the run ``unsupported_figures``. ``off``: no check."""

    mode: EvidenceMode
    last: Evidence | None = None
    nudged: str | None = None  # the message that refused an answer (not part of the question)

    def accept(self, answer: str, view: RunView) -> End | Nudge | None:
        if self.mode == "off":
            return None
        from minipi.evidence import check_evidence  # only a run that answers pays

        self.last = evidence = check_evidence(answer, view.history, view.question)
        unmade = self._unmade(evidence)
        if unmade is not None or self.mode != "require":
            return unmade
        if evidence.unchecked_from is not None:
            return End.saying("answer_unexamined", at=evidence.unchecked_from)
        return self._refuse(not_supported(evidence))

    def _unmade(self, evidence: Evidence) -> End | None:
        """``change_not_made`` for a claimed change no tool made (``require``: once the
        model was told, as for any claim that is no support)."""
        unmade = claimed_changes(evidence)
        if not unmade or (self.mode == "require" and self.nudged is None):
            return None
        said = ", ".join(dict.fromkeys(c.claim.text for c in unmade))
        return End.saying("change_not_made", claims=said)

    def _refuse(self, claims: Sequence[CheckedClaim]) -> End | Nudge | None:
        if not claims:
            return None
        why = tuple(dict.fromkeys(Said.of(f"claim_{c.status}", claim=c.claim.text) for c in claims))
        shown = "; ".join(said.text() for said in why)
        if self.nudged is None:
            self.nudged = (
                f"These claims in your answer are not backed by any tool result: {shown}. "
                "Answer again with only what the tool results contain (call the tools to "
                "read more if you need to)."
            )
            return Nudge(self.nudged, f"the answer has claims no tool result backs: {shown}")
        return End.saying("unsupported_figures", claims=why)
