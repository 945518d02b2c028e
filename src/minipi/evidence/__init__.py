"""Evidence: each figure of an answer traced to this run's tool results, or flagged.

The pipeline, one stage a module or two::

    claims    (claims, numbers,      the figures of the answer, each a Claim with its Figure;
               statements)           the paths it names, the changes it says were made
    sources   (sources)              the run's tool results: what is content, what is a path
    match     (match, match_numbers, where each figure is in a text, and how well (Hit)
               match_dates)
    locate    (locate)               a hit as a Source: line, column, JSON Pointer
    verdict   (check)                each claim's status and sources: the Evidence

``numerals`` is the vocabulary they share (folding, Chinese numerals, units); ``types`` the
data (``Evidence.to_json()`` is EVIDENCE.md's object).

``check_evidence(answer, items)`` is pure (no I/O, no model, no clock). It follows
``../shared/EVIDENCE.md``; where that is silent it decides as below. The package is imported
only by whoever checks an answer: ``import minipi`` does not load it, and the loop
loads only the verdict (``verdict``, ``asked``, ``scope``) until an answer is checked.

Sources
    The conversation's tool results that are not errors, as each tool marked them (content,
    paths, its own words: ``sources``): this question's (after the last user ``Message``, whose
    text is the question) first, then earlier questions' (``Source.question``); system and
    assistant text never count, nor an argument the model wrote. ``tool_results`` counts this
    question's results. ``path`` and ``change`` claims (``statements``): a path is ``exact``
    where a tool showed it, a change where a change of this run is called by a word of it.
Looking
    Each claim is looked for in its usual renderings first (a few ``str.find`` or one regex pass
    over each output); other scripts (full-width digits or Chinese numerals in the output, English
    month names), rounded values and the nearest value only where that found no content. So a figure
    written in two scripts in two files may be reported from one of them. Two or more places of the
    best kind make a claim ``ambiguous`` (the same file read twice is one place); at most
    ``MAX_SOURCES`` are listed and the search stops there. ``weak`` claims are not looked up and
    have no sources. ``supported`` counts ``SUPPORTED``; ``unsupported`` counts ``unsupported``
    only: ``weak``, ``path`` and ``from_question`` are shown, and neither.
Numbers
    Digit boundaries hold in the answer and in the output: a digit group is read as the whole token
    around it, so 9600 is not in 19600, 9600.5, ``SKU-9600``, ``2026-09-06``, ``10:30``,
    ``138-9600-1234`` or ``1.9600.2``. A number glued to letters (``SKU-0042``, ``v2``) belongs to
    an identifier, in the answer and in the output. Signs count: ``-5`` is not supported by ``5``
    nor the other way round; a ``-`` after a digit is a range (``3-5``: the claims 3 and 5). A comma
    is a thousands separator only with exact 3-digit groups; ``9,6`` is the two numbers 9 and 6,
    never 96 or 9.6. The full-width comma separates list items (``128，256``) except between
    full-width digits (``９，６００``). Units are kept on the claim and not compared (outputs rarely
    state them: ``"revenue_yuan": 9600``), except ``%``: ``12.5%`` is ``normalized`` by ``0.125``
    and the other way round. Same digits is ``exact`` (``9600元`` by ``9600``); ``9,600 元``,
    ``９６００``, ``九千六百`` and ``9600.00`` are ``normalized``. A scaled figure (``9.6k``,
    ``1.2万``, ``1.2 million``) is ``rounded`` by any value in its interval, ``9600`` included: the
    answer only says "about 9.6 thousand". So is an approximate one (``约9600``, ``about 128``:
    interval from its last nonzero digit; ``100多`` is [100, 200)) by a value other than its own,
    and a figure that rounds a more precise value (``12.5%`` from ``0.1248``, 128 from 127.6). A
    scaled value in the output (``9.6k``) supports at most as ``rounded``. Chinese numerals are
    exact values (一百二十八, 两万, 一万二 = 12000); a lone 一/两/三… is a claim only before a
    measure word (两个), so 一些, 统一 and 几十万 are none. 百分之十二 is 12%. List markers (``1.``,
    ``(2)``, ``①``, ``1、``) and citations (``[3]``, ``【3】``) are not claims. Weak: whole numbers
    up to 10, any unit, and a year alone (1900–2100, with no unit or 年).
Dates and times
    The forms are in ``dates``. A source may hold more components than the claim (``9月6日`` and
    ``2026年9月`` are supported by ``2026-09-06``), never fewer (``2026年9月6日`` is not supported
    by ``9月6日``). Another form is ``normalized`` (``2026年9月6日`` by ``"2026-09-06"`` in JSON, by
    ``20260906``, by ``September 6, 2026``). An impossible date (``2026-02-30``) is matched as
    written. ``10:30`` is a ``time`` claim, supported by ``10:30``, ``10:30:00`` or ``10点30分``; an
    ISO date-time is a date claim and a time claim.
Identifiers and quotes
    Tokens that mix letters and digits or carry ``_`` (``A-17``, ``step2.txt``, ``revenue_yuan``),
    or ``-`` with an upper-case or digit part (``SKU-ABC``); not ``well-known``, and not
    ``AgentLoop`` unquoted (that would flag words like GitHub). Three or more digit groups that are
    no date or time (``192.168.1.10``) are matched as written. Text between ASCII quotes, backticks,
    「」 or 『』 is a ``quote`` claim; between “” ‘’ 《》 only if it has an ASCII letter or digit
    (Chinese uses those marks for emphasis: “良好”). A quoted lone figure (``'9600'``) is that
    figure. Exact at token boundaries (``A-17`` is not in ``XA-17`` or ``A-17-B``), then case- and
    width-insensitive (``normalized``); never fuzzy. A value this question's reads give a field
    or a table cell that reads as a name (a Han character, or upper- and lower-case letters:
    ``Yuki Kowalski``, ``中华田园猫``; ``claims.is_name``) is a ``quote`` claim where the
    answer writes it: a name no read holds is no claim (words cannot tell a name from a word).
``derived``
    Text only: a quote or identifier made of 2–3 pieces that stand between quotes in this run's
    content, in order (the treasure hunt's ``'Agent'`` + ``'Loop'`` is ``'AgentLoop'``); its sources
    are the pieces. Sums and differences of numbers are not checked: among the numbers of a few
    kilobytes some pair adds up to almost anything, which would be support by chance.
Locators
    ``range`` is a 0-based, end-exclusive code-point range into the exact output; into the question
    for ``from_question``, into the ``path`` argument for a path argument (which has no line).
    ``pointer`` is given for content that is a JSON object or array (also one cut short),
    ``line``/``column`` always; ``line`` is the file's line for a ``read_file`` called with an
    ``offset``. ``path`` is the call's ``path`` argument, or None.
``unsupported``
    For a number, the nearest value within 10% is a hint (``CheckedClaim.nearest``). It is not in
    ``to_json()``, whose shape is EVIDENCE.md's.
Bounds
    Only the first ``MAX_ANSWER_CHARS`` characters of an answer are examined, at most
    ``MAX_CLAIMS`` claims are checked, and the figures are judged in answer order while the
    estimated cost of their searches over the run's results (``Matcher.cost``) fits
    ``MAX_WORK``: a check costs at most about 1 s, whatever the answer and the results hold.
    Past a bound, ``Evidence.unchecked_from`` (``"unchecked_from"`` in ``to_json()``, only then)
    is where the figures not examined begin; they are not in ``claims``, never passed.
Not done
    Numbers in words (twelve), JSON Pointers into JSON Lines, text behind ``\\u`` escapes of JSON
    output, sums of numbers (above), a check of units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minipi._lazy import lazy_names

if TYPE_CHECKING:
    from minipi.evidence.check import (
        MAX_ANSWER_CHARS,
        MAX_CLAIMS,
        MAX_SOURCES,
        MAX_WORK,
        check_evidence,
    )
    from minipi.evidence.claims import extract_claims
    from minipi.evidence.types import (
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

# Loaded on first use (PEP 562): the loop imports the verdict (``minipi.evidence.verdict``)
# at start, and the check's modules (``decimal`` among them) only when an answer is checked.
__getattr__ = lazy_names(
    __name__,
    {
        "minipi.evidence.check": (
            "MAX_ANSWER_CHARS",
            "MAX_CLAIMS",
            "MAX_SOURCES",
            "MAX_WORK",
            "check_evidence",
        ),
        "minipi.evidence.claims": ("extract_claims",),
        "minipi.evidence.types": (
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
        ),
    },
)

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_CLAIMS",
    "MAX_SOURCES",
    "MAX_WORK",
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
