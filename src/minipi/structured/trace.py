"""Each field of a structured answer traced to what the tools read.

Principle: a field's value is checked in its field's context, as a figure of a sentence is.
Each leaf (a string, number, boolean or null of the JSON value, at its RFC 6901 pointer) is
read as the claim "<field name>: <value>" (the name of its nearest key, words split at ``_``,
``-`` and case changes) and checked by the evidence check against this question's tool
results (``minipi.evidence.check_evidence``): a figure, date, code or name in it must be in a
read, or recomputed from the reads (``derived``), and the words of its key must not name
another record of its source than its own (``minipi.evidence.context``: an ``orders`` field
holding the ``revenue`` of the read is ``mislabeled``). A string with no figure in it is found
as it is written, whole, in a read. What words cannot tell is ``weak``: a boolean or null
(``true`` is no text a read must hold), an empty string, a figure too small to be told apart
(``minipi.evidence``'s weak claims), a value only in the question.

Statuses: ``supported`` (with its sources: file, JSON Pointer, line and column),
``derived`` (recomputed from the reads; its sources are the terms), ``mislabeled``,
``weak``, ``unsupported``. The answer's verdict is the fields' combined (``verdict_of``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from minipi.evidence.verdict import Verdict

if TYPE_CHECKING:
    from minipi.ai.types import Item
    from minipi.evidence import CheckedClaim, Evidence, Source
    from minipi.reading import Question

__all__ = ["FieldStatus", "FieldTrace", "StructuredOutput", "trace_fields", "verdict_of"]

FieldStatus: TypeAlias = Literal["supported", "derived", "mislabeled", "weak", "unsupported"]

MAX_FIELDS = 200
"""Leaves traced; a value with more is traced up to here and the rest are ``weak``."""


@dataclass(frozen=True, slots=True)
class FieldTrace:
    """One leaf of the value: where it is, what it is, and what backs it."""

    pointer: str
    value: Any
    status: FieldStatus
    sources: tuple[Source, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "pointer": self.pointer,
            "value": self.value,
            "status": self.status,
            "sources": [s.to_json() for s in self.sources],
        }


@dataclass(frozen=True, slots=True)
class StructuredOutput:
    """A structured answer: the JSON ``value``, each leaf's trace, the caller's model built
    from it (``parsed``: a dataclass or pydantic instance; else the value)."""

    value: Any
    fields: tuple[FieldTrace, ...]
    parsed: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "fields": [f.to_json() for f in self.fields]}

    @property
    def unsupported(self) -> tuple[FieldTrace, ...]:
        return tuple(f for f in self.fields if f.status == "unsupported")


def trace_fields(
    value: Any, items: Sequence[Item], question: Question
) -> tuple[tuple[FieldTrace, ...], Evidence]:
    """Each leaf of ``value`` traced against the run that ends ``items`` (module docstring),
    and the evidence of all of them as one check (the sources block shows it)."""
    from minipi.evidence import check_evidence

    leaves = list(_leaves(value, "", ""))
    text, spans = _statement(leaves[:MAX_FIELDS])
    evidence = check_evidence(text, items, question)
    from minipi.evidence.context import mislabeled

    wrong = {c.claim.span for c in mislabeled(text, evidence.claims, items)}
    traces = []
    for number, (pointer, _, leaf) in enumerate(leaves):
        if number >= len(spans):
            traces.append(FieldTrace(pointer, leaf, "weak"))
            continue
        claims = [c for c in evidence.claims if _within(c.claim.span, spans[number])]
        traces.append(_trace(pointer, leaf, claims, wrong, items))
    return tuple(traces), evidence


def verdict_of(fields: Sequence[FieldTrace]) -> Verdict:
    """The fields' verdict combined: ``unbacked`` when one is unsupported, ``weak`` when one
    is mislabeled or weak (or there are none), else ``backed``."""
    statuses = {f.status for f in fields}
    if "unsupported" in statuses:
        return Verdict("unbacked", "unsupported")
    if "mislabeled" in statuses:
        return Verdict("weak", "mislabeled")
    if "weak" in statuses or not fields:
        return Verdict("weak", "weak_claims")
    return Verdict("backed")


def _leaves(value: Any, pointer: str, label: str) -> Iterator[tuple[str, str, Any]]:
    """(pointer, the nearest key's name, leaf) of each leaf of ``value``, in order."""
    if isinstance(value, dict):
        for key, inner in value.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            yield from _leaves(inner, f"{pointer}/{escaped}", str(key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _leaves(inner, f"{pointer}/{index}", label)
    else:
        yield pointer, label, value


_CASE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _statement(leaves: Sequence[tuple[str, str, Any]]) -> tuple[str, list[tuple[int, int]]]:
    """The leaves as one text of clauses "<key words>: <value>;" and each value's span."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for _, label, leaf in leaves:
        words = _CASE.sub(" ", label).replace("_", " ").replace("-", " ").strip()
        head = f"{words}: " if words else ""
        said = leaf if isinstance(leaf, str) else json.dumps(leaf, ensure_ascii=False)
        start = at + len(head)
        spans.append((start, start + len(said)))
        clause = f"{head}{said}\n"
        parts.append(clause)
        at += len(clause)
    return "".join(parts), spans


def _within(span: tuple[int, int], bounds: tuple[int, int]) -> bool:
    return bounds[0] <= span[0] and span[1] <= bounds[1]


def _trace(
    pointer: str,
    leaf: Any,
    claims: list[CheckedClaim],
    wrong: set[tuple[int, int]],
    items: Sequence[Item],
) -> FieldTrace:
    if leaf is None or isinstance(leaf, bool) or leaf == "":
        return FieldTrace(pointer, leaf, "weak")
    if not claims:
        sources = _written(str(leaf), items) if isinstance(leaf, str) else ()
        return FieldTrace(pointer, leaf, "supported" if sources else "unsupported", sources)
    status = _status(claims, wrong)
    sources = tuple(s for c in claims for s in c.sources if s.origin != "question")
    return FieldTrace(pointer, leaf, status, sources if status != "unsupported" else ())


def _status(claims: list[CheckedClaim], wrong: set[tuple[int, int]]) -> FieldStatus:
    statuses = {c.status for c in claims}
    if "unsupported" in statuses:
        return "unsupported"
    if any(c.claim.span in wrong for c in claims):
        return "mislabeled"
    if statuses <= {"weak", "from_question", "path"}:
        return "weak"
    return "derived" if "derived" in statuses else "supported"


def _written(text: str, items: Sequence[Item]) -> tuple[Source, ...]:
    """Where this question's reads hold ``text`` whole (not inside a longer word)."""
    from minipi.evidence.locate import Locator
    from minipi.evidence.match import Hit
    from minipi.evidence.sources import collect_sources

    pattern = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
    locator = Locator()
    found = []
    for output in collect_sources(items).outputs:
        hit = pattern.search(output.text) if output.question is None else None
        if hit is not None:
            found.append(locator.source(output, Hit(hit.start(), hit.end(), "exact"), "content"))
    return tuple(found[:3])
