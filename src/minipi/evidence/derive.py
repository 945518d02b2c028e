"""A computed figure recomputed from the reads: the sum, mean, count or difference that an
answer states is checked, never guessed.

Principle: a number the answer states that no read holds is ``derived`` when it equals
a figure computed over one read of this question, on the rows the answer's or the question's
words select:

- the rows: those of one read that hold every word of the question and of the answer
  beside the figure that tells the read's rows apart (a word two rows or more hold, and not
  all): "open stores in East" selects the rows holding both ``open`` and ``east``, "7 people
  in 技术部" the rows holding 技术部; with no such word, every row;
- a **count** of those rows ("3 ERROR lines": the lines that hold ERROR);
- a **sum** or a **mean** of one of their columns (89.50 + 240.00 + 46.50 = 376.00, the rows
  that hold ``travel``), compared at the precision the answer wrote;
- a **difference** of two figures the answer itself states (450 - 380 = 70:
  ``difference_of``, used by the check on the answer's supported figures); never of two
  figures a read happens to hold, which a small difference matches by chance.

The rows are selected by words, never by guessing which column is meant: every numeric column
of the selected rows is tried, and the operands are shown as the figure's sources. Reads over
``MAX_OUTPUT`` characters, rows past ``MAX_ROWS`` and figures past ``MAX_TERMS`` are not
tried (the figure then stays as it was found).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TypeVar

from minipi.reading.words import words

__all__ = [
    "MAX_OUTPUT",
    "MAX_ROWS",
    "MAX_TERMS",
    "MAX_WORDS",
    "Reads",
    "Term",
    "derive",
    "difference_of",
    "fraction",
]

MAX_OUTPUT = 64 * 1024
MAX_ROWS = 2000
MAX_TERMS = 60
MAX_WORDS = 48
"""The words that select rows, at most: those beside the figure first, then the question's
(a pasted question of thousands of words would cost a pass over the rows each)."""
_NUMBER = re.compile(r"(?<![\w.:/-])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w:/-]|\.\d|,\d)")
"""A number of running text: thousands grouped with commas or not, never part of a date, a
time, a version or a word."""
_CELL_NUMBER = re.compile(r"(?<![\w.:/-])-?\d+(?:\.\d+)?(?![\w:/-]|\.\d)")
"""A number in a table's cell, where a comma separates cells."""
_SPLIT = re.compile(r"[,\t|]")


@dataclass(frozen=True, slots=True)
class Term:
    """One operand (or counted row) of a derived figure: output index and its range."""

    output: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Row:
    output: int
    start: int
    words: frozenset[str]
    cells: tuple[tuple[int, Decimal, int, int], ...]  # (column, value, start, end)


class Reads:
    """This question's content reads, each parsed into rows once (the figures of one answer
    share them). ``texts``: a read's text, or None for one that is not this question's."""

    def __init__(self, texts: Sequence[str | None]) -> None:
        self.texts = texts
        self._rows: dict[int, list[_Row]] = {}

    def rows(self, index: int) -> list[_Row]:
        rows = self._rows.get(index)
        if rows is None:
            text = self.texts[index]
            whole = text is not None and len(text) <= MAX_OUTPUT
            rows = list(_rows(index, text))[:MAX_ROWS] if whole and text else []
            self._rows[index] = rows
        return rows


def derive(
    value: Decimal, decimals: int, reads: Reads, chosen: Sequence[str]
) -> tuple[Term, ...] | None:
    """The terms that compute ``value`` (module docstring), or None. ``chosen``: the words
    that select rows, the first ``MAX_WORDS`` tried."""
    for index in range(len(reads.texts)):
        found = _in_rows(value, decimals, reads.rows(index), chosen[:MAX_WORDS])
        if found is not None:
            return found
    return None


def fraction(value: Decimal, texts: Sequence[str | None]) -> Term | None:
    """Where a read holds ``value`` / 100: a percent the answer states is that fraction
    (44.5 % of 0.445), written as the read writes it or with more digits of the answer's."""
    wanted = value / 100
    for index, text in enumerate(texts):
        if text is None or len(text) > MAX_OUTPUT:
            continue
        for match in _NUMBER.finditer(text):
            if Decimal(match.group().replace(",", "")) == wanted:
                return Term(index, match.start(), match.end())
    return None


def _in_rows(
    value: Decimal, decimals: int, rows: list[_Row], chosen: Sequence[str]
) -> tuple[Term, ...] | None:
    """A count of the rows ``chosen`` selects, or a sum or mean of one of their columns."""
    selected = _selected(rows, chosen)
    if not selected:
        return None
    if value == len(selected) and len(selected) <= MAX_TERMS:
        return tuple(Term(r.output, r.start, r.start + 1) for r in selected)
    if len(selected) > MAX_TERMS:
        return None
    columns: dict[int, list[tuple[Decimal, Term]]] = {}
    for row in selected:
        for column, number, start, end in row.cells:
            columns.setdefault(column, []).append((number, Term(row.output, start, end)))
    for cells in columns.values():
        if len(cells) > 1 and _sum_or_mean(value, decimals, [v for v, _ in cells]):
            return tuple(t for _, t in cells)
    return None


def _selected(rows: list[_Row], chosen: Sequence[str]) -> list[_Row]:
    """The rows holding every chosen word that tells rows apart (held by two rows or more,
    not by all): "open stores in East" selects the rows holding both ``open`` and ``east``;
    with no such word, every row."""
    telling = [w for w in chosen if 1 < sum(w in r.words for r in rows) < len(rows)]
    return [r for r in rows if all(w in r.words for w in telling)]


def _sum_or_mean(value: Decimal, decimals: int, numbers: list[Decimal]) -> bool:
    total = sum(numbers, Decimal(0))
    return _equal(total, value, decimals) or _equal(total / len(numbers), value, decimals)


T = TypeVar("T")


def difference_of(value: Decimal, figures: Sequence[tuple[Decimal, T]]) -> tuple[T, T] | None:
    """Two of ``figures`` whose difference is ``value`` (> 0), the larger first, or None."""
    if value <= 0:
        return None
    for i, (a, first) in enumerate(figures[:MAX_TERMS]):
        for b, second in figures[i + 1 : MAX_TERMS]:
            if abs(a - b) == value:
                return (first, second) if a > b else (second, first)
    return None


def _equal(computed: Decimal, value: Decimal, decimals: int) -> bool:
    """``computed`` written with the answer's ``decimals`` is ``value`` (376 for 376.00)."""
    try:
        return computed.quantize(Decimal(1).scaleb(-decimals)) == value
    except InvalidOperation:
        return False


def _rows(index: int, text: str) -> Iterator[_Row]:
    """The lines of a read with their words and numbers (a number's column: its cell's place
    in a table line split at ``,``, a tab or ``|``, else its order on the line)."""
    start = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            yield _Row(index, start, words(line), tuple(_numbers(line, start)))
        start += len(line)


def _numbers(line: str, start: int) -> Iterator[tuple[int, Decimal, int, int]]:
    if _table(line):
        at = 0
        for column, cell in enumerate(_SPLIT.split(line)):
            for match in _CELL_NUMBER.finditer(cell):
                yield (
                    column,
                    Decimal(match.group()),
                    start + at + match.start(),
                    start + at + match.end(),
                )
            at += len(cell) + 1
        return
    for order, match in enumerate(_NUMBER.finditer(line)):
        number = Decimal(match.group().replace(",", ""))
        yield order, number, start + match.start(), start + match.end()


def _table(line: str) -> bool:
    return line.count(",") >= 1 or "\t" in line or line.count("|") >= 2
