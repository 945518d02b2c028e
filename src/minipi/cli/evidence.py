"""The sources block shown after an answer: each figure of the answer and where a tool read it.

    [依据] 3/3 个数字可追溯
      2026-09-06  reports/daily-2026-09-06.json:2  /date
      128         reports/daily-2026-09-06.json:3  /orders

Rendered from the ``"evidence"`` JSON object (``Evidence.to_json()``), so a live run and a
saved session (``minipi sessions show``) show it alike. Every block begins with its heading,
in the answer's language (the words tables): the figures traced of those that needed a
source, and how many more are shown but not counted. Every figure the answer states is
shown, one row each, in the answer's order, unsupported ones first and marked; a ``weak``
figure (too common to count), one only in a file name, one from the question, with what it
is instead of a source.

A row names the file a reader would open to check the figure (``Source.path``): a read's
``file:line`` and JSON pointer (``file:line:column`` in text that is no JSON), a search hit's
``file:line``, a listed or found file's path, a move's ``old → new`` path; a source that
names no file shows its tool. ``-v`` lists every source of a figure found in several places.
A plain ``x`` replaces ``✗`` when the output is not a terminal or ``NO_COLOR`` is set. On a
terminal every line of minipi's blocks begins with ``MARK``. Everything from the answer or a
tool is shown through ``safe``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minipi.cli.terminal import columns, pad, safe
from minipi.cli.words import Words

__all__ = ["MARK", "cited_lines", "evidence_lines", "marked_text", "traced"]

MARK = "▌"
"""What begins each line of minipi's own blocks on a terminal, where the answer (stdout) and
the blocks (stderr) mix: model text shown there has it escaped (``marked_text``), so no
answer can print a line that looks like one of minipi's."""

_CROSS = "\x1b[31m✗\x1b[0m"  # red on a terminal that allows colour
_NOT_A_SOURCE = ("path", "from_question", "weak")
"""Statuses shown with what they are instead of a source: neither support nor a fault."""


def traced(evidence: Mapping[str, Any]) -> tuple[int, int]:
    """(figures traced, figures that needed a source): ``weak``, ``path`` and
    ``from_question`` claims are shown but counted as neither."""
    supported, unsupported = int(evidence["supported"]), int(evidence["unsupported"])
    return supported, supported + unsupported


def marked_text(text: str) -> str:
    """Model or file text for a terminal that also shows minipi's blocks: ``MARK`` escaped."""
    return text.replace(MARK, "\\u258c")


def evidence_lines(
    evidence: Mapping[str, Any],
    words: Words,
    *,
    fancy: bool,
    verbose: bool = False,
    marked: bool = False,
) -> list[str]:
    """The block's lines: a heading, then one row per distinct claim (unsupported first,
    then in the answer's order), every claim shown; with ``verbose``, a row more for each
    further source of a claim; each line begun with ``MARK`` when ``marked`` (a terminal)."""
    claims: Sequence[Mapping[str, Any]] = evidence["claims"]
    ordered = sorted(claims, key=lambda c: str(c["status"]) != "unsupported")  # stable
    # one row per distinct line: a figure said twice is one row
    rows: dict[tuple[str, ...], tuple[str, list[list[str]]]] = {}
    for claim in ordered:
        cells = _cells(claim, words, fancy)
        more = _more_sources(claim) if verbose else []
        rows.setdefault(tuple(cells), (str(claim["status"]), [cells, *more]))
    tail = _tail(evidence.get("unchecked_from"), words)
    if not rows:
        return _marked([words("evidence_none"), *tail], marked)
    head = _head([status for status, _ in rows.values()], bool(evidence["tool_results"]), words)
    lines = _rows([row for _, claim_rows in rows.values() for row in claim_rows])
    return _marked([head, *lines, *tail], marked)


def _rows(rows: list[list[str]]) -> list[str]:
    """The rows as lines, each cell but the last padded to its column."""
    widths = [max((columns(r[i]) for r in rows if len(r) > i + 1), default=0) for i in range(3)]
    return ["  " + _joined(row, widths) for row in rows]


def _head(statuses: list[str], any_results: bool, words: Words) -> str:
    """The heading: of the rows (``statuses``, one a row), the supported ones of those that
    needed a source, and how many are shown but not counted (weak, path, from_question)."""
    wanted = sum(1 for status in statuses if status not in _NOT_A_SOURCE)
    done = wanted - statuses.count("unsupported")
    uncounted = len(statuses) - wanted
    if not wanted:
        head = words("evidence_all_uncounted", n=uncounted)
    else:
        head = words("evidence", done=done, wanted=wanted)
        head += words("evidence_uncounted", n=uncounted) if uncounted else ""
    return head if any_results else head + words("evidence_no_results")


def _tail(cut: Any, words: Words) -> list[str]:
    """Where checking stopped (a runaway answer)."""
    return [words("evidence_unchecked", at=cut)] if cut is not None else []


def cited_lines(facts: Sequence[str], words: Words, *, marked: bool = False) -> list[str]:
    """The facts minipi cited under an answer (guided mode), as minipi's own block."""
    if not facts:
        return []
    rows = ("  " + safe(one) for one in facts)
    return _marked([words("cited", n=len(facts)), *rows], marked)


def _marked(lines: list[str], marked: bool) -> list[str]:
    return [f"{MARK}{line}" for line in lines] if marked else lines


def _joined(row: list[str], widths: list[int]) -> str:
    """The cells, each but the last padded to its column."""
    padded = [pad(cell, widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
    return "  ".join(padded).rstrip()


def _cells(claim: Mapping[str, Any], words: Words, fancy: bool) -> list[str]:
    text = safe(str(claim["text"]))
    status = str(claim["status"])
    sources: Sequence[Mapping[str, Any]] = claim["sources"]
    if status == "unsupported":
        return [text, _unsupported(claim, words, fancy)]
    if status in _NOT_A_SOURCE:
        named = safe(str(sources[0].get("path") or "")) if sources and status == "path" else ""
        return [text, words("evidence_" + status, path=named)]
    return [text, *_source_cells(status, sources, words)]


def _more_sources(claim: Mapping[str, Any]) -> list[list[str]]:
    """A row for each source of a supported claim after its first (``-v``)."""
    if str(claim["status"]) in (*_NOT_A_SOURCE, "unsupported"):
        return []
    further: Sequence[Mapping[str, Any]] = claim["sources"][1:]
    return [["", _where(source), safe(str(source.get("pointer") or ""))] for source in further]


def _unsupported(claim: Mapping[str, Any], words: Words, fancy: bool) -> str:
    """The mark of a claim no source backs, with the nearest value found when there is one."""
    mark = f"{_CROSS if fancy else 'x'} {words('evidence_unsupported')}"
    near = claim.get("nearest")
    if isinstance(near, Mapping):
        where = _where(near["source"])
        mark += words("evidence_nearest", value=safe(str(near["value"])), where=where)
    return mark


def _source_cells(status: str, sources: Sequence[Mapping[str, Any]], words: Words) -> list[str]:
    """Where the first source is, its pointer, and a note (how many more; how it matched)."""
    first = sources[0] if sources else {}
    note = words("evidence_more", n=len(sources) - 1) if len(sources) > 1 else ""
    if status != "exact":
        note += "  " + words("status_" + status)
    return [_where(first), safe(str(first.get("pointer") or "")), note.strip()]


def _where(source: Mapping[str, Any]) -> str:
    """The file a source names, with its line (``Source``): ``old → new`` for a move; the
    tool when it names no file."""
    path, to = source.get("path"), source.get("to")
    if path and to:
        return f"{safe(str(path))} → {safe(str(to))}"
    return safe(str(path or source.get("tool") or "?")) + _position(source)


def _position(source: Mapping[str, Any]) -> str:
    """``:line`` (``:line:column`` in text that is no JSON), or nothing."""
    line, column = source.get("line"), source.get("column")
    if line is None:
        return ""
    if source.get("pointer") or not column:
        return f":{line}"
    return f":{line}:{column}"
