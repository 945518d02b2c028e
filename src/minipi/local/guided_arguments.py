"""The arguments a guided reply may give a tool that does not explore the project.

A file tool's arguments come from what other tools showed (``guided_schema``'s enums). Any
other tool (an MCP server's, a library user's, a benchmark's function) gets its declared
parameters, required and optional, as a schema the grammar can write exactly:

- an object lists its properties in their declared order, the required ones always, each
  optional one present or not, nothing else (``additionalProperties`` false); an object
  declared without properties is any object;
- an array's items follow their schema (``minItems``/``maxItems`` kept);
- a string is free text of at most ``MAX_TEXT`` characters (less when ``maxLength`` says
  so): bounded, so a small model's string ends; an ``enum`` or ``const`` is one of its values;
- ``integer``, ``number``, ``boolean`` and ``null`` as declared; a list of types, ``anyOf``
  and ``oneOf`` as alternatives;
- anything else (``$ref``, ``allOf``, ``not``, a node nested deeper than ``MAX_DEPTH``) is any
  JSON value, which the loop's argument check then answers.

Descriptions, titles, defaults and formats are dropped: they are in the system prompt, and a
default is the tool's to apply, not the model's to write. Measured on BFCL with
Qwen2.5-Coder-1.5B: with required parameters only, 10 of 11 wrong arguments were an optional
parameter the question gave and the grammar could not write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minipi.ai.types import JsonObject

__all__ = ["MAX_DEPTH", "MAX_TEXT", "offered_arguments", "offered_value"]

MAX_TEXT = 160
"""The longest free-text argument a guided reply writes, in characters."""
MAX_DEPTH = 6
"""Schemas nested deeper are any value (a hostile server's schema stays a small grammar)."""

_SCALARS = ("string", "integer", "number", "boolean", "null")


def offered_arguments(parameters: JsonObject, optional: bool = True) -> JsonObject:
    """The arguments schema guided replies may write for a tool declaring ``parameters``
    (without ``optional``, its required parameters only: the tool applies its defaults)."""
    offered = _node(parameters, 0)
    if offered.get("type") != "object":  # a tool's arguments are an object
        return {"type": "object"}
    properties, needed = offered.get("properties"), offered.get("required", [])
    if not optional and isinstance(properties, dict):
        offered["properties"] = {n: s for n, s in properties.items() if n in needed}
    return offered


def offered_value(schema: Any) -> JsonObject:
    """One argument's schema as guided replies may write it (``{}``: any value)."""
    return _node(schema, 1)


def _node(schema: Any, depth: int) -> JsonObject:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return {}
    if "const" in schema:
        return {"const": schema["const"]}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return {"enum": list(schema["enum"])}
    choices = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(choices, list) and choices:
        return _alternatives([_node(choice, depth + 1) for choice in choices])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _alternatives([_typed(schema, k, depth) for k in kind if isinstance(k, str)])
    return _typed(schema, kind, depth) if isinstance(kind, str) else {}


def _alternatives(nodes: list[JsonObject]) -> JsonObject:
    if any(node == {} for node in nodes) or not nodes:
        return {}  # one alternative is any value: so is the whole
    return nodes[0] if len(nodes) == 1 else {"anyOf": nodes}


def _typed(schema: Mapping[str, Any], kind: str, depth: int) -> JsonObject:
    if kind == "object":
        return _object(schema, depth)
    if kind == "array":
        return _array(schema, depth)
    if kind == "string":
        longest = schema.get("maxLength")
        bound = min(longest, MAX_TEXT) if isinstance(longest, int) and longest >= 0 else MAX_TEXT
        node: JsonObject = {"type": "string", "maxLength": bound}
        shortest = schema.get("minLength")
        if isinstance(shortest, int) and 0 < shortest <= bound:
            node["minLength"] = shortest
        return node
    return {"type": kind} if kind in _SCALARS else {}


def _object(schema: Mapping[str, Any], depth: int) -> JsonObject:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return {"type": "object"}
    listed = {str(name): _node(node, depth + 1) for name, node in properties.items()}
    required = schema.get("required")
    needed = [n for n in required if n in listed] if isinstance(required, list) else []
    return {
        "type": "object",
        "properties": listed,
        "required": list(dict.fromkeys(needed)),
        "additionalProperties": False,
    }


def _array(schema: Mapping[str, Any], depth: int) -> JsonObject:
    node: JsonObject = {"type": "array", "items": _node(schema.get("items"), depth + 1)}
    for bound in ("minItems", "maxItems"):
        value = schema.get(bound)
        if isinstance(value, int) and value >= 0:
            node[bound] = value
    return node
