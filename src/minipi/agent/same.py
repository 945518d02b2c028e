"""A result the request already holds is sent once: the rule that points to it instead.

A chat's follow-up reads the file again that an earlier question read; a small model reads
the same file twice in one run, or a range of a file it read whole. Sent again, the text costs
the model its reading a second time (a local engine's prefill: seconds a kilobyte on a small
machine) and buys nothing. The history keeps every result whole (the evidence check traces a
figure to the read of this question); only the request shows a later copy as a pointer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from minipi.agent.types import Rule, RunView
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, ModelRequest

__all__ = ["SAME_RESULT_CHARS", "SameResults"]

SAME_RESULT_CHARS = 200
"""A result whose content is this long or longer, whole in an earlier result of the
request, is sent as a pointer to it (a short one costs less than the pointer)."""


@dataclass
class SameResults(Rule):
    """A tool result whose content (``_content``) is whole in an earlier result that the
    request still holds whole (not an error, not shortened to fit the context) is sent as a
    pointer to that one: the same file read again, unchanged, or a range of it. A file that
    changed in between is another text, so it is sent whole. The pointer names the earlier
    call by its tool and arguments, as the model made it."""

    _pointers: dict[str, FunctionCallOutput] = field(default_factory=dict)
    """Each pointer made, by call_id: the same object every request (a client that caches
    what it rendered by item keeps its rendering)."""
    _long: list[int] = field(default_factory=list)
    """Where the results long enough to point to or from are, in the history read so far."""
    _read: int = 0
    _last: Item | None = None
    """How many items of the history were read for ``_long``, and the last of them: a
    history that grew from it is read from there on (each request reads only what is new)."""

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        items = request.items
        self._scan(items)
        if len(self._long) < 2:
            return request
        calls = {i.call_id: i for i in items if isinstance(i, FunctionCall)}
        sent = list(items)
        first: dict[str, str] = {}  # a result's whole text -> the call that first gave it
        for index in self._long:
            item = items[index]
            assert isinstance(item, FunctionCallOutput)
            if item.is_error or item.call_id in view.shortened:
                continue
            content = _content(item)
            earlier = first.get(item.output) or next(
                (said for text, said in first.items() if content in text), None
            )
            if earlier is None:
                first[item.output] = _named(calls.get(item.call_id))
            else:
                sent[index] = self._pointer(item, earlier)
        if all(a is b for a, b in zip(sent, items, strict=True)):
            return request
        return replace(request, items=tuple(sent))

    def _scan(self, items: Sequence[Item]) -> None:
        """``_long`` for ``items``: from where the last request's history ended, when this
        one grew from it; else from the start."""
        start = self._read
        if not (0 < start <= len(items) and items[start - 1] is self._last):
            start, self._long = 0, []
        for index in range(start, len(items)):
            item = items[index]
            if type(item) is FunctionCallOutput and len(item.output) >= SAME_RESULT_CHARS:
                self._long.append(index)
        self._read = len(items)
        self._last = items[-1] if items else None

    def _pointer(self, item: FunctionCallOutput, earlier: str) -> Item:
        text = f"(unchanged: this text is in the result of {earlier} above)"
        made = self._pointers.get(item.call_id)
        if made is None or made.output != text:
            made = self._pointers[item.call_id] = FunctionCallOutput(item.call_id, text)
        return made


def _content(item: FunctionCallOutput) -> str:
    """The result's content (what its ``details["marks"]`` mark ``content``, up to where a
    cut to fit the context stopped it: a file's text without a notice such as
    ``[truncated: …]`` or ``[output cut: …]``), or its whole text without marks."""
    marks = item.details.get("marks")
    if not isinstance(marks, list):
        return item.output
    cut = item.details.get("cut_at")  # a result cut to fit: its marks stop there
    end = cut if isinstance(cut, int) else len(item.output)
    parts = [
        item.output[m[0] : min(m[1], end)]
        for m in marks
        if isinstance(m, list)
        and len(m) == 3
        and m[2] == "content"
        and isinstance(m[0], int)
        and isinstance(m[1], int)
    ]
    return "".join(parts) if len(parts) == 1 else item.output


def _named(call: FunctionCall | None) -> str:
    """A call as the pointer names it: ``read_file {"path": "notes.txt"}``."""
    if call is None:
        return "an earlier call"
    try:
        arguments = json.dumps(json.loads(call.arguments), ensure_ascii=False)
    except ValueError:
        arguments = call.arguments
    return f"{call.name} {arguments}"
