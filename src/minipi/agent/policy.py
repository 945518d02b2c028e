"""The evidence policy: the rule that checks every answer's claims against this
conversation's tool results (``../shared/EVIDENCE.md``) and refuses what ``--evidence``
does not accept. It is one of the run's rules (``minipi.agent.rules.Rules``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from minipi.agent.config import EvidenceMode
from minipi.agent.types import End, Nudge, Rule, RunView
from minipi.ai.types import ModelRequest
from minipi.evidence.verdict import claimed_changes, not_supported, only_restates
from minipi.said import Said

if TYPE_CHECKING:
    from minipi.evidence import CheckedClaim, Evidence

__all__ = ["EvidencePolicy"]


@dataclass
class EvidencePolicy(Rule):
    """Every answer's claims checked against this conversation's tool results (EVIDENCE.md).

    Under every mode but ``off``, an answer that claims a change no tool of this run made is
    refused once, saying so (when a tool of the run can change things), and a second such
    answer ends the run ``change_not_made`` (nothing was changed: the answer must not say
    so). An answer that only repeats the question is told so once (``_restated``).
    ``warn``: the check is kept (``RunResult.evidence``) and shown. ``require``: an answer is
    accepted only when every claim of it was examined and none is ``unsupported``,
    ``from_question`` or only in a file name (``minipi.evidence.verdict.not_supported``; weak
    claims stay shown-only). An answer too long to examine whole ends the run
    ``answer_unexamined``; one with a claim that is no support is refused once, naming every
    such claim, and the model is asked to answer from the results (it may read more); a
    second such answer ends the run ``unsupported_figures``. ``off``: no check."""

    mode: EvidenceMode
    can_change: bool = True
    """Whether a tool of the run changes things (``ToolSpec.mutating``): else a claimed
    change ends the run at once, there being no tool to make it with."""
    last: Evidence | None = None
    nudged: str | None = None  # the message that refused an answer (not part of the question)
    call_next: bool = False
    """The next request must be a call (``tool_choice="required"``): the answer was refused
    for not doing what the question asks, and answering again is what was refused."""

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        """After a refusal for not doing what was asked, one request that must call a tool
        (the tools are how the model does it; the answer is offered again after)."""
        if not self.call_next or request.tool_choice != "auto" or not request.tools:
            return request
        self.call_next = False
        return replace(request, tool_choice="required")

    def accept(self, answer: str, view: RunView) -> End | Nudge | None:
        if self.mode == "off":
            return None
        from minipi.evidence import check_evidence  # only a run that answers pays

        self.last = evidence = check_evidence(answer, view.history, view.question)
        unmade = self._unmade(evidence) or self._restated(evidence, view)
        if unmade is not None or self.mode != "require":
            return unmade
        if evidence.unchecked_from is not None:
            return End.saying("answer_unexamined", at=evidence.unchecked_from)
        return self._refuse(not_supported(evidence))

    def _unmade(self, evidence: Evidence) -> End | Nudge | None:
        """For a claimed change no tool made: the model told so once (a model that meant
        to make it, and wrote that it did instead of calling the tool, gets its chance),
        then ``change_not_made`` (``require``: its refusal of claims that are no support is
        that telling)."""
        unmade = claimed_changes(evidence)
        if not unmade:
            return None
        said = ", ".join(dict.fromkeys(c.claim.text for c in unmade))
        if self.nudged is None and self.mode != "require" and self.can_change:
            self.nudged = (
                f"No tool has made this change: {said}. If the task asks for it, call the "
                "tool that makes it now; otherwise answer without saying it was done."
            )
            self.call_next = True
            told = Said.of("told_unmade", claims=said)
            return Nudge(self.nudged, told.text(), told)
        if self.mode == "require" and self.nudged is None:
            return None
        return End.saying("change_not_made", claims=said)

    def _restated(self, evidence: Evidence, view: RunView) -> Nudge | None:
        """An answer that states only what the question says adds nothing to it (the
        verdict's ``restates_question``; "please move 猫咪小花's file to archive/" for
        "move 猫咪小花's file to archive/"): told once, the model may do what was asked or
        answer from the results; a second such answer stands, judged as it is."""
        if self.nudged is not None or not only_restates(evidence, view.question):
            return None
        self.nudged = (
            "Your answer only repeats what the question says. Do what the question asks "
            "with the tools now, or answer with what the tool results show."
        )
        self.call_next = True
        told = Said.of("told_restated")
        return Nudge(self.nudged, told.text(), told)

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
            told = Said.of("told_unbacked", claims=why)
            return Nudge(self.nudged, told.text(), told)
        return End.saying("unsupported_figures", claims=why)
