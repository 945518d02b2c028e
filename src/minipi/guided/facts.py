"""The facts a guided answer may cite: verbatim pieces of this conversation's tool results.

``guided_facts`` picks them (a JSON leaf as ``key: value``, a text line, a listed path; ranked
by what the question asks for, ``guided_rank``; the newest results' content first, paths last,
bounded); ``digit_literals`` are the figures an answer in a digits form may copy. The grammar
that offers them is ``guided_grammar``'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from minipi.ai.types import Item

if TYPE_CHECKING:
    from minipi.evidence.sources import Output
from minipi.guided.rank import Question, rank_facts

__all__ = ["FACT_CHARS", "MAX_FACTS", "Facts", "digit_literals", "guided_facts"]


MAX_FACTS = 200
"""At most this many facts are offered: the newest results' content first, paths last."""
FACT_CHARS = 80
"""A longer piece is cut (at a token boundary, marked ``…``), so a grammar stays small."""

_GLUE = frozenset("0123456789０１２３４５６７８９〇零一二两三四五六七八九十百千万亿._,:/'-")
_TOKEN = re.compile(r"[A-Za-z0-9_０-９]+(?:[.,:/\-][A-Za-z0-9_０-９]+)*")


class _Verbatim(str):
    """A JSON number as the document wrote it (``9600``, ``1.50``, ``1e3``)."""


@dataclass(frozen=True, slots=True)
class Facts:
    """The facts offered to an answer, in the order an answer cites them: ``content`` (file
    text, JSON leaves, other tools' output), then ``paths`` (listed paths). The first pick
    comes from the ``leading`` first facts (those that share a word with the question), or from
    all of ``content`` when none does, or from all when there is no content: offered
    everything, a tiny model picks the path it has seen most, or a line of the wrong file, over
    the fact the question is about. Only the ``bearing`` first content facts (those that bear
    on the question, ``guided_rank.Ranked``; all when 0) may be cited (``citable``); the others
    stay offered to a digits answer. ``origins``: the file a content fact was read from."""

    content: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    leading: int = 0
    origins: Mapping[str, str] = field(default_factory=dict)
    bearing: int = 0

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.content, *self.paths)

    @property
    def citable(self) -> tuple[str, ...]:
        """What an answer may cite: the ``bearing`` first content facts (all when 0), then
        the paths."""
        return (*self.content[: self.bearing or len(self.content)], *self.paths)


def guided_facts(
    items: Sequence[Item], *, limit: int = MAX_FACTS, width: int = FACT_CHARS
) -> Facts:
    """The facts an answer may cite: verbatim pieces of this run's tool results.

    The run and how each output splits into content and paths are the evidence check's
    (``minipi.evidence.sources``): a JSON document gives its scalar leaves as
    ``key: value`` (the value as written; a leaf whose text is not in the document, as a
    string with escapes, is left out), other content its non-blank lines, a listing its
    paths. Each fact once (where it was seen last), cut to ``width``. Order: content that
    bears more on the question first (``guided_rank.rank_facts``: shared words, the files
    it names, the kind of value it asks for, the largest or smallest row), then the newest
    result's first; then the paths, newest first; at most ``limit`` in all (the
    paths go first)."""
    from minipi.evidence.sources import collect_sources  # loaded by the check anyway

    run = collect_sources(items)
    content: dict[str, str | None] = {}
    paths: dict[str, None] = {}
    for output in _newest_first(run.outputs):
        origin_path = output.path if output.tool == "read_file" else None
        for fact, origin in _facts(output.document, output.text, output.regions, width):
            if origin == "content":
                content.setdefault(fact, origin_path)
            else:
                paths.setdefault(fact, None)
    ranked = rank_facts(tuple(content), content, Question.of(run.question or ""))
    kept, bearing = ranked.facts[:limit], min(ranked.bearing, limit)
    leading = min(ranked.leading, bearing or limit)
    origins = {fact: path for fact in kept if (path := content[fact]) is not None}
    return Facts(kept, tuple(paths)[: limit - len(kept)], leading, origins, bearing)


def _newest_first(outputs: Sequence[Output]) -> list[Output]:
    """This question's results newest first, then each earlier question's (the newest
    question first), each newest first."""
    order = sorted(
        range(len(outputs)),
        key=lambda i: (outputs[i].question is not None, -(outputs[i].question or 0), -i),
    )
    return [outputs[i] for i in order]


def _facts(
    document: str | None, text: str, regions: Sequence[tuple[int, int, str]], width: int
) -> Iterator[tuple[str, str]]:
    """The non-empty facts of one output, each cut to ``width``, with their origin."""
    for piece, origin in _pieces(document, text, regions):
        fact = _cut(piece, width)
        if fact:
            yield fact, origin


def _pieces(
    document: str | None, text: str, regions: Sequence[tuple[int, int, str]]
) -> Iterator[tuple[str, str]]:
    leaves = _json_leaves(document) if document is not None else None
    if leaves is not None:
        yield from ((leaf, "content") for leaf in leaves)
        return
    for start, end, origin in regions:
        for line in text[start:end].splitlines():
            yield line, origin


def _json_leaves(document: str) -> list[str] | None:
    """``key: value`` for each scalar of a JSON object or array (an array's items under the
    array's key), in document order; None when the document is not such JSON."""
    try:
        value = json.loads(document, parse_int=_Verbatim, parse_float=_Verbatim)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | list):
        return None
    leaves = (_leaf(key, node, document) for key, node in _scalars(value))
    return [leaf for leaf in leaves if leaf is not None]


def _scalars(value: Any) -> Iterator[tuple[str | None, Any]]:
    """Each scalar of ``value`` with its key (an array's items under the array's key),
    depth-first, in order, without recursion (a deep document is no error)."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((key, item) for item in reversed(node))
        else:
            yield key, node


def _leaf(key: str | None, node: Any, document: str) -> str | None:
    """``key: value`` as written in ``document``; None when its text is not there."""
    text = node if isinstance(node, str) else json.dumps(node)
    if not text or text not in document or (key is not None and key not in document):
        return None
    return text if key is None else f"{key}: {text}"


def _cut(piece: str, width: int) -> str:
    """``piece`` stripped, or its first ``width`` characters ending between two tokens
    (a number is never cut in two) and marked ``…``; "" when no such end exists."""
    piece = piece.strip()
    if len(piece) <= width:
        return piece
    end = width
    while end > 0 and _glued(piece[end - 1]) and _glued(piece[end]):
        end -= 1
    head = piece[:end].rstrip()
    return f"{head}…" if head else ""


def _glued(char: str) -> bool:
    """A character of a number or identifier token: a cut must not fall between two."""
    return (char.isascii() and char.isalnum()) or char in _GLUE


def digit_literals(facts: Sequence[str]) -> tuple[str, ...]:
    """The tokens with a digit in ``facts`` (``2026-09-06``, ``9600``, ``step3.txt``), each
    once, in order: what the digits of a ``digits`` answer may be copied from."""
    found = (m.group() for fact in facts for m in _TOKEN.finditer(fact))
    return tuple(dict.fromkeys(t for t in found if any(c.isdigit() for c in t)))
