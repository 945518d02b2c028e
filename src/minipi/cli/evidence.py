"""The sources block shown after an answer: each figure of the answer and where a tool read it.

    [依据] 3/3 个数字可追溯
      2026-09-06  reports/daily-2026-09-06.json  /date          第 2 行
      128         reports/daily-2026-09-06.json  /orders        第 3 行

Rendered from the ``"evidence"`` JSON object (``Evidence.to_json()``), so a live run and a
saved session (``minipi sessions show``) show it alike. Unsupported figures come first and
are marked; a plain ``x`` replaces ``✗`` when the output is not a terminal or ``NO_COLOR`` is
set. Everything from the answer or a tool is shown through ``safe``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minipi.cli.terminal import columns, pad, safe
from minipi.cli.words import Words

__all__ = ["evidence_lines", "traced"]

_CROSS = "\x1b[31m✗\x1b[0m"  # red on a terminal that allows colour
_ORDER = {"unsupported": 0, "path": 1, "from_question": 2, "weak": 3}
_NOT_A_SOURCE = ("path", "from_question", "weak")


def traced(evidence: Mapping[str, Any]) -> tuple[int, int]:
    """(figures traced, figures that needed a source): ``weak``, ``path`` and
    ``from_question`` claims are shown but counted as neither."""
    supported, unsupported = int(evidence["supported"]), int(evidence["unsupported"])
    return supported, supported + unsupported


def evidence_lines(evidence: Mapping[str, Any], words: Words, *, fancy: bool) -> list[str]:
    """The block's lines: a heading, then one line per claim (unsupported first)."""
    claims: Sequence[Mapping[str, Any]] = evidence["claims"]
    cut = evidence.get("unchecked_from")  # a runaway answer is checked up to a bound
    tail = [words("evidence_unchecked", at=cut)] if cut is not None else []
    if not claims:
        return [words("evidence_none"), *tail]
    done, wanted = traced(evidence)
    head = words("evidence", done=done, wanted=wanted)
    if not evidence["tool_results"]:
        head += words("evidence_no_results")
    ordered = sorted(claims, key=lambda c: _ORDER.get(str(c["status"]), 9))
    # one row per distinct line: a guided answer names its file after each fact it cites
    rows = [list(r) for r in dict.fromkeys(tuple(_cells(c, words, fancy)) for c in ordered)]
    widths = [max((columns(r[i]) for r in rows if len(r) > i + 1), default=0) for i in range(3)]
    return [head, *("  " + _joined(row, widths) for row in rows), *tail]


def _joined(row: list[str], widths: list[int]) -> str:
    """The cells, each but the last padded to its column."""
    padded = [pad(cell, widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
    return "  ".join(padded).rstrip()


def _cells(claim: Mapping[str, Any], words: Words, fancy: bool) -> list[str]:
    text = safe(str(claim["text"]))
    status = str(claim["status"])
    sources: Sequence[Mapping[str, Any]] = claim["sources"]
    if status == "unsupported":
        mark = f"{_CROSS if fancy else 'x'} {words('evidence_unsupported')}"
        near = claim.get("nearest")
        if isinstance(near, Mapping):
            where = safe(str(near["source"].get("path") or near["source"].get("tool") or ""))
            mark += words("evidence_nearest", value=safe(str(near["value"])), where=where)
        return [text, mark]
    if status in _NOT_A_SOURCE:
        named = safe(str(sources[0].get("path") or "")) if sources and status == "path" else ""
        return [text, words("evidence_" + status, path=named)]
    first = sources[0] if sources else {}
    cells = [text, safe(str(first.get("path") or first.get("tool") or "?"))]
    cells.append(safe(str(first.get("pointer") or "")))
    where = _position(first, words)
    if len(sources) > 1:
        where += words("evidence_more", n=len(sources) - 1)
    if status != "exact":
        where += "  " + words("status_" + status)
    return [*cells, where.strip()]


def _position(source: Mapping[str, Any], words: Words) -> str:
    line, column = source.get("line"), source.get("column")
    if line is None:
        return ""
    if source.get("pointer") or not column:
        return words("line", n=line)
    return words("line_column", n=line, column=column)
