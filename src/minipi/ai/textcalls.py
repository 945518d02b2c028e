"""Tool calls written as text (Qwen/Hermes): ``<tool_call>{"name", "arguments"}</tool_call>``.

A local server without a tool-call parser returns these blocks in the assistant's content
instead of native ``tool_calls`` (RELIABILITY D12, "Defaults decided" 3). Both wire decoders
call ``find_text_calls`` on the assistant's own content, and only when the reply has no native
calls and the request offered tools (text is never parsed out of tool outputs, which are not
decoded at all, nor out of ``reasoning_content``):

- a block inside ``<think>…</think>`` is ignored: reasoning is not action;
- a whole block holding a JSON object with a string ``name`` and an object (or JSON-string)
  ``arguments`` is a call; the name is kept as sent (an unregistered one gets the loop's
  ``unknown_tool`` error) and a string ``arguments`` is passed on for the loop to check;
- any other block (not JSON, a key given twice, not an object, no name, no arguments, no
  closing tag) becomes a call named ``invalid_tool_call`` (``INVALID_CALL_NAME``) with the
  block's text as its arguments: the loop answers it with an ``invalid_tool_call`` error that
  shows the expected form and lists the real tools, which nudges the model and counts toward
  the run's budgets, and it can never execute;
- the blocks are cut out of the message text, so text holding a block is never a final answer
  (a reply with calls is not an answer at all); the prose around them is kept.

Each call gets a fresh id (``call_local_…``). How the decoders replay them: on the chat wire
the calls share the message's ``raw``, so the assistant message goes back verbatim, blocks
included, and the tool results follow under the fresh ids; on the Responses wire a
``function_call`` input item is first-class, so the message is replaced by neutral items (its
prose as a message, then one ``function_call`` per block) and the call is not sent twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from minipi.ai.think import strip_think
from minipi.ai.types import new_call_id

__all__ = ["INVALID_CALL_NAME", "TextCall", "TextCalls", "find_text_calls"]

INVALID_CALL_NAME = "invalid_tool_call"
"""The name given to a malformed block's call (no tool has it, so the loop answers an error)."""

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TextCall:
    """One block as a call. ``problem`` says why a block was malformed (None when it was not).

    A call whose name is not among the request's tools is well formed but ``known`` is False.
    """

    call_id: str
    name: str
    arguments: str
    problem: str | None = None
    known: bool = True


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What ``find_text_calls`` found: the message text without its blocks, and the calls."""

    text: str
    calls: tuple[TextCall, ...]


def find_text_calls(text: str, tool_names: Collection[str]) -> TextCalls | None:
    """The ``<tool_call>`` blocks of ``text`` outside ``<think>``, or None when there are none.

    ``tool_names`` are the request's tools; with none, text is never parsed (nothing could be
    called, and a guided reply or plain answer may legitimately mention the tag).
    """
    if not tool_names or _OPEN not in text:
        return None
    visible = strip_think(text)
    if _OPEN not in visible:
        return None
    calls = tuple(_call(m.group(1), bool(m.group(2)), tool_names) for m in _BLOCK.finditer(visible))
    return TextCalls(_BLOCK.sub("", visible).strip(), calls)


def _call(body: str, closed: bool, tool_names: Collection[str]) -> TextCall:
    content = body.strip()
    if not closed:
        return _invalid(content, f"the block has no closing {_CLOSE} tag")
    try:
        value = json.loads(content, parse_constant=_refuse_constant, object_pairs_hook=_unique)
    except (ValueError, RecursionError) as error:
        return _invalid(content, f"the block is not valid JSON ({_short(error)})")
    if not isinstance(value, dict):
        return _invalid(content, "the block is not a JSON object")
    name, arguments = value.get("name"), value.get("arguments")
    if not isinstance(name, str) or not name:
        return _invalid(content, 'the block has no string "name"')
    if not isinstance(arguments, dict | str):
        return _invalid(content, '"arguments" is neither an object nor a JSON string')
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return TextCall(new_call_id(), name, arguments, known=name in tool_names)


def _invalid(content: str, problem: str) -> TextCall:
    return TextCall(new_call_id(), INVALID_CALL_NAME, content, problem, known=False)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different: which of two values for one key counts is
    up to each parser, so a block that repeats one (two names, two paths) is not a call."""
    value = dict(pairs)
    if len(value) != len(pairs):
        raise ValueError("a key appears twice")
    return value


def _short(error: BaseException) -> str:
    return "nested too deeply" if isinstance(error, RecursionError) else str(error)[:80]
