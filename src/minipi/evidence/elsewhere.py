"""Where else a figure is looked for, past the usual and the slower search of the content of
tool results (``check._judge``):

- the outputs read a second time with their numerals in the usual forms (``Rereads``): the
  characters ``numerals.fold`` reads in an answer (financial numerals 玖仟陆佰, every script's
  decimal digits ٩٦٠٠, zero-width characters inside ``9\u200b600``), so that a report written
  so backs "9600"; once per output and check, counted against the check's bound;
- a call's ``path`` argument (origin ``path``) and the user's question (``question``): what
  makes a claim ``path`` or ``from_question`` rather than ``unsupported``.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from minipi.evidence.locate import line_column
from minipi.evidence.match import Hit, Matcher
from minipi.evidence.numerals import FINANCIAL, INVISIBLE
from minipi.evidence.sources import Output, RunSources
from minipi.evidence.types import Source

__all__ = ["Rereads", "SourceDigits", "all_hits", "argument_hits", "question_hits", "read_digits"]

_INVISIBLE_CHAR = re.compile("[" + "".join(INVISIBLE) + "]")
_REPLACES = 32
"""Distinct characters replaced one ``str.replace`` each (C speed: about 70 ms for 3 MB of
Arabic-Indic report text); a text with more takes ``str.translate`` (4x slower)."""
FOLD_COST = 40
"""Reading a text again costs at most this, in ns a character (about 21 measured on 3.3 MB of
Arabic-Indic reports, bench/perf_evidence.py; twice that for a slower machine)..."""
LOOK_COST = 10
"""... and finding that it holds nothing to read so, this."""


@dataclass(frozen=True, slots=True)
class SourceDigits:
    """A text in the usual forms: ``text``, and where in it each invisible character was
    taken out (``gone``: the index in ``text`` it would have, one per character, in order)."""

    text: str
    gone: tuple[int, ...]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``[start, end)`` of ``text`` was read from."""
        first = start + bisect.bisect_right(self.gone, start)
        return first, (end - 1) + bisect.bisect_right(self.gone, end - 1) + 1


@lru_cache(maxsize=1)
def _table() -> tuple[dict[int, str], re.Pattern[str]]:
    """Every other decimal digit of the BMP as ASCII, the financial numerals as the everyday
    ones, invisible characters as nothing; and a class that finds any of them. Built on
    first use (65k code points: milliseconds)."""
    table = {c: str(d) for c in range(0x80, 0x10000) if (d := unicodedata.decimal(chr(c), -1)) >= 0}
    table.update((ord(a), b) for a, b in zip(*FINANCIAL, strict=True))
    table.update((ord(c), "") for c in INVISIBLE)
    return table, re.compile("[" + re.escape("".join(map(chr, table))) + "]")


def read_digits(text: str) -> SourceDigits | None:
    """``text`` in the usual forms, or None when it holds nothing to read so."""
    table, anything = _table()
    found = None if text.isascii() else anything.search(text)
    if found is None:
        return None
    gone = tuple(m.start() - i for i, m in enumerate(_INVISIBLE_CHAR.finditer(text)))
    read, replaced = text, 0
    while found is not None and replaced < _REPLACES:  # each character once, all at a time
        char = found.group()
        read, replaced = read.replace(char, table[ord(char)]), replaced + 1
        found = anything.search(read, found.start())  # none before: all replaced
    return SourceDigits(read if found is None else read.translate(table), gone)


class Rereads:
    """The outputs of one check, each read again at most once (``read_digits``); ``spent``
    is what that has cost so far, in the check's estimated ns."""

    def __init__(self, outputs: Sequence[Output]) -> None:
        self._outputs = outputs
        self._read: dict[int, SourceDigits | None] = {}
        self.spent = 0

    def cost(self, matcher: Matcher) -> int:
        """What looking for ``matcher`` in every output read again may cost: the reading of
        the outputs not yet read (they may all hold other digits), and both searches."""
        total = 0
        for index, output in enumerate(self._outputs):
            unread = index not in self._read
            if not output.text.isascii() and (unread or self._read[index] is not None):
                a, b = matcher.cost(output.text)
                total += (a + b + (FOLD_COST if unread else 0)) * len(output.text)
        return total

    def hits(self, matcher: Matcher) -> Iterator[tuple[Output, Hit]]:
        """Each output's hits in its text read again, as spans of the text it holds; a hit
        whose characters the reading changed is ``normalized`` (same value, other form)."""
        for index, output in enumerate(self._outputs):
            if index not in self._read:
                self._read[index] = read = read_digits(output.text)
                self.spent += (FOLD_COST if read else LOOK_COST) * len(output.text)
            read = self._read[index]
            if read is None:
                continue
            a, b = matcher.cost(output.text)
            self.spent += (a + b) * len(output.text)
            for hit in all_hits(matcher, read.text):
                start, end = read.span(hit.start, hit.end)
                same = output.text[start:end] == read.text[hit.start : hit.end]
                tier = "normalized" if hit.tier == "exact" and not same else hit.tier
                yield output, Hit(start, end, tier, hit.value)


def argument_hits(matcher: Matcher, run: RunSources) -> Iterator[Source]:
    for argument in run.path_arguments:
        for hit in all_hits(matcher, argument.path):
            yield Source(
                call_id=argument.call_id,
                tool=argument.tool,
                path=argument.path,
                origin="path",
                pointer=None,
                line=None,
                column=None,
                range=(hit.start, hit.end),
                text=argument.path[hit.start : hit.end],
                question=argument.question,
            )


def all_hits(matcher: Matcher, text: str) -> Iterator[Hit]:
    """The hits of the usual search, else those of the slower one (``near`` left out)."""
    found = [h for h in matcher.hits(text) if h.tier != "near"]
    yield from found or [h for h in matcher.more_hits(text) if h.tier != "near"]


def question_hits(matcher: Matcher, question: str | None) -> Iterator[Source]:
    if not question:
        return
    for hit in all_hits(matcher, question):
        line, column = line_column(question, hit.start)
        yield Source(
            call_id=None,
            tool=None,
            path=None,
            origin="question",
            pointer=None,
            line=line,
            column=column,
            range=(hit.start, hit.end),
            text=question[hit.start : hit.end],
        )
