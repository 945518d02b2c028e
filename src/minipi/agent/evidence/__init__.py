"""Evidence: each figure of an answer traced to this run's tool results, or flagged.

``check_evidence(answer, items)`` is pure (no I/O, no model, no clock). It follows
``../shared/EVIDENCE.md``; where that is silent it decides as follows.

Sources
    The run is what follows the last user ``Message`` of ``items``; its text is the question.
    Earlier turns of a chat are other runs and never count, nor do system or assistant text. A
    result with ``is_error`` is no source (nor is its call's path argument). ``tool_results`` counts
    this run's results that are not errors.

Numbers
    Digit boundaries hold in the answer and in tool output: a digit group is read as the whole token
    around it, so 9600 is not in 19600, 9600.5, ``SKU-9600``, ``2026-09-06`` or ``10:30``. A number
    glued to letters (``SKU-0042``, ``v2``) belongs to an identifier. Signs count (``-5`` is not
    ``5``); a ``-`` between digits is a range (``3-5``: two claims, 3 and 5). A comma is a thousands
    separator only with exact 3-digit groups; ``9,6`` is the two numbers 9 and 6. The full-width
    comma separates list items (``128，256``) except between full-width digits (``９，６００``).
    Units are kept on the claim and not compared (tool output rarely says them), except ``%``:
    ``12.5%`` is ``normalized`` by ``0.125`` and the other way round. ``9,600 元`` and ``９６００``
    are ``normalized`` by ``9600``; ``9600元`` is ``exact`` (same digits). A scaled figure
    (``9.6k``, ``1.2万``) is ``rounded`` whenever a value in its interval supports it, ``9600``
    itself included: the answer only says "about 9.6 thousand". So is an approximate one
    (``约9600``, ``about 128``: interval from the last nonzero digit; ``100多`` is [100, 200)), and
    a figure that rounds a more precise source value (``12.5%`` from ``0.1248``; 128 from 127.6). A
    source that is itself scaled (``9.6k``) supports at most as ``rounded``. Chinese numerals
    (一百二十八, 两万, 一万二 = 12000) are exact values; a lone 一/两/三… is a claim only before a
    measure word (两个), so 一些/统一 are not. Percentages in words: 百分之十二. List markers
    (``1.``, ``(2)``, ``①``, ``1、``) and citations (``[3]``, ``【3】``) are not claims. Weak: whole
    numbers up to 10 (any unit) and a year alone (1900–2100, unit none or 年); they are shown and
    not looked up.
Dates and times
    See ``dates``. A source may give more components than the claim (``9月6日`` and ``2026年9月``
    are supported by ``2026-09-06``), never fewer; a different form is ``normalized``
    (``2026年9月6日`` by ``"2026-09-06"`` in JSON). ``10:30`` is a ``time`` claim, supported by
    ``10:30`` or ``10:30:00``.
Identifiers and quotes
    Tokens that mix letters and digits or carry ``_`` (``A-17``, ``step2.txt``, ``revenue_yuan``),
    or carry ``-`` with an upper-case or digit part (``SKU-ABC``); not ``well-known`` nor
    ``AgentLoop`` unquoted (that would flag ordinary words like GitHub). Three or more digit groups
    that are no date or time (``192.168.1.1``) are matched as written. Text between ASCII quotes,
    backticks, 「」 or 『』 is a ``quote`` claim; between “” ‘’ 《》 only if it has an ASCII letter
    or digit (those marks are used for emphasis in Chinese). Exact at token boundaries, then case-
    and width-insensitive (``normalized``).
``derived``
    Text only: a quote or identifier made of 2–3 pieces that stand between quotes in this run's
    content, in order (the treasure hunt's ``'Agent'`` + ``'Loop'`` = ``AgentLoop``), sources the
    pieces. Sums and differences of numbers are not checked: in a few kilobytes of numbers some pair
    adds up to almost anything, which would be support by accident.
Locators
    ``range`` is always a 0-based, end-exclusive code-point range into the exact output (into the
    question for ``from_question``, into the ``path`` argument for a path argument, which has no
    line). ``pointer`` is given for output that is a JSON object or array (also cut short),
    ``line``/``column`` always. ``path`` is the call's ``path`` argument or None.
``unsupported``
    The nearest value for a number is a hint (``CheckedClaim.nearest``): the closest number with the
    same first digit and count of digits. It is not in ``to_json()``, whose shape is EVIDENCE.md's.
"""

from __future__ import annotations

from collections.abc import Sequence

from minipi.agent.evidence.claims import extract_claims
from minipi.agent.evidence.match import MAX_SOURCES, Locator, Verdict, judge
from minipi.agent.evidence.sources import collect_sources
from minipi.agent.evidence.types import (
    SUPPORTED,
    CheckedClaim,
    Claim,
    ClaimKind,
    DateFigure,
    Evidence,
    Figure,
    Nearest,
    NumberFigure,
    Origin,
    Source,
    Status,
    TextFigure,
    TimeFigure,
)
from minipi.ai.types import Item

__all__ = [
    "MAX_SOURCES",
    "SUPPORTED",
    "CheckedClaim",
    "Claim",
    "ClaimKind",
    "DateFigure",
    "Evidence",
    "Figure",
    "Nearest",
    "NumberFigure",
    "Origin",
    "Source",
    "Status",
    "TextFigure",
    "TimeFigure",
    "check_evidence",
    "extract_claims",
]


def check_evidence(answer: str, items: Sequence[Item]) -> Evidence:
    """The claims of ``answer`` checked against the run that ends ``items``.

    ``items`` is the history as ``RunResult.items`` has it: the run is what follows its last
    user message (earlier turns of a chat are other runs); its sources are the tool results
    there that are not errors. Equal figures are looked up once.
    """
    run = collect_sources(items)
    locator = Locator()
    verdicts: dict[tuple[str, Figure, bool], Verdict] = {}
    checked = []
    for claim in extract_claims(answer):
        key = (claim.kind, claim.figure, claim.weak)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = judge(claim, run, locator)
        checked.append(CheckedClaim(claim, verdict.status, verdict.sources, verdict.nearest))
    return Evidence(tuple(checked), run.tool_results)
