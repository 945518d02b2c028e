"""A figure checked in its context: what the answer says about it against the record it came
from.

Principle: a source backs a figure only where the words the answer puts beside the figure do
not name another record of the same source. The words beside a figure (its *label*) are the
answer's words between the figure and its neighbours in the same clause (a clause ends at
``, ; 。 ， ； 、 ! ?``, a line break, ``and``/``和``); the words of its *record* are the JSON
keys on the figure's pointer, or the words of its line and, in a table, its column's header;
the words of its *source* are those of every record of the same output. When the label holds
a word of the source that is not a word of the figure's record, and no word of that record,
the answer says the figure is something the source says it is not: a time taken from an
``INFO`` line given as "the first ERROR was at …", ``orders 9600`` where 9600 is
``revenue_yuan``. When the label shares no word with the source at all (a Chinese sentence
about English keys, no label) words cannot tell, and the figure stands as found.

Words are ``minipi.reading.words``. Outputs over ``MAX_OUTPUT`` characters are not read for
records (the figure stands as found).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from minipi.agent.evidence.types import CheckedClaim, Claim, NumberFigure, Source
from minipi.ai.types import FunctionCallOutput, Item
from minipi.reading.paths import path_spans
from minipi.reading.words import words

__all__ = ["FIGURES", "MAX_OUTPUT", "label_paths", "label_words", "mislabeled", "record_words"]

MAX_OUTPUT = 256 * 1024
FIGURES = ("number", "date", "time", "identifier")
"""The claims a label speaks of (a path or a change sentence is its own label)."""
_CLAUSE = re.compile(r"[,;，；。、!?！？\n]|\.(?:\s|$)|\s(?:and|but|while)\s|和|以及|而|并且")
_CELL = re.compile(r"\s*[,\t|]\s*")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


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
    return answer[before:start] + " " + answer[end:after]


def mislabeled(
    answer: str, claims: Sequence[CheckedClaim], items: Sequence[Item]
) -> tuple[CheckedClaim, ...]:
    """The supported figures whose every content source disagrees with the answer's label
    (module docstring)."""
    outputs = {i.call_id: i.output for i in items if isinstance(i, FunctionCallOutput)}
    spans = [c.claim.span for c in claims if c.claim.kind in FIGURES]
    return tuple(c for c in claims if _contradicted(c, answer, spans, outputs))


def _contradicted(
    checked: CheckedClaim, answer: str, spans: list[tuple[int, int]], outputs: dict[str, str]
) -> bool:
    sources = _content(checked)
    if not sources:
        return False
    others = [span for span in spans if span != checked.claim.span]
    span = checked.claim.span
    said = _Said(
        checked.claim, label_words(answer, span, others), label_paths(answer, span, others)
    )
    return all(_disagrees(said, s, outputs.get(s.call_id or "")) for s in sources)


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
    or another record's words beside it."""
    if output is None or len(output) > MAX_OUTPUT:
        return False
    if _other_file(said, source.path):
        return True  # "in a.json the total is 12" where 12 was read from b.json
    record, whole = record_words(source, output)
    if _other_currency(said, record, _line_of(output, source.range[0])):
        return True  # 9600 of a revenue_yuan field said in dollars
    if _bare_percent(said.claim, source, output, record):
        return True
    label = said.label
    return bool(label) and not label & record and bool(label & (whole - record))


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


def record_words(source: Source, output: str) -> tuple[frozenset[str], frozenset[str]]:
    """The words of the record ``source`` is in, and of every record of ``output``."""
    if source.pointer is not None:
        keys = [k for k in source.pointer.split("/")[1:] if not k.isdigit()]
        return words(" ".join(_unescape(k) for k in keys)), _key_words(output)
    lines = _lines(output)
    at = output.count("\n", 0, source.range[0])
    line = lines[at] if at < len(lines) else ""
    column = _column(
        list(lines), at, source.range[0] - (output.rfind("\n", 0, source.range[0]) + 1)
    )
    return words(line) | column, _text_words(output)


@functools.lru_cache(maxsize=16)
def _lines(output: str) -> tuple[str, ...]:
    return tuple(output.splitlines())


@functools.lru_cache(maxsize=16)
def _text_words(output: str) -> frozenset[str]:
    """Every word of a read (once a read: an answer's figures share its sources)."""
    return words(output)


@functools.lru_cache(maxsize=16)
def _key_words(output: str) -> frozenset[str]:
    """Every key's words of a JSON read."""
    return words(" ".join(_json_keys(output)))


def _column(lines: list[str], at: int, column: int) -> frozenset[str]:
    """In a table (cells split by ``,``, a tab or ``|``), the header's words of the cell at
    ``column`` of line ``at``: the header is the line above a Markdown table's ``|---|`` rule,
    else the first line."""
    header_at = _header(lines, at)
    if at <= header_at or at >= len(lines):
        return frozenset()
    header = _cells(lines[header_at])
    if len(header) < 2 or len(_cells(lines[at])) != len(header):
        return frozenset()
    row = lines[at]
    index = sum(1 for m in _CELL.finditer(row) if m.end() <= column)
    index -= row.lstrip().startswith("|")
    return words(header[index]) if 0 <= index < len(header) else frozenset()


def _header(lines: list[str], at: int) -> int:
    """The line number of the header of the table line ``at`` is in."""
    rule = next((n for n in range(at - 1, 0, -1) if _RULE.match(lines[n])), None)
    return 0 if rule is None else rule - 1


def _cells(line: str) -> list[str]:
    return _CELL.split(line.strip().strip("|").strip())


def _json_keys(output: str) -> Iterator[str]:
    try:
        document = json.loads(output)
    except (ValueError, RecursionError):
        return
    stack: list[object] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield from (str(k) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _unescape(key: str) -> str:
    return key.replace("~1", "/").replace("~0", "~")
