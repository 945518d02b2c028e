"""Reads that disagree: two files of this question give the same field different values.

Principle: when this question's reads hold the field a figure came from (the same keys, the
same sections: ``records.field_of``) in two files with different values, and the figure is
not the value of both, the files disagree on it: two versions of one config, this month's
report and last month's, the production file and the staging one. Which file counts is for
the question to say (it names the file or folder, or a file it names leads there: the
verdict's scope); when it does not, words cannot tell which value the answer should take,
and the answer is not ``backed`` whichever it took.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, since_question
from minipi.evidence.records import field_of, fields
from minipi.evidence.types import CheckedClaim, Source

__all__ = ["MAX_OUTPUT", "conflicting"]

MAX_OUTPUT = 256 * 1024


def conflicting(
    claims: Sequence[CheckedClaim],
    items: Sequence[Item],
    path_of: Callable[[FunctionCall], str | None],
    in_question: Callable[[str], bool],
    by_name: Callable[[str], bool] = lambda path: False,
) -> bool:
    """Whether a supported figure's field has another value in another file of this
    question's reads, and the question does not say its file counts: it names the file
    (``in_question``: the file or its folder, or a file leading there), or a word of it is
    the file's name (``by_name``), and no other file that disagrees by name."""
    reads = _reads(items, path_of)
    for checked in claims:
        if not checked.supported or checked.status == "derived":
            continue
        for source in checked.sources:
            if source.origin == "content" and _disputed(source, reads, in_question, by_name):
                return True
    return False


def _reads(
    items: Sequence[Item], path_of: Callable[[FunctionCall], str | None]
) -> dict[str, tuple[str, str]]:
    """call_id -> (path, text) of this question's successful reads of a file."""
    later = since_question(items)
    paths = {i.call_id: path_of(i) for i in later if isinstance(i, FunctionCall)}
    return {
        i.call_id: (path, i.output)
        for i in later
        if isinstance(i, FunctionCallOutput)
        and not i.is_error
        and len(i.output) <= MAX_OUTPUT
        and (path := paths.get(i.call_id))
    }


def _disputed(
    source: Source,
    reads: dict[str, tuple[str, str]],
    in_question: Callable[[str], bool],
    by_name: Callable[[str], bool],
) -> bool:
    read = reads.get(source.call_id or "")
    if read is None:
        return False
    field = field_of(source, read[1])
    if field is None:
        return False
    named = in_question(read[0]) or by_name(read[0])
    value = source.text.strip("\"'")
    for path, text in reads.values():
        held = fields(text).get(field) if path != read[0] else None
        if held and value not in held and (not named or by_name(path)):
            return True
    return False
