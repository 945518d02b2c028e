"""Keeping a run inside the model's context window.

Two bounds (RELIABILITY F5):

* every tool output is cut to ``max_tool_output_chars`` (and, when the window is known, to
  what half of the free window can hold), with a notice saying how much was left out and
  how to get the rest;
* before each request the history's size is estimated; when it would not leave
  ``reserve`` tokens for the reply, the oldest tool outputs are replaced by a pointer
  (the call stays, so the transcript stays valid, and the model can call again). The
  outputs of the latest calls are never shortened. If even that is not enough, the run
  ends ``context_exhausted`` before a request that the server would refuse.

Tokens are estimated from UTF-8 bytes: ``bytes * ratio``, where the ratio starts at 1/3
(a safe side for English, about right for Chinese) and is then calibrated from the
server's own count (``usage.input_tokens``) of the previous request, when it reports one.
Shortening only ever grows the set of shortened outputs, so the request prefix stays the
same from one request to the next (the server's prompt cache keeps working).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from minipi.agent.types import End, Note, Rule, RunView
from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolSpec,
)
from minipi.said import Said

__all__ = ["ContextFit", "ContextWindow", "cut_output"]

_ITEM_OVERHEAD = 12  # role/type keys and separators of one message, in bytes
_KEEP = 240  # outputs this short are not worth shortening


def _size(item: Item) -> int:
    if isinstance(item, Message | Reasoning):
        text = item.text
    elif isinstance(item, FunctionCall):
        text = item.name + item.arguments + item.call_id
    else:
        text = item.output + item.call_id
    return len(text.encode("utf-8", "surrogatepass")) + _ITEM_OVERHEAD


def cut_output(content: str, limit: int) -> str:
    """``content`` cut to ``limit`` characters, with a notice, if it is longer."""
    if len(content) <= limit:
        return content
    return (
        f"{content[:limit]}\n[output cut: showing the first {limit} of {len(content)} "
        "characters; ask for a smaller part (read_file offset/limit) to see more]"
    )


@dataclass
class ContextWindow:
    """The token budget of one run, and which old outputs were shortened to keep it."""

    limit: int
    """Tokens the model accepts (prompt + reply)."""
    reserve: int
    """Tokens kept free for the reply."""
    fixed: int = 0
    """Bytes sent with every request besides the history (instructions, tool schemas)."""
    ratio: float = 1 / 3
    """Tokens per byte: 1/3 until the server reports a count."""
    shortened: dict[str, FunctionCallOutput] = field(default_factory=dict)
    """call_id -> the pointer that replaces its output in requests."""

    @classmethod
    def for_run(
        cls, limit: int, reserve: int | None, instructions: str | None, tools: Sequence[ToolSpec]
    ) -> ContextWindow:
        fixed = len((instructions or "").encode()) + sum(
            len(json.dumps([t.name, t.description, t.parameters]).encode()) for t in tools
        )
        return cls(limit, reserve if reserve is not None else max(limit // 8, 256), fixed)

    @property
    def available(self) -> int:
        """Tokens the history may take."""
        return self.limit - self.reserve

    def estimate(self, items: Sequence[Item]) -> int:
        return self._tokens(self._bytes(items))

    def _bytes(self, items: Sequence[Item]) -> int:
        return self.fixed + sum(_size(i) for i in self.view(items))

    def _tokens(self, size: int) -> int:
        return int(size * self.ratio) + 1

    def observe(self, items: Sequence[Item], input_tokens: int) -> None:
        """Calibrate the ratio from the server's count of the request that carried ``items``."""
        sent = self._bytes(items)
        if input_tokens > 0 and sent > 0:
            self.ratio = max(input_tokens / sent, 0.05)

    def output_limit(self) -> int:
        """Characters one new tool output may have: half of the free window at most."""
        return max(int(self.available / 2 / self.ratio / 3), 500)

    def view(self, items: Sequence[Item]) -> list[Item]:
        """``items`` as the next request sends them: shortened outputs replaced."""
        if not self.shortened:
            return list(items)
        return [
            self.shortened.get(i.call_id, i) if isinstance(i, FunctionCallOutput) else i
            for i in items
        ]

    def fit(self, items: Sequence[Item]) -> list[str] | None:
        """Shorten old outputs, oldest first, until ``items`` fit; the call_ids newly
        shortened, or None when they cannot fit even so."""
        size = self._bytes(items)
        if self._tokens(size) <= self.available:
            return []
        names = {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}
        latest = _latest_outputs(items)
        newly: list[str] = []
        for item in items:
            if (
                isinstance(item, FunctionCallOutput)
                and item.call_id not in self.shortened
                and item.call_id not in latest
                and len(item.output) > _KEEP
            ):
                pointer = _pointer(item, names.get(item.call_id, "the tool"))
                self.shortened[item.call_id] = pointer
                newly.append(item.call_id)
                size -= _size(item) - _size(pointer)
                if self._tokens(size) <= self.available:
                    return newly
        return None


def _latest_outputs(items: Sequence[Item]) -> set[str]:
    """The call_ids of the outputs after the model's last reply (not seen by it yet)."""
    latest: set[str] = set()
    for item in reversed(items):
        if not isinstance(item, FunctionCallOutput):
            break
        latest.add(item.call_id)
    return latest


def _pointer(item: FunctionCallOutput, name: str) -> FunctionCallOutput:
    note = (
        f"[shortened to fit the model's context: the {len(item.output)}-character output of "
        f"this {name} call (call_id {item.call_id}) was removed; call {name} again if you "
        "still need it]"
    )
    return FunctionCallOutput(item.call_id, note, is_error=item.is_error, details=item.details)


@dataclass
class ContextFit(Rule):
    """The rule that keeps each request inside the window (None window: no limit known):
    before a request it shortens old outputs (a ``Note`` says which) or ends the run; the
    request carries the history with those outputs replaced; the response calibrates the
    estimate; and ``cut`` bounds each new output."""

    window: ContextWindow | None
    max_output_chars: int

    @classmethod
    def for_run(
        cls,
        limit: int | None,
        reserve: int | None,
        instructions: str | None,
        tools: Sequence[ToolSpec],
        max_output_chars: int,
    ) -> ContextFit:
        window = ContextWindow.for_run(limit, reserve, instructions, tools) if limit else None
        return cls(window, max_output_chars)

    @property
    def shortened(self) -> frozenset[str]:
        """The call_ids whose outputs requests no longer carry."""
        return frozenset(self.window.shortened) if self.window is not None else frozenset()

    def before_request(self, view: RunView) -> End | Note | None:
        """Shorten old outputs so the next request fits; an ``End`` when it cannot."""
        if self.window is None:
            return None
        newly = self.window.fit(view.history)
        if newly is None:
            window = self.window
            return End.saying("context_exhausted", limit=window.limit, reserve=window.reserve)
        if not newly:
            return None
        shown = Said.of("outputs_shortened", count=len(newly), call_ids=", ".join(newly))
        return Note(shown.text(), "context_shortened", shown)

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        """The request's items as sent: shortened outputs replaced."""
        if self.window is None or not self.window.shortened:
            return request
        return replace(request, items=self.window.view(request.items))

    def responded(self, request: ModelRequest, response: ModelResponse) -> None:
        if self.window is not None:
            self.window.observe(request.items, response.usage.input_tokens)

    def cut(self, output: str) -> tuple[str, int | None]:
        """A new tool output, cut to what the window (and the run's cap) can hold, and how
        much of the tool's own text it kept (None: all of it)."""
        limit = self.max_output_chars
        if self.window is not None:
            limit = min(limit, self.window.output_limit())
        return cut_output(output, limit), (limit if len(output) > limit else None)
