"""The data of an evidence check: figures, claims, sources, statuses, and the whole result.

``Evidence.to_json()`` is exactly the ``"evidence"`` object of EVIDENCE.md (what ``--json``'s
``run_end``, traces and sessions carry). The figure types (``NumberFigure`` ...) are what the
matcher compares; they are public so that a display can say more than the JSON does (an
interval), but they are not part of the JSON; a nearest value is, as ``"nearest"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, TypeAlias

__all__ = [
    "SUPPORTED",
    "CheckedClaim",
    "Claim",
    "ClaimKind",
    "DateFigure",
    "Evidence",
    "Figure",
    "Found",
    "Nearest",
    "NumberFigure",
    "Origin",
    "Source",
    "Status",
    "TextFigure",
    "TimeFigure",
]

ClaimKind: TypeAlias = Literal["number", "date", "time", "identifier", "quote", "path", "change"]
Status: TypeAlias = Literal[
    "exact",
    "normalized",
    "rounded",
    "derived",
    "ambiguous",
    "weak",
    "path",
    "from_question",
    "unsupported",
]
Origin: TypeAlias = Literal["content", "path", "question"]

SUPPORTED: frozenset[Status] = frozenset(("exact", "normalized", "rounded", "derived", "ambiguous"))
"""The statuses that count as support (EVIDENCE.md)."""


@dataclass(frozen=True, slots=True)
class NumberFigure:
    """A number as the answer wrote it.

    ``value`` is the figure's value with its magnitude applied (``9.6k`` -> 9600); ``literal``
    is the figure's own text from sign to magnitude, units left out (``9,600``, ``9.6k``,
    ``一百二十八``), what an ``exact`` source must show. ``interval`` (lo <= x < hi) is set for
    a scaled or approximate figure; ``decimals`` counts the digits written after the point.
    """

    value: Decimal
    literal: str
    percent: bool = False
    scaled: bool = False
    interval: tuple[Decimal, Decimal] | None = None
    decimals: int = 0


@dataclass(frozen=True, slots=True)
class DateFigure:
    """A date; a component the answer did not write is None (``9月6日`` has no year)."""

    year: int | None
    month: int | None
    day: int | None
    literal: str


@dataclass(frozen=True, slots=True)
class TimeFigure:
    """A time of day (``10:30``, ``10:30:15``, ``10点30分``)."""

    hour: int
    minute: int
    second: int | None
    literal: str


@dataclass(frozen=True, slots=True)
class TextFigure:
    """An identifier (``SKU-0042``) or the text between quotes (``AgentLoop``): ``text``
    NFKC-folded, ``literal`` as the answer wrote it."""

    text: str
    literal: str


Figure: TypeAlias = NumberFigure | DateFigure | TimeFigure | TextFigure


@dataclass(frozen=True, slots=True)
class Found:
    """A claim as a finder sees it, in folded coordinates: ``start``/``end`` of the whole
    claim, ``literal`` the span of the figure's own text (the figure's ``literal`` is replaced
    by the answer's text there)."""

    start: int
    end: int
    kind: ClaimKind
    value: str
    unit: str | None
    figure: Figure
    literal: tuple[int, int]
    weak: bool = False


@dataclass(frozen=True, slots=True)
class Claim:
    """One figure of the answer. ``span`` is a 0-based, end-exclusive code-point range of the
    answer as given; ``text`` is the answer's text there (units included)."""

    text: str
    kind: ClaimKind
    value: str
    unit: str | None
    span: tuple[int, int]
    figure: Figure
    weak: bool = False


@dataclass(frozen=True, slots=True)
class Source:
    """Where a claim's figure was found.

    ``path`` names the file a reader would open to check the figure: the file a search hit
    is a line of, the entry a listing shows, the file a move moved (``to``: where it is now),
    else the call's ``path`` argument when it has one (``minipi.evidence.sources``,
    ``Output.named_at``). ``line``/``column`` are 1-based and that file's: ``line`` is the
    file's for a ``read_file`` that started at an ``offset`` and for a search hit (whose
    ``column`` is None: the hit's text is an excerpt of the line); a figure in a name (a
    listed or found path) and a change have no line.

    ``origin`` ``content``: in a tool's output; ``range`` indexes that output (the exact
    ``FunctionCallOutput.output``), ``pointer`` is an RFC 6901 JSON Pointer when the output
    is JSON. ``path``: in a listed path (``range`` indexes the output) or in a call's
    ``path`` argument (``range`` indexes that argument). ``question``: in the user's
    question (``range`` indexes the question). ``text`` is the source's text at ``range``.
    ``question`` is the number (1-based) of the earlier question of the conversation whose
    run made the result; None: this question's (in ``to_json()`` only when set); so is
    ``to``.
    """

    call_id: str | None
    tool: str | None
    path: str | None
    origin: Origin
    pointer: str | None
    line: int | None
    column: int | None
    range: tuple[int, int]
    text: str
    question: int | None = None
    to: str | None = None
    """Where a change left the file ``path`` names (a move's destination)."""

    def to_json(self) -> dict[str, Any]:
        shown = {
            "call_id": self.call_id,
            "tool": self.tool,
            "path": self.path,
            "origin": self.origin,
            "pointer": self.pointer,
            "line": self.line,
            "column": self.column,
            "range": list(self.range),
        }
        if self.question is not None:
            shown["question"] = self.question
        if self.to is not None:
            shown["to"] = self.to
        return shown


@dataclass(frozen=True, slots=True)
class Nearest:
    """The closest value a tool did show, for an ``unsupported`` number (a hint only)."""

    value: str
    source: Source


@dataclass(frozen=True, slots=True)
class CheckedClaim:
    """A claim with its status and sources (all of them when ``ambiguous``, at most
    ``MAX_SOURCES``; for ``derived``, the pieces in order)."""

    claim: Claim
    status: Status
    sources: tuple[Source, ...] = ()
    nearest: Nearest | None = None

    @property
    def supported(self) -> bool:
        return self.status in SUPPORTED

    def to_json(self) -> dict[str, Any]:
        """EVIDENCE.md's claim object; an unsupported number with a near value also has
        ``"nearest": {"value", "source"}`` (a hint, never support)."""
        claim = self.claim
        shown: dict[str, Any] = {
            "text": claim.text,
            "kind": claim.kind,
            "value": claim.value,
            "unit": claim.unit,
            "span": list(claim.span),
            "status": self.status,
            "sources": [source.to_json() for source in self.sources],
        }
        if self.nearest is not None:
            shown["nearest"] = {
                "value": self.nearest.value,
                "source": self.nearest.source.to_json(),
            }
        return shown


@dataclass(frozen=True, slots=True)
class Evidence:
    """The claims of one answer, in answer order, and how many tool results backed them.

    ``supported`` counts the statuses of ``SUPPORTED``; ``unsupported`` counts ``unsupported``
    only (``weak``, ``path`` and ``from_question`` are shown, and are neither).
    ``tool_results`` counts this run's tool results that were not errors. ``unchecked_from``
    is the position of the answer from which no figure was examined (a runaway answer: the
    bounds are in ``claims``), or None when the whole answer was; in ``to_json()`` only when
    set.
    """

    claims: tuple[CheckedClaim, ...]
    tool_results: int
    unchecked_from: int | None = None

    @property
    def supported(self) -> int:
        return sum(1 for c in self.claims if c.supported)

    @property
    def unsupported(self) -> int:
        return sum(1 for c in self.claims if c.status == "unsupported")

    @property
    def examined_all(self) -> bool:
        """Whether every figure of the answer was examined (no bound was reached)."""
        return self.unchecked_from is None

    def unsupported_figures(self, limit: int = 10) -> tuple[str, ...]:
        """The texts of the unsupported claims, each once, in answer order, at most
        ``limit``: what a retry message names."""
        texts = dict.fromkeys(c.claim.text for c in self.claims if c.status == "unsupported")
        return tuple(texts)[:limit]

    def not_supported(self, limit: int = 10) -> tuple[CheckedClaim, ...]:
        """Every claim that is neither supported nor ``weak`` (``unsupported``, ``path``,
        ``from_question``), in answer order, each text once, at most ``limit``: what
        ``require`` refuses and a retry message names."""
        kept: dict[str, CheckedClaim] = {}
        for c in self.claims:
            if not c.supported and c.status != "weak":
                kept.setdefault(c.claim.text, c)
        return tuple(kept.values())[:limit]

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "claims": [claim.to_json() for claim in self.claims],
            "supported": self.supported,
            "unsupported": self.unsupported,
            "tool_results": self.tool_results,
        }
        if self.unchecked_from is not None:
            shown["unchecked_from"] = self.unchecked_from
        return shown
