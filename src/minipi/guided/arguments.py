"""The arguments a guided reply may give a tool that does not explore the project.

A file tool's arguments come from what other tools showed (``guided_schema``'s enums). Any
other tool (an MCP server's, a library user's, a benchmark's function) gets its declared
parameters, required and optional, as a schema the grammar can write exactly:

- an object lists its properties in their declared order, the required ones always, each
  optional one present or not, nothing else (``additionalProperties`` false); an object
  declared without properties is any object;
- an array's items follow their schema (``minItems``/``maxItems`` kept);
- a string is free text of at most ``MAX_TEXT`` characters (less when ``maxLength`` says
  so): bounded, so a small model's string ends; with ``spans`` (models under
  ``assemble.FULL_OFFER_FROM``) it is one of the runs of the question's words that fit
  (``question_spans``; free text when none does): a small model otherwise writes a
  parameter's description, or a sentence of its own, where a value from the question is
  asked for; an ``enum`` or ``const`` is one of its values;
- ``integer``, ``number``, ``boolean`` and ``null`` as declared (with ``spans``, the
  schema's ``with_numbers`` then makes a top-level number one the question writes); a list
  of types, ``anyOf`` and ``oneOf`` as alternatives;
- anything else (``$ref``, ``allOf``, ``not``, a node nested deeper than ``MAX_DEPTH``) is any
  JSON value, which the loop's argument check then answers.

Descriptions, titles, defaults and formats are dropped: they are in the system prompt, and a
default is the tool's to apply, not the model's to write. Optional parameters are offered
because a question often gives one, and a call missing a value the question gave is wrong
however well the model read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from minipi.ai.types import JsonObject

__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT",
    "Offer",
    "offered_arguments",
    "offered_value",
    "question_numbers",
    "question_spans",
    "with_numbers",
]

MAX_TEXT = 160
"""The longest free-text argument a guided reply writes, in characters."""
MAX_DEPTH = 6
"""Schemas nested deeper are any value (a hostile server's schema stays a small grammar)."""

MAX_SPAN_WORDS = 6
"""The longest run of a question's words offered as a string (``question_spans``)."""
MAX_SPANS = 256
"""At most this many runs are offered (the shortest first)."""

_SCALARS = ("string", "integer", "number", "boolean", "null")
_T = TypeVar("_T")
_SPAN_WORD = re.compile(r"[A-Za-z0-9_.\-/:@'+]+|[\u4e00-\u9fff]+")


def offered_arguments(
    parameters: JsonObject, optional: bool = True, spans: Sequence[str] = ()
) -> JsonObject:
    """The arguments schema guided replies may write for a tool declaring ``parameters``
    (without ``optional``, its required parameters only: the tool applies its defaults; with
    ``spans``, a free string is one of them: ``question_spans``)."""
    offered = _node(parameters, 0, tuple(spans))
    if offered.get("type") != "object":  # a tool's arguments are an object
        return {"type": "object"}
    properties, needed = offered.get("properties"), offered.get("required", [])
    if not optional and isinstance(properties, dict):
        offered["properties"] = {n: s for n, s in properties.items() if n in needed}
    return offered


def offered_value(schema: Any) -> JsonObject:
    """One argument's schema as guided replies may write it (``{}``: any value)."""
    return _node(schema, 1)


def question_spans(question: str) -> tuple[str, ...]:
    """The runs of 1 to ``MAX_SPAN_WORDS`` consecutive words of ``question`` (a word: letters,
    digits and ``.-/:@'_``, or a run of Han characters; a run's end trimmed of ``.``), each once,
    at most ``MAX_SPANS``, shortest first: the strings a small model may pass."""
    words = [w.rstrip(".'") for w in _SPAN_WORD.findall(question)]
    words = [w for w in words if w]
    found = (
        " ".join(words[start : start + size])
        for size in range(1, MAX_SPAN_WORDS + 1)
        for start in range(len(words) - size + 1)
    )
    return _first_unique(found)


def _first_unique(found: Iterable[_T]) -> tuple[_T, ...]:
    """The first ``MAX_SPANS`` distinct values of ``found``, in order, reading no further
    (a pasted log of 2 MB: 1.4 s a turn to build every run of its words, then keep 256)."""
    kept: dict[_T, None] = {}
    for value in found:
        kept.setdefault(value)
        if len(kept) == MAX_SPANS:
            break
    return tuple(kept)


_NUMBER = re.compile(r"(?<![\w.])(-?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([eE][-+]?\d+)?(?![\d,.]\d)")
_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NUMBER_WORDS = {word: value for value, word in enumerate((*_WORDS, "eleven", "twelve"), 1)}


def question_numbers(question: str) -> tuple[int | float, ...]:
    """The numbers ``question`` writes, in order, each once: digits (``1,000`` is 1000, a
    ``-`` before them its sign, a unit after them left off: ``300K`` is 300; not within a
    word: ``v1.2``; an exponent kept: ``1e-9``) and the words one to twelve; at most
    ``MAX_SPANS`` (a pasted table stays a small grammar)."""
    found: list[int | float] = []
    for match in _NUMBER.finditer(question):
        sign, whole, fraction, exponent = match.groups()
        digits = sign + whole.replace(",", "")
        decimal = (fraction or "") + (exponent or "")
        found.append(float(digits + decimal) if decimal else int(digits))
    words = re.findall(r"[a-z]+", question.lower())
    found += [_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS]
    return _first_unique(found)


def with_numbers(arguments: JsonObject, numbers: Sequence[int | float]) -> JsonObject | None:
    """``arguments`` (``offered_arguments``) with each top-level ``integer`` or ``number``
    parameter one of the question's ``numbers`` that fit its type (for a small model, as
    strings are runs of its words: a small model otherwise writes digits the question never
    gave); an optional one that none fits is left out, and None when a required one cannot be
    given: the question does not hold the call's values, so the tool does not answer it."""
    properties = arguments.get("properties")
    if not isinstance(properties, dict):
        return arguments
    needed = set(arguments.get("required", ()))
    kept: dict[str, Any] = {}
    for name, node in properties.items():
        numbered = _numbered(node, numbers)
        if numbered is not None:
            kept[name] = numbered
        elif name in needed:
            return None
    required = [n for n in arguments.get("required", ()) if n in kept]
    return {**arguments, "properties": kept, "required": required}


@dataclass(frozen=True, slots=True)
class Offer:
    """How a call's free values are offered: any text for the question's words
    (``free_text``), optional parameters too (``optional``), strings as runs of the
    question's words (``spans``, when there are any), numbers as the question's
    (``numbers``; None: any number)."""

    free_text: bool = False
    optional: bool = True
    spans: tuple[str, ...] = ()
    numbers: tuple[int | float, ...] | None = None

    @classmethod
    def of(cls, question: str, free_text: bool, optional: bool, spans: bool) -> Offer:
        """The offer for ``question``: with ``spans``, its runs of words and its numbers."""
        if not spans:
            return cls(free_text, optional)
        return cls(free_text, optional, question_spans(question), question_numbers(question))

    def arguments(self, parameters: JsonObject) -> JsonObject | None:
        """The arguments schema of a tool declaring ``parameters`` (``offered_arguments``,
        then ``with_numbers``); None when the question holds no value for a required one."""
        offered = offered_arguments(parameters, self.optional, self.spans)
        return offered if self.numbers is None else with_numbers(offered, self.numbers)


def _numbered(node: JsonObject, numbers: Sequence[int | float]) -> JsonObject | None:
    """A parameter's schema with numbers the question's: for a bare ``integer`` or
    ``number``, an enum of those that fit its type (None when none does); else as it is."""
    kind = node.get("type") if node.keys() == {"type"} else None
    if kind not in ("integer", "number"):
        return node
    fitting = [n for n in numbers if kind == "number" or isinstance(n, int)]
    return {"enum": fitting} if fitting else None


def _node(schema: Any, depth: int, spans: tuple[str, ...] = ()) -> JsonObject:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return {}
    listed = _listed_values(schema)
    if listed is not None:
        return listed
    choices = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(choices, list) and choices:
        return _alternatives([_node(choice, depth + 1, spans) for choice in choices])
    return _declared_type(schema, depth, spans)


def _listed_values(schema: Mapping[str, Any]) -> JsonObject | None:
    """A ``const`` or a non-empty ``enum`` as its values alone; None for any other node."""
    if "const" in schema:
        return {"const": schema["const"]}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return {"enum": list(schema["enum"])}
    return None


def _declared_type(schema: Mapping[str, Any], depth: int, spans: tuple[str, ...]) -> JsonObject:
    """A node by its ``type``: one type, or a list of them as alternatives (none: any value)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        typed = (_typed(schema, k, depth, spans) for k in kind if isinstance(k, str))
        return _alternatives(list(typed))
    return _typed(schema, kind, depth, spans) if isinstance(kind, str) else {}


def _alternatives(nodes: list[JsonObject]) -> JsonObject:
    if any(node == {} for node in nodes) or not nodes:
        return {}  # one alternative is any value: so is the whole
    return nodes[0] if len(nodes) == 1 else {"anyOf": nodes}


def _typed(schema: Mapping[str, Any], kind: str, depth: int, spans: tuple[str, ...]) -> JsonObject:
    if kind == "object":
        return _object(schema, depth, spans)
    if kind == "array":
        return _array(schema, depth, spans)
    if kind == "string":
        return _string(schema, spans)
    return {"type": kind} if kind in _SCALARS else {}


def _string(schema: Mapping[str, Any], spans: tuple[str, ...]) -> JsonObject:
    """One of the ``spans`` that fit the string's length, else bounded free text."""
    least, bound = _lengths(schema)
    fitting = [s for s in spans if least <= len(s) <= bound]
    if fitting:
        return {"enum": fitting}
    node: JsonObject = {"type": "string", "maxLength": bound}
    if least:
        node["minLength"] = least
    return node


def _lengths(schema: Mapping[str, Any]) -> tuple[int, int]:
    """A string's least and most characters: ``minLength`` when it is positive and within
    the most (else 0), ``maxLength`` when it is not negative, at most ``MAX_TEXT``."""
    longest = schema.get("maxLength")
    bound = min(longest, MAX_TEXT) if isinstance(longest, int) and longest >= 0 else MAX_TEXT
    shortest = schema.get("minLength")
    least = shortest if isinstance(shortest, int) and 0 < shortest <= bound else 0
    return least, bound


def _object(schema: Mapping[str, Any], depth: int, spans: tuple[str, ...]) -> JsonObject:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return {"type": "object"}
    listed = {str(name): _node(node, depth + 1, spans) for name, node in properties.items()}
    required = schema.get("required")
    needed = [n for n in required if n in listed] if isinstance(required, list) else []
    return {
        "type": "object",
        "properties": listed,
        "required": list(dict.fromkeys(needed)),
        "additionalProperties": False,
    }


def _array(schema: Mapping[str, Any], depth: int, spans: tuple[str, ...]) -> JsonObject:
    node: JsonObject = {"type": "array", "items": _node(schema.get("items"), depth + 1, spans)}
    for bound in ("minItems", "maxItems"):
        value = schema.get(bound)
        if isinstance(value, int) and value >= 0:
            node[bound] = value
    return node
