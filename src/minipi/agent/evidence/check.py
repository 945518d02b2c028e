"""The check of one run's answer: its claims judged against the run's sources, in answer order.

Equal figures are judged once. The verdict of a claim depends only on its figure and the
run's sources, never on the rest of the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from minipi.agent.evidence.claims import checked_claims
from minipi.agent.evidence.match import Locator, Verdict, judge
from minipi.agent.evidence.sources import collect_sources
from minipi.agent.evidence.types import CheckedClaim, Evidence, Figure
from minipi.ai.types import Item

__all__ = ["check_evidence"]


def check_evidence(answer: str, items: Sequence[Item]) -> Evidence:
    """The claims of ``answer`` checked against the run that ends ``items``.

    ``items`` is the history as ``RunResult.items`` has it: the run is what follows its last
    user message (earlier turns of a chat are other runs); its sources are the tool results
    there that are not errors. Equal figures are looked up once. A runaway answer is checked
    up to a bound (``claims.MAX_ANSWER_CHARS``, ``claims.MAX_CLAIMS``) and says where it was
    cut (``Evidence.unchecked_from``).
    """
    claims, cut = checked_claims(answer)
    run = collect_sources(items)
    locator = Locator()
    verdicts: dict[tuple[str, Figure, bool], Verdict] = {}
    checked = []
    for claim in claims:
        key = (claim.kind, claim.figure, claim.weak)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = judge(claim, run, locator)
        checked.append(CheckedClaim(claim, verdict.status, verdict.sources, verdict.nearest))
    return Evidence(tuple(checked), run.tool_results, cut)
