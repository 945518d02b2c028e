"""A figure checked in its context: what the answer says about it against the record it came
from.

Principle: a source backs a figure only where the words the answer puts beside the figure do
not name another record of the same source. The words beside a figure (its *label*) are the
answer's words between the figure and its neighbours in the same clause (a clause ends at
``, ; 。 ， ； 、 ! ?``, a line break, ``and``/``和``). The figure's *record* is what the
structure of its read says it belongs to (``minipi.evidence.records``: the JSON keys on
its pointer and its object's names, its line with the lines it is under and its column's
header). The source disagrees with the answer when:

- the label names a *section* of the read (a parent key, a heading, a ``[section]``, a list
  item's name) that the figure's record is not in: "the scheduler's memory limit is 2Gi"
  where 2Gi is under ``api``;
- the label holds words of the read that are not the record's, and none of the record's: a
  time taken from an ``INFO`` line given as "the first ERROR was at …", ``orders 9600``
  where 9600 is ``revenue_yuan``;
- the answer names another file beside the figure than the one it was read from, another
  currency than the record's (``$9600`` of ``revenue_yuan``), or writes a bare ``0.05`` as
  ``0.05%``.

When the label shares no word with the read (a Chinese sentence about English keys, no
label) words cannot tell, and the figure stands as found. Words are
``minipi.reading.words``. Outputs over ``MAX_OUTPUT`` characters are not read for records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from minipi.ai.types import FunctionCallOutput, Item
from minipi.evidence.records import record_of
from minipi.evidence.types import CheckedClaim, Claim, NumberFigure, Source
from minipi.reading.paths import path_spans
from minipi.reading.words import words

__all__ = ["FIGURES", "MAX_OUTPUT", "label_paths", "label_words", "mislabeled"]

MAX_OUTPUT = 256 * 1024
FIGURES = ("number", "date", "time", "identifier")
"""The claims a label speaks of (a path or a change sentence is its own label)."""
_CLAUSE = re.compile(r"[,;，；。、!?！？\n]|\.(?:\s|$)|\s(?:and|but|while)\s|和|以及|而|并且")


def label_words(
    answer: str, span: tuple[int, int], others: Sequence[tuple[int, int]]
) -> frozenset[str]:
    """The words ``answer`` puts beside the figure at ``span``: from the previous figure or
    clause break to the next (``others``: every figure's span), paths left out."""
    text = _window(answer, span, others)
    for path_start, path_end, _ in sorted(path_spans(text), reverse=True):
        text = text[:path_start] + " " + text[path_end:]
    return words(text)


def label_paths(
    answer: str, span: tuple[int, int], others: Sequence[tuple[int, int]]
) -> tuple[str, ...]:
    """The files (names with an extension) the answer names beside the figure at ``span``."""
    found = (value for _, _, value in path_spans(_window(answer, span, others)))
    return tuple(p for p in found if "." in p.rstrip("/").rsplit("/", 1)[-1][1:])


def _window(answer: str, span: tuple[int, int], others: Sequence[tuple[int, int]]) -> str:
    start, end = span
    before = max((m.end() for m in _CLAUSE.finditer(answer, 0, start)), default=0)
    after = next((m.start() for m in _CLAUSE.finditer(answer, end)), len(answer))
    before = max([before] + [e for s, e in others if e <= start])
    after = min([after] + [s for s, e in others if s >= end])
    lead = " ".join(answer[before:start].split()[-_NEAR_BEFORE:])[-_NEAR_CHARS:]
    tail = " ".join(answer[end:after].split()[:_NEAR_AFTER])[:_NEAR_CHARS]
    return f"{lead} {tail}"


_NEAR_BEFORE, _NEAR_AFTER, _NEAR_CHARS = 5, 3, 40
"""A label is the words next to a figure: the last five before it and the first three after
(at most 40 characters each side, for scripts without spaces). Further words of the same
clause are the sentence's frame (``The inventory lists the following hosts: …``), not what
the answer says the figure is."""


def mislabeled(
    answer: str, claims: Sequence[CheckedClaim], items: Sequence[Item]
) -> tuple[CheckedClaim, ...]:
    """The supported figures whose every content source disagrees with the answer's label
    (module docstring)."""
    outputs = {i.call_id: i.output for i in items if isinstance(i, FunctionCallOutput)}
    spans = [c.claim.span for c in claims if c.claim.kind in FIGURES]
    owns = {c.claim.span: _own_words(c, outputs) for c in claims}
    return tuple(c for c in claims if _contradicted(c, answer, spans, outputs, owns))


def _contradicted(
    checked: CheckedClaim,
    answer: str,
    spans: list[tuple[int, int]],
    outputs: dict[str, str],
    owns: dict[tuple[int, int], frozenset[str]],
) -> bool:
    sources = _content(checked)
    if not sources:
        return False
    others = [span for span in spans if span != checked.claim.span]
    span = checked.claim.span
    theirs = _neighbours_words(answer, span, others, owns) - owns.get(span, frozenset())
    label = label_words(answer, span, others) - theirs
    said = _Said(checked.claim, label, label_paths(answer, span, others))
    return all(_disagrees(said, s, outputs.get(s.call_id or "")) for s in sources)


def _own_words(checked: CheckedClaim, outputs: dict[str, str]) -> frozenset[str]:
    """The words of the records a supported figure was found in (``Record.own``)."""
    found: set[str] = set()
    for source in _content(checked):
        output = outputs.get(source.call_id or "")
        if output is not None and len(output) <= MAX_OUTPUT:
            found |= record_of(source, output).own
    return frozenset(found)


def _neighbours_words(
    answer: str,
    span: tuple[int, int],
    others: Sequence[tuple[int, int]],
    owns: dict[tuple[int, int], frozenset[str]],
) -> frozenset[str]:
    """The words between a figure and the figure next to it (either side) that name that
    figure's own record. Words between two figures may speak of either ("On 2026-09-06 the
    revenue was 9600": "revenue" is 9600's); where they name the neighbour's record and not
    this one's, and no clause ends between the two, words cannot tell they speak of this one,
    so they never contradict it."""
    before = max((s for s in others if s[1] <= span[0]), default=None, key=lambda s: s[1])
    after = min((s for s in others if s[0] >= span[1]), default=None, key=lambda s: s[0])
    sides = []
    if before is not None:
        sides.append((before, answer[before[1] : span[0]]))
    if after is not None:
        sides.append((after, answer[span[1] : after[0]]))
    found: set[str] = set()
    for other, between in sides:
        if not _CLAUSE.search(between):  # a clause ends between: the words are this one's
            found |= words(between) & owns.get(other, frozenset())
    return frozenset(found)


def _content(checked: CheckedClaim) -> list[Source]:
    """The content sources of a figure found as it is (not recomputed: ``derived``)."""
    if checked.claim.kind not in FIGURES or not checked.supported:
        return []
    if checked.status == "derived":
        return []
    return [s for s in checked.sources if s.origin == "content" and s.call_id]


@dataclass(frozen=True, slots=True)
class _Said:
    """What the answer says of one figure: the claim, and the words beside it."""

    claim: Claim
    label: frozenset[str]
    files: tuple[str, ...] = ()

    @property
    def currencies(self) -> frozenset[str]:
        unit = self.claim.unit or ""
        return _currencies(self.label | {unit.lower()}, unit)


def _disagrees(said: _Said, source: Source, output: str | None) -> bool:
    """The source says the figure is something else than the answer says: another file than
    the one the answer names beside it, another currency, a bare number read as a percent,
    another section's name beside it, or another record's words and none of its own."""
    if output is None or len(output) > MAX_OUTPUT:
        return False
    if _other_file(said, source.path):
        return True  # "in a.json the total is 12" where 12 was read from b.json
    record = record_of(source, output)
    if _other_currency(said, record.own, _line_of(output, source.range[0])):
        return True  # 9600 of a revenue_yuan field said in dollars
    if _bare_percent(said.claim, source, output, record.own):
        return True
    label = said.label
    if label & (record.sections - record.own):
        return True  # "the scheduler's memory is 2Gi" where 2Gi is under api
    return bool(label) and not label & record.own and bool(label & (record.whole - record.own))


def _other_file(said: _Said, path: str | None) -> bool:
    return bool(said.files and path) and not any(_same_file(path or "", f) for f in said.files)


def _other_currency(said: _Said, record: frozenset[str], line: str) -> bool:
    named = said.currencies
    held = _currencies(record, line) if named else frozenset()
    return bool(named and held and not named & held)


_CURRENCY = {
    "$": "usd", "usd": "usd", "dollar": "usd", "美元": "usd",
    "元": "cny", "rmb": "cny", "cny": "cny", "yuan": "cny", "人民": "cny",
    "¥": "cny jpy", "￥": "cny jpy",
    "€": "eur", "eur": "eur", "euro": "eur", "欧元": "eur",
    "£": "gbp", "gbp": "gbp", "pound": "gbp", "英镑": "gbp",
    "jpy": "jpy", "yen": "jpy", "日元": "jpy",
}  # fmt: skip
"""Currency symbols, ISO codes and names, to the currencies they may mean."""
_CURRENCY_SIGNS = re.compile(r"[$¥￥€£]|(?<![美欧日])元")


def _currencies(found: frozenset[str], text: str) -> frozenset[str]:
    """The currencies ``found`` words and the signs of ``text`` name."""
    named = [_CURRENCY[w] for w in found if w in _CURRENCY]
    named += [_CURRENCY[m.group()] for m in _CURRENCY_SIGNS.finditer(text)]
    return frozenset(code for codes in named for code in codes.split())


def _bare_percent(claim: Claim, source: Source, output: str, record: frozenset[str]) -> bool:
    """A percent found as the same number written without ``%``, in a record that does not
    say percent: 0.05 there is a fraction (5 %), not 0.05 % (0.445 backs 44.5 %)."""
    figure = claim.figure
    if not isinstance(figure, NumberFigure) or not figure.percent:
        return False
    end = source.range[1]
    if output[end : end + 2].lstrip()[:1] in ("%", "％"):
        return False
    try:
        same = Decimal(source.text.replace(",", "")) == figure.value
    except InvalidOperation:
        return False
    return same and not record & _PERCENT_WORDS


_PERCENT_WORDS = frozenset({"percent", "percentage", "pct", "百分"})


def _same_file(path: str, named: str) -> bool:
    """``named`` (as the answer writes it: whole, or its last part) is ``path``."""
    path, named = path.removeprefix("./"), named.removeprefix("./")
    return path == named or path.endswith("/" + named)


def _line_of(output: str, at: int) -> str:
    start = output.rfind("\n", 0, at) + 1
    end = output.find("\n", at)
    return output[start : end if end >= 0 else len(output)]
