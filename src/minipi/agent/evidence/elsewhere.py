"""Where a figure is found besides the content of tool results: in a call's ``path``
argument (origin ``path``) and in the user's question (``question``): what makes a claim
``path`` or ``from_question`` rather than ``unsupported`` (``check._judge``)."""

from __future__ import annotations

from collections.abc import Iterator

from minipi.agent.evidence.locate import line_column
from minipi.agent.evidence.match import Hit, Matcher
from minipi.agent.evidence.sources import RunSources
from minipi.agent.evidence.types import Source

__all__ = ["all_hits", "argument_hits", "question_hits"]


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
