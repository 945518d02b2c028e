"""Tool calls written as text, accepted only as the model's own decision.

A local server without a tool-call parser returns the calls in the assistant's content
instead of native ``tool_calls`` (RELIABILITY D12, "Defaults decided" 3). Both wire decoders
call ``find_text_calls`` on the reply's own content (never on ``reasoning_content`` nor on a
tool output), only when the reply has no native calls and the request offered tools, and
hand it the request's items as the conversation. Text that looks like a call is often none:
a file the model quotes, a JSON record, a snippet or a tag an answer shows. So text is a
call only when the reply can be nothing but the model's decision (the strict reading that
ollama's and hermes-agent's parsers settled on); all three rules live here:

1. **Alone.** Outside ``<think>…</think>`` the reply is the call(s) and nothing else (white
   space and call markup only). Prose before, between or after them makes the whole reply
   an answer, shown as written: an answer may show JSON, tags or code. So does an opening
   tag never closed before a sentence (``<tool_call> is the tag…``): a call cut off
   begins as JSON or the XML form do.
2. **Not quoted.** No call of it is held by a tool result of the conversation: neither its
   text (white space aside) nor a call of the same name and arguments in any form below (a
   file read, a search hit, a page fetched). Such a reply repeats a quotation; it is text.
3. **From a server without native calls.** Once the conversation holds a call the server
   returned natively (``native_call``), the server has a parser: text from it is text.

The forms, as llama.cpp's server reads them (its tagged-JSON and tagged-XML parsers), each
taken from real replies (tests/test_textcalls.py):

- JSON in tags: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``;
- the XML form inside the tags: ``<tool_call><function=NAME><parameter=KEY>VALUE
  </parameter></function></tool_call>`` (a value that reads as a JSON number, boolean, null,
  array or object is that value; any other is a string);
- a fenced block (```` ```json ````, or a bare ```` ``` ````) holding a call object, a list of
  them, or several of them one after another (one fence per call when a reply makes several);
- a bare reply that is such JSON (``{"name": …}``, ``[{…}, {…}]``, also wrapped in a second
  pair of braces ``{{…}}``: doubled braces are not JSON, so a reply that is a call inside
  them can mean nothing else).

A call object has a string ``name`` and an object (or JSON-string) ``arguments`` (or
``parameters``). Within a reply that is calls alone:

- in tags, a well-formed call keeps its name as sent (an unregistered one gets the loop's
  ``unknown_tool`` error) and a string ``arguments`` is passed on for the loop to check; any
  other block (not JSON, a key given twice, not an object, no name, no arguments, no closing
  tag) becomes a call named ``invalid_tool_call`` (``INVALID_CALL_NAME``) with the block's text
  as its arguments: the loop answers it with an ``invalid_tool_call`` error that shows the
  expected form and lists the real tools, which nudges the model and counts toward the run's
  budgets, and it can never execute;
- outside tags, JSON is a call only when it has exactly the keys of a call object, or names a
  declared tool: a fence of a record or of code is an answer. A fence or bare reply that
  begins like a call object (``{"name": "…"``) but does not parse (cut at the token limit) is
  an ``invalid_tool_call``: a reply that is a call is never shown as an answer.

Each call gets a fresh id (``call_local_…``). How the decoders replay them: on the chat wire
the calls share the message's ``raw``, so the assistant message goes back verbatim, calls
included, and the tool results follow under the fresh ids; on the Responses wire a
``function_call`` input item is first-class, so the message is replaced by one neutral
``function_call`` per call and the call is not sent twice.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from minipi.ai.think import strip_think
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, new_call_id

__all__ = [
    "INVALID_CALL_NAME",
    "TextCall",
    "TextCalls",
    "find_text_calls",
    "native_call",
    "quoted_call",
]

INVALID_CALL_NAME = "invalid_tool_call"
"""The name given to a malformed call's text (no tool has it, so the loop answers an error)."""

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json|tool_call)?[ \t]*\n?(.*?)(```|\Z)", re.DOTALL | re.I)
_CALL_START = re.compile(r'\s*(?:\[\s*)?\{\s*\{?\s*"name"\s*:')
_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?(?:</parameter>|\Z)", re.DOTALL)
_CALL_KEYS = ({"name", "arguments"}, {"name", "parameters"})
_MARKUP = re.compile(r"(?:\s|</?tool_call>)*")
"""What may stand beside the calls of a reply that is calls alone."""
_HELD_OBJECT = re.compile(r'\{\s*"(?:name"\s*:\s*"|arguments"\s*:|parameters"\s*:)')
"""Where a call object may begin in a tool output (its first key a call's)."""
_HELD_SCAN, _HELD_SIZE = 512, 8192


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call written as text. ``problem`` says why it was malformed (None when it was not).

    A call whose name is not among the request's tools is well formed but ``known`` is False.
    ``written`` is a well-formed call's own text as the reply has it (a block's content, or
    the JSON), what a quotation would repeat.
    """

    call_id: str
    name: str
    arguments: str
    problem: str | None = None
    known: bool = True
    written: str = ""


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What ``find_text_calls`` found: the calls a reply is (it holds nothing else)."""

    calls: tuple[TextCall, ...]


def find_text_calls(
    text: str, tool_names: Collection[str], history: Sequence[Item] = ()
) -> TextCalls | None:
    """The calls ``text`` is (the forms and rules of the module docstring), or None when it
    is an answer: not calls alone outside ``<think>``, a quotation of a tool result in
    ``history``, or written after the server called tools natively in ``history``.

    ``tool_names`` are the request's tools; with none, text is never parsed (nothing could be
    called, and a guided reply or plain answer may legitimately mention the tag or show JSON).
    ``history`` is the conversation the reply answers (the request's items).
    """
    if not tool_names:
        return None
    calls = _alone(strip_think(text), tool_names)
    if not calls or any(native_call(item) for item in history) or _quoted(calls, history):
        return None
    return TextCalls(calls)


def native_call(item: Item) -> bool:
    """``item`` is a call the server returned natively: its ``raw`` is the wire's own call
    record (a Responses ``function_call`` item, or a chat message with ``tool_calls``). A call
    read from text has none (Responses) or shares a message without ``tool_calls`` (chat)."""
    if not isinstance(item, FunctionCall) or item.raw is None:
        return False
    return item.raw.get("type") == "function_call" or bool(item.raw.get("tool_calls"))


def _alone(visible: str, tool_names: Collection[str]) -> tuple[TextCall, ...] | None:
    """The calls ``visible`` is made of, with nothing but markup beside them; else None.
    Tags win: a reply holding a ``<tool_call>`` is read for blocks only."""
    if _OPEN in visible:
        blocks = list(_BLOCK.finditer(visible))
        if not _MARKUP.fullmatch(_BLOCK.sub("", visible)) or any(map(_mention, blocks)):
            return None  # prose beside the blocks, or a tag an answer mentions
        return tuple(_block(m[1], bool(m[2]), tool_names) for m in blocks)
    if "```" in visible:
        return _fenced(visible, tool_names)
    return _bare(visible, tool_names)


def _mention(block: re.Match[str]) -> bool:
    """A tag opened and never closed, before a sentence (not JSON nor the XML form, which
    a cut-off call begins with): the tag mentioned in prose, not a call."""
    content = block[1].lstrip()
    return not block[2] and bool(content) and content[0] not in "{[<"


def _fenced(visible: str, tool_names: Collection[str]) -> tuple[TextCall, ...] | None:
    """The calls of a reply made of fences that each hold calls; None for any other."""
    calls: list[TextCall] = []
    at = 0
    for match in _FENCE.finditer(visible):
        found = _json_calls(match[1], tool_names)
        if found is None or not _MARKUP.fullmatch(visible[at : match.start()]):
            return None
        calls.extend(found)
        at = match.end()
    return tuple(calls) if calls and _MARKUP.fullmatch(visible[at:]) else None


def _bare(visible: str, tool_names: Collection[str]) -> tuple[TextCall, ...] | None:
    """The calls of a reply that is call JSON from its first character to its last."""
    content = visible.strip()
    if not content.startswith(("{", "[")):
        return None
    if content.startswith("{{") and content.endswith("}}"):
        content = content[1:-1]
    found = _json_calls(content, tool_names)
    return None if found is None else tuple(found)


def _json_calls(content: str, tool_names: Collection[str]) -> list[TextCall] | None:
    """The calls ``content`` is (JSON values one after another, then markup only); None
    when it is anything else. JSON that begins like a call object but does not parse is one
    invalid call."""
    decoded = _json_values(content)
    if isinstance(decoded, str):
        return [_invalid(content.strip(), decoded)]
    values, at = decoded
    if not values or not _MARKUP.fullmatch(content, at):
        return None
    calls: list[TextCall] = []
    for value, written in values:
        objects = value if isinstance(value, list) else [value]
        if not objects or not all(_is_call(v, tool_names) for v in objects):
            return None
        calls.extend(_json_call(v["name"], _arguments(v), tool_names, written) for v in objects)
    return calls


def _json_values(content: str) -> tuple[list[tuple[Any, str]], int] | str:
    """The JSON values at the start of ``content``, each with its text, and where they end;
    a problem (str) when the first one begins like a call object and does not parse."""
    values: list[tuple[Any, str]] = []
    at = _skip(content, 0)
    while at < len(content) and content[at] in "{[":
        try:
            value, end = _DECODER.raw_decode(content, at)
        except (ValueError, RecursionError) as error:
            if values or not _CALL_START.match(content):
                break
            return f"the call is not valid JSON ({_short(error)})"
        values.append((value, content[at:end]))
        at = _skip(content, end)
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
        return _xml_call(function[1], function[2], tool_names, content)
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
    return _json_call(name, arguments, tool_names, content)


def _xml_call(name: str, body: str, tool_names: Collection[str], written: str) -> TextCall:
    """The XML form ``<function=NAME><parameter=KEY>VALUE</parameter>…`` as a call."""
    arguments = {key: _xml_value(value) for key, value in _PARAMETER.findall(body)}
    return _json_call(name, arguments, tool_names, written)


def _xml_value(text: str) -> Any:
    """A parameter's text: a JSON number, boolean, null, array or object as that value,
    anything else as the string it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return text if isinstance(value, str) else value


def _json_call(
    name: str, arguments: dict[str, Any] | str, tool_names: Collection[str], written: str
) -> TextCall:
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return TextCall(new_call_id(), name, arguments, known=name in tool_names, written=written)


def _invalid(content: str, problem: str) -> TextCall:
    return TextCall(new_call_id(), INVALID_CALL_NAME, content, problem, known=False)


# --- rule 2: a call a tool result holds is a quotation -------------------------------------


def quoted_call(name: str, arguments: str, written: str, history: Sequence[Item]) -> bool:
    """Whether a tool result of ``history`` holds the call ``written`` (its text, white space
    aside) or a call of ``name`` with the same ``arguments`` (rule 2 of the module
    docstring, for a call read from another form: guided mode's answer text)."""
    return _quoted([TextCall("", name, arguments, written=written)], history)


def _quoted(calls: Sequence[TextCall], history: Sequence[Item]) -> bool:
    """A well-formed call of ``calls`` is held by a tool result of ``history``: its text
    (white space aside), or a call of the same name and arguments (``_held_calls``). A
    malformed one never runs, so it is answered as such, quoted or not."""
    outputs = [item.output for item in history if isinstance(item, FunctionCallOutput)]
    for call in (call for call in calls if call.problem is None):
        written, key = _squeezed(call.written), _key(call.name, call.arguments)
        if any(written in _squeezed(out) or key in _held_calls(out) for out in outputs):
            return True
    return False


@lru_cache(maxsize=256)
def _squeezed(text: str) -> str:
    """``text`` without white space (a quotation may be re-indented or re-wrapped)."""
    return "".join(text.split())


@lru_cache(maxsize=256)
def _held_calls(output: str) -> frozenset[tuple[str, str]]:
    """The name and arguments (``_key``) of the calls a tool output holds anywhere: in tags,
    in the XML form, or as a JSON object that begins with a call's key (the first
    ``_HELD_SCAN`` of these, each of at most ``_HELD_SIZE`` characters: a file may hold
    thousands of records, or one nested thousands deep)."""
    found = [_block(m[1], bool(m[2]), ()) for m in _BLOCK.finditer(output)]
    found += [_xml_call(m[1], m[2], (), m[0]) for m in _FUNCTION.finditer(output)]
    keys = {_key(call.name, call.arguments) for call in found if call.problem is None}
    for match in itertools.islice(_HELD_OBJECT.finditer(output), _HELD_SCAN):
        start = match.start()
        try:
            value, _ = _DECODER.raw_decode(output[start : start + _HELD_SIZE])
        except (ValueError, RecursionError):
            continue
        name, arguments = value.get("name"), _arguments(value)
        if isinstance(name, str) and isinstance(arguments, dict | str):
            keys.add(_key(name, _dumped(arguments)))
    return frozenset(keys)


def _key(name: str, arguments: str) -> tuple[str, str]:
    """A call as its name and its arguments in one canonical JSON text."""
    try:
        return name, json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):
        return name, arguments


def _dumped(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


# --- JSON as a call's text must be ---------------------------------------------------------


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
