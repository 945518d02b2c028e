"""Number forms through ``check_evidence``: a table's cells (a comma between a word, or another
cell, and digits never joins them into one number), thousands grouped with spaces, a count
that looks like a year, and digits of other forms (full-width, circled, superscript).

Each case is one answer and one ``read_file`` result; the claim's status and, where it is
supported, the text of the output its source points at.
"""

from __future__ import annotations

import json

import pytest

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.evidence import CheckedClaim, check_evidence

THIN = "\u2009"
NARROW_NBSP = "\u202f"
NBSP = "\u00a0"
ROW = "101,202,303,404,505,606,707,808,909,111,222"
"""More 3-digit groups than a number of ``MAX_DIGITS`` digits has: a row of cells."""


def checked(answer: str, output: str) -> list[CheckedClaim]:
    """The checked claims of ``answer`` after one ``read_file`` call returned ``output``."""
    items: list[Item] = [
        Message("user", "q"),
        FunctionCall("c1", "read_file", json.dumps({"path": "e.csv"})),
        FunctionCallOutput("c1", output),
    ]
    return list(check_evidence(answer, items).claims)


def only(answer: str, output: str) -> tuple[str, str, list[str]]:
    """The one claim of ``answer``: its text, status, and the output's text at its sources."""
    claims = checked(answer, output)
    assert len(claims) == 1, [(c.claim.text, c.status) for c in claims]
    claim = claims[0]
    return claim.claim.text, claim.status, [output[slice(*s.range)] for s in claim.sources]


@pytest.mark.parametrize(
    ("figure", "output", "status", "source"),
    [
        pytest.param("89.50", "2026-11-03,travel,89.50\n", "exact", "89.50", id="after-a-word"),
        pytest.param("31.20", "a,31.20\n", "exact", "31.20", id="trailing-zero"),
        pytest.param("89.50", "date,amount\n5,89.50\n", "exact", "89.50", id="after-a-cell"),
        pytest.param("89.5", "5,89.5\n", "exact", "89.5", id="after-a-cell-no-zero"),
        pytest.param("63", "5,63,7\n", "exact", "63", id="between-cells"),
        pytest.param("89.5", "x,89.50\n", "normalized", "89.50", id="fewer-zeros-claimed"),
        pytest.param("89.50", "x,89.5\n", "normalized", "89.5", id="more-zeros-claimed"),
        pytest.param("89.5", "x,89.504\n", "rounded", "89.504", id="rounds-a-cell"),
        pytest.param("约 9.6k", "travel,9600\n", "rounded", "9600", id="scaled-after-a-word"),
        pytest.param("约 9.6k", "5,9600\n", "rounded", "9600", id="scaled-after-a-cell"),
        pytest.param("12.99", "a,12.99\n", "exact", "12.99", id="no-zero-was-found"),
        pytest.param("303", f"a,{ROW}\n", "exact", "303", id="a-row-of-3-digit-cells"),
    ],
)
def test_a_cell_is_a_number_of_its_own(figure: str, output: str, status: str, source: str) -> None:
    """``2026-11-03,travel,89.50`` holds 89.50: a comma after a word, or after a cell that is
    no 3-digit group's head, starts a number. (89.50 was missed: the search for ``89.5`` saw
    the ``0`` after it as a larger number, and the slower search saw the comma before it as a
    thousands separator. A row of more 3-digit cells than a number has groups was read as
    one number; 303 was ``derived`` as 404 - 101.)"""
    _, found, sources = only(f"It is {figure} now", output)
    assert (found, sources) == (status, [source])


@pytest.mark.parametrize(
    ("figure", "output", "status", "sources"),
    [
        pytest.param("9600", "x,9,600\n", "normalized", ["9,600"], id="9,600-is-9600"),
        pytest.param("9,600", "x,9600\n", "normalized", ["9600"], id="9600-is-9,600"),
        pytest.param("600", "x,9,600\n", "unsupported", [], id="600-not-in-9,600"),
        pytest.param("202", "a,101,202\n", "unsupported", [], id="101,202-is-101202"),
        pytest.param("89.50", "x,1,089.50\n", "unsupported", [], id="89.50-not-in-1,089.50"),
        pytest.param("9.6", "x,9,6\n", "unsupported", [], id="9,6-is-not-9.6"),
        pytest.param("96", "x,9,6\n", "unsupported", [], id="9,6-is-not-96"),
    ],
)
def test_a_comma_between_digits_still_groups_thousands(
    figure: str, output: str, status: str, sources: list[str]
) -> None:
    """Exact 3-digit groups after digits are a thousands number (``9,600`` is 9600, and so is
    ``101,202`` 101202, though it may be two cells); any other comma between digits separates
    two numbers (``9,6`` is 9 and 6, never 9.6 nor 96)."""
    assert only(f"It is {figure} now", output)[1:] == (status, sources)


@pytest.mark.parametrize(
    "space", [" ", THIN, NARROW_NBSP, NBSP], ids=["space", "thin", "nnbsp", "nbsp"]
)
def test_thousands_grouped_with_spaces_in_an_answer(space: str) -> None:
    """``7 000`` in an answer is one figure, 7000, with any of these spaces (NFKC makes them
    one): it was two weak ones (7 and 000), so an answer could state a sum no read holds and
    pass unchecked. The price: numbers listed with single spaces (``98 100 95``) read as
    98100 and 95, flagged rather than passed."""
    answer = f"The total is 7{space}000 元."
    assert only(answer, '{"total": 7000}') == (f"7{space}000 元", "normalized", ["7000"])
    assert only(answer, '{"total": 7, "fee": 0}')[1] == "unsupported"
    assert only(f"It is 1{space}234{space}567.5 now", "n = 1234567.5")[1] == "normalized"
    claims = checked(f"Scores: 98{space}100 95.", "98\n100\n95\n")
    assert [(c.claim.value, c.status) for c in claims] == [
        ("98100", "unsupported"),
        ("95", "exact"),
    ]


@pytest.mark.parametrize("space", [THIN, NARROW_NBSP, NBSP], ids=["thin", "nnbsp", "nbsp"])
def test_thousands_grouped_with_typographic_spaces_in_a_file(space: str) -> None:
    """A thin, narrow no-break or no-break space between exact 3-digit groups of a tool's
    output joins them (SI style ``7 000``), as a comma does; other groups stay apart."""
    output = f"total 7{space}000\nrate 12{space}34\n"
    assert only("It is 7000 now", output) == ("7000", "normalized", [f"7{space}000"])
    assert only("It is 7,000 now", output)[1:] == ("normalized", [f"7{space}000"])
    assert only(f"It is 7{space}000 now", output)[1:] == ("exact", [f"7{space}000"])
    assert only("It is 000 now", output)[1] == "weak"
    assert only("It is 1234 now", output)[1] == "unsupported"
    assert only("It is 34 now", output)[1:] == ("exact", ["34"])


def test_thousands_grouped_with_a_plain_space_in_a_file() -> None:
    """A plain space between digit groups of a tool's output separates columns as often as it
    groups thousands (``qty price`` / ``1 200``): the groups are numbers of their own, and
    joined only for a figure the answer wrote spaced."""
    output = "qty price\n1 200\n"
    assert only("The price is 200.", output)[1:] == ("exact", ["200"])
    assert only("It is 1200 now", output)[1] == "unsupported"
    assert only("It is 1 200 now", output)[1:] == ("exact", ["1 200"])
    assert only(f"It is 1{THIN}200 now", output)[1:] == ("normalized", ["1 200"])


def test_a_count_that_looks_like_a_year_is_looked_up() -> None:
    """A number of 1900-2100 is a year alone (``weak``: not looked up) unless it counts what
    the word after it names: ``2026 orders`` is a count, found where a read holds 2026 as a
    number, and ``unsupported`` where it holds it only in a date. A year after a word that
    places it in time (``in 2026``, ``the 2026 report``), or followed by no word it counts
    (``2026 was``), stays weak. (Limit: with no counted word, ``orders: 2026`` is weak.)"""
    assert only("There were 2026 orders.", '{"orders": 2026}')[1:] == ("exact", ["2026"])
    assert only("We shipped 1999 parcels.", "parcels,1999\n")[1:] == ("exact", ["1999"])
    assert only("There were 2026 orders.", '{"date": "2026-11-03"}')[1] == "unsupported"
    assert only("In 2026 orders grew.", '{"date": "2026-11-03"}')[1] == "weak"
    assert only("The 2026 report is out.", '{"date": "2026-11-03"}')[1] == "weak"
    assert only("By 2026 sales had doubled.", "x")[1] == "weak"
    assert only("Sales doubled since 2026.", "x")[1] == "weak"
    assert only("That was 2026 and it went well.", "x")[1] == "weak"


def test_full_width_digits() -> None:
    """Full-width digits are the digits they show (NFKC), in the answer and in the output:
    ``９６００`` and 9600 back each other as ``normalized``, ``９，６００`` is 9600. This was
    so before; new is only that a full-width cell after a word keeps its trailing zero
    (``８９．５０``), as an ASCII one does."""
    assert only("It is ９６００ now", "total 9600\n")[1:] == ("normalized", ["9600"])
    assert only("It is 9600 now", "total ９６００\n")[1:] == ("normalized", ["９６００"])
    assert only("It is ９，６００ now", "total 9600\n")[1:] == ("normalized", ["9600"])
    assert only("It is 89.50 now", "差旅，８９．５０\n")[1:] == ("normalized", ["８９．５０"])
    assert only("It is 89.5 now", "差旅，８９．５０\n")[1:] == ("normalized", ["８９．５０"])


def test_circled_digits_are_markers_not_figures() -> None:
    """A circled numeral (①, ⑫) is a list marker: in an answer it is no claim (``fold`` makes
    it ``•``), and in an output it backs no figure, alone or next to digits (``2⑤`` is not
    25). Unchanged: this was so before."""
    claims = checked("① The total is 9600.", "total 9600\n")
    assert [(c.claim.text, c.status) for c in claims] == [("9600", "exact")]
    assert only("It is 12 now", "step ⑫\n")[1] == "unsupported"
    assert only("It is 25 now", "x 2⑤\n")[1] == "unsupported"


def test_superscript_digits_are_notation_not_figures() -> None:
    """A superscript digit (², ⁵) is an exponent, a unit's power or a footnote mark: never
    read as a digit of a figure, in an answer or in an output. The digits before it are the
    figure (``96 m²``, ``9600¹``), so ``2⁵`` backs no 25, and ``²⁵`` nothing. (So ``2⁵`` in
    an answer claims 2, a weak figure, not 32.) Unchanged: this was so before."""
    assert only("It is 25 now", "x 2⁵\n")[1] == "unsupported"
    assert only("It is 25 now", "x ²⁵\n")[1] == "unsupported"
    assert only("The area is 96 m².", "area 96\n")[1:] == ("exact", ["96"])
    assert only("Revenue was 9600¹.", "revenue 9600\n")[1:] == ("exact", ["9600"])
    assert only("Revenue was 9600.", "revenue 9600²\n")[1:] == ("exact", ["9600"])
