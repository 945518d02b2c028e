"""The check of one run's answer, in one go or while the answer streams.

A claim's verdict depends only on its figure and the run's sources, never on the rest of the
answer. So the figures of an answer that is still being written can be judged as they
appear, while the model writes the rest: when the answer is complete, ``EvidenceCheck.check``
extracts its claims again and looks up the verdicts already made, judging only the figures
it has not seen (the last few, usually). The result is the same as ``check_evidence``'s by
construction: a verdict made early is the one the end would make, and a figure judged early
that the final answer does not hold (the ``12`` of a ``128`` cut mid-stream) is only unused.

Measured (``python bench/perf_evidence.py``): a 50-turn run with 1 MB of tool output costs
about 11 ms to check at once, on this machine; the same answer streamed in 4-character pieces
leaves about 1 ms for the end. The work moves into the time the model takes to write the
answer (tens of milliseconds per token for a local model); it is not less work.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from minipi.agent.evidence.claims import MAX_ANSWER_CHARS, MAX_CLAIMS, checked_claims
from minipi.agent.evidence.claims import extract_claims as _extract
from minipi.agent.evidence.match import Locator, Verdict, judge
from minipi.agent.evidence.sources import RunSources, collect_sources
from minipi.agent.evidence.types import CheckedClaim, Claim, Evidence, Figure
from minipi.ai.types import Item

__all__ = ["EvidenceCheck", "check_evidence"]

_STEP = 8
"""Streamed text is looked at again once this many characters more have come."""
_UNSETTLED = 4
"""A claim ending this close to the end of the text so far may still grow (``12`` → ``128``,
``9月`` → ``9月6日``, ``9.6`` → ``9.6万``): it waits for more text."""
_BREAKS = " \n\t\u3000，。；、！？"
"""Where a streamed text is cut for the next look: no figure spans these (``claims``)."""

_WINDOW = 256
"""Text is looked at again only once a break has come, or this much text without one; such
text is cut anyway, so that each look reads at most about this much (``1,1,1,…`` streamed
in 3-character pieces: 20,000 characters cost 0.2 s of looks, as much as their final check)."""

_Key = tuple[str, Figure, bool]


def check_evidence(answer: str, items: Sequence[Item]) -> Evidence:
    """The claims of ``answer`` checked against the run that ends ``items``.

    ``items`` is the history as ``RunResult.items`` has it: the run is what follows its last
    user message (earlier turns of a chat are other runs); its sources are the tool results
    there that are not errors. Equal figures are looked up once. A runaway answer is checked
    up to a bound (``claims.MAX_ANSWER_CHARS``, ``claims.MAX_CLAIMS``) and says where it was
    cut (``Evidence.unchecked_from``).
    """
    return EvidenceCheck(items).check(answer)


class EvidenceCheck:
    """``check_evidence`` for one run, fed the answer while it streams.

    ``feed`` takes the pieces of a reply's text as they come and judges the figures that
    are complete (at most ``MAX_CLAIMS`` of them, within the first ``MAX_ANSWER_CHARS``);
    ``restart`` begins a new reply (a reply that turned out to be tool calls, or an answer
    refused); ``check`` is ``check_evidence`` with the verdicts made so far. The check holds
    the sources of ``items``: a new tool result needs a new check.
    """

    def __init__(self, items: Sequence[Item]) -> None:
        self._history = tuple(items)  # a snapshot: the caller's list grows
        self._locator = Locator()
        self._verdicts: dict[_Key, Verdict] = {}
        self.restart()

    def restart(self) -> None:
        """A new reply begins: the text fed so far is dropped (its verdicts are kept)."""
        self._pieces: list[str] = []
        self._size = 0
        self._looked = 0  # the size when the text was last looked at
        self._broken = False  # a break has come since
        self._start = 0  # where the next look begins

    def feed(self, piece: str) -> None:
        """The next piece of the reply's text: the figures complete by now are judged."""
        self._pieces.append(piece)
        self._size += len(piece)
        self._broken = self._broken or any(c in piece for c in _BREAKS)
        new = self._size - self._looked
        if new < _STEP or (not self._broken and new < _WINDOW):
            return  # too little, or nothing new can be settled before a break: wait
        if self._size > MAX_ANSWER_CHARS or len(self._verdicts) >= MAX_CLAIMS:
            return
        self._looked, self._broken = self._size, False
        text = "".join(self._pieces)
        self._pieces = [text]
        settled = len(text) - _UNSETTLED
        waiting = settled  # the next look begins before the first claim not judged yet
        for claim in _extract(text[self._start :]):
            if self._start + claim.span[1] <= settled:
                self._verdict(claim)
            else:
                waiting = min(waiting, self._start + claim.span[0])
        cut = max(text.rfind(c, self._start, waiting) for c in _BREAKS)
        self._start = max(self._start, cut + 1, settled - _WINDOW)

    def check(self, answer: str) -> Evidence:
        """The evidence of ``answer`` (``check_evidence``)."""
        claims, cut = checked_claims(answer)
        checked = []
        for claim in claims:
            verdict = self._verdict(claim)
            checked.append(CheckedClaim(claim, verdict.status, verdict.sources, verdict.nearest))
        return Evidence(tuple(checked), self._run.tool_results, cut)

    @cached_property
    def _run(self) -> RunSources:
        """The sources, made when first needed: a short reply is never looked at."""
        return collect_sources(self._history)

    def _verdict(self, claim: Claim) -> Verdict:
        key = (claim.kind, claim.figure, claim.weak)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._verdicts[key] = judge(claim, self._run, self._locator)
        return verdict
