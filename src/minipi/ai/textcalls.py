"""Tool calls written as text: every form small models write when a server has no parser.

A local server without a tool-call parser returns the calls in the assistant's content
instead of native ``tool_calls`` (RELIABILITY D12, "Defaults decided" 3). Both wire decoders
call ``find_text_calls`` on the assistant's own content, and only when the reply has no native
calls and the request offered tools (text is never parsed out of tool outputs, which are not
decoded at all, nor out of ``reasoning_content``). The forms, as llama.cpp's server reads
them (its tagged-JSON and tagged-XML parsers), each taken from real replies
(tests/test_textcalls.py):

- JSON in tags: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``;
- the XML form inside the tags: ``<tool_call><function=NAME><parameter=KEY>VALUE
  </parameter></function></tool_call>`` (a value that reads as a JSON number, boolean, null,
  array or object is that value; any other is a string);
- a fenced block (```` ```json ````, or a bare ```` ``` ````) holding a call object, a list of
  them, or several of them one after another (one fence per call when a reply makes several);
- a bare reply that is such JSON from its first character (``{"name": …}``, ``[{…}, {…}]``,
  also wrapped in a second pair of braces ``{{…}}``: doubled braces are not JSON, so a reply
  that is a call inside them can mean nothing else).

A call object has a string ``name`` and an object (or JSON-string) ``arguments`` (or
``parameters``). Rules:

- anything inside ``<think>…</think>`` is ignored: reasoning is not action;
- in tags, a well-formed call keeps its name as sent (an unregistered one gets the loop's
  ``unknown_tool`` error) and a string ``arguments`` is passed on for the loop to check; any
  other block (not JSON, a key given twice, not an object, no name, no arguments, no closing
  tag) becomes a call named ``invalid_tool_call`` (``INVALID_CALL_NAME``) with the block's text
  as its arguments: the loop answers it with an ``invalid_tool_call`` error that shows the
  expected form and lists the real tools, which nudges the model and counts toward the run's
  budgets, and it can never execute;
- outside tags, JSON is a call only when it has exactly the keys of a call object, or names a
  declared tool: an answer may show JSON (a file's record with a ``name``), and a fence of
  code that is not a call stays text. A fence or bare reply that begins like a call object
  (``{"name": "…"``) but does not parse (cut at the token limit) is an ``invalid_tool_call``:
  a reply that is a call is never shown as an answer;
- the calls' text is cut out of the message, so it is never a final answer (a reply with calls
  is not an answer at all); the prose around it is kept.

Each call gets a fresh id (``call_local_…``). How the decoders replay them: on the chat wire
the calls share the message's ``raw``, so the assistant message goes back verbatim, calls
included, and the tool results follow under the fresh ids; on the Responses wire a
``function_call`` input item is first-class, so the message is replaced by neutral items (its
prose as a message, then one ``function_call`` per call) and the call is not sent twice.
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
"""The name given to a malformed call's text (no tool has it, so the loop answers an error)."""

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json|tool_call)?[ \t]*\n?(.*?)(```|\Z)", re.DOTALL | re.I)
_CALL_START = re.compile(r'\s*(?:\[\s*)?\{\s*\{?\s*"name"\s*:')
_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?(?:</parameter>|\Z)", re.DOTALL)
_CALL_KEYS = ({"name", "arguments"}, {"name", "parameters"})


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call written as text. ``problem`` says why it was malformed (None when it was not).

    A call whose name is not among the request's tools is well formed but ``known`` is False.
    """

    call_id: str
    name: str
    arguments: str
    problem: str | None = None
    known: bool = True


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What ``find_text_calls`` found: the message text without its calls, and the calls."""

    text: str
    calls: tuple[TextCall, ...]


def find_text_calls(text: str, tool_names: Collection[str]) -> TextCalls | None:
    """The calls written in ``text`` outside ``<think>`` (the forms of the module docstring),
    or None when there are none.

    ``tool_names`` are the request's tools; with none, text is never parsed (nothing could be
    called, and a guided reply or plain answer may legitimately mention the tag or show JSON).
    Tags win: a reply holding a ``<tool_call>`` block is read for blocks only.
    """
    if not tool_names:
        return None
    visible = strip_think(text)
    if _OPEN in visible:
        calls = tuple(_block(m[1], bool(m[2]), tool_names) for m in _BLOCK.finditer(visible))
        return TextCalls(_BLOCK.sub("", visible).strip(), calls)
    if "```" in visible:
        return _fenced(visible, tool_names)
    return _bare(visible, tool_names)


def _fenced(visible: str, tool_names: Collection[str]) -> TextCalls | None:
    """The fences of ``visible`` that hold calls, cut out; None when none does."""
    calls: list[TextCall] = []
    kept: list[str] = []
    at = 0
    for match in _FENCE.finditer(visible):
        found = _json_calls(match[1], tool_names)
        if found is None:
            continue
        kept.append(visible[at : match.start()])
        at = match.end()
        calls.extend(found[0])
    if not calls:
        return None
    kept.append(visible[at:])
    return TextCalls("".join(kept).strip(), tuple(calls))


def _bare(visible: str, tool_names: Collection[str]) -> TextCalls | None:
    """A reply that is call JSON from its first character (prose may follow it)."""
    content = visible.strip()
    if not content.startswith(("{", "[")):
        return None
    if content.startswith("{{") and content.endswith("}}"):
        content = content[1:-1]
    found = _json_calls(content, tool_names)
    if found is None:
        return None
    calls, rest = found
    return TextCalls(rest.strip(), tuple(calls))


def _json_calls(content: str, tool_names: Collection[str]) -> tuple[list[TextCall], str] | None:
    """The calls that ``content`` starts with (JSON values one after another) and the text
    after them; None when it holds no call. JSON that begins like a call object but does not
    parse is one invalid call."""
    decoded = _json_values(content)
    if isinstance(decoded, str):
        return [_invalid(content.strip(), decoded)], ""
    values, at = decoded
    objects = [v for value in values for v in (value if isinstance(value, list) else [value])]
    if not objects or not all(_is_call(v, tool_names) for v in objects):
        return None
    calls = [_json_call(v["name"], _arguments(v), tool_names) for v in objects]
    return calls, content[at:]


def _json_values(content: str) -> tuple[list[Any], int] | str:
    """The JSON values at the start of ``content`` and where they end; a problem (str) when
    the first one begins like a call object and does not parse."""
    values: list[Any] = []
    at = _skip(content, 0)
    while at < len(content) and content[at] in "{[":
        try:
            value, at = _DECODER.raw_decode(content, at)
        except (ValueError, RecursionError) as error:
            if values or not _CALL_START.match(content):
                break
            return f"the call is not valid JSON ({_short(error)})"
        values.append(value)
        at = _skip(content, at)
    return values, at


def _skip(content: str, at: int) -> int:
    """The index of the first character at or after ``at`` that is not a space or comma."""
    while at < len(content) and (content[at].isspace() or content[at] == ","):
        at += 1
    return at


def _is_call(value: Any, tool_names: Collection[str]) -> bool:
    """A call object outside tags: exactly a call's keys, or a declared tool's name."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    if not isinstance(_arguments(value), dict | str):
        return False
    return set(value) in _CALL_KEYS or value["name"] in tool_names


def _arguments(value: dict[str, Any]) -> Any:
    return value.get("arguments", value.get("parameters"))


def _block(body: str, closed: bool, tool_names: Collection[str]) -> TextCall:
    """One ``<tool_call>`` block as a call (an invalid one when it is not well formed)."""
    content = body.strip()
    if not closed:
        return _invalid(content, f"the block has no closing {_CLOSE} tag")
    function = _FUNCTION.fullmatch(content)
    if function is not None:
        return _xml_call(function[1], function[2], tool_names)
    try:
        value = json.loads(content, parse_constant=_refuse_constant, object_pairs_hook=_unique)
    except (ValueError, RecursionError) as error:
        return _invalid(content, f"the block is not valid JSON ({_short(error)})")
    if not isinstance(value, dict):
        return _invalid(content, "the block is not a JSON object")
    name, arguments = value.get("name"), _arguments(value)
    if not isinstance(name, str) or not name:
        return _invalid(content, 'the block has no string "name"')
    if not isinstance(arguments, dict | str):
        return _invalid(content, '"arguments" is neither an object nor a JSON string')
    return _json_call(name, arguments, tool_names)


def _xml_call(name: str, body: str, tool_names: Collection[str]) -> TextCall:
    """The XML form ``<function=NAME><parameter=KEY>VALUE</parameter>…`` as a call."""
    arguments = {key: _xml_value(value) for key, value in _PARAMETER.findall(body)}
    return _json_call(name, arguments, tool_names)


def _xml_value(text: str) -> Any:
    """A parameter's text: a JSON number, boolean, null, array or object as that value,
    anything else as the string it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return text if isinstance(value, str) else value


def _json_call(name: str, arguments: dict[str, Any] | str, tool_names: Collection[str]) -> TextCall:
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


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_unique)


def _short(error: BaseException) -> str:
    return "nested too deeply" if isinstance(error, RecursionError) else str(error)[:80]
