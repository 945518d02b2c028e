"""Build an ``AgentTool`` from a typed Python function: the schema comes from its signature.

    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        '''Current weather of a city.

        Args:
            city: the city's name, in English
        '''

    tool = tool_from_function(get_weather)

Supported annotations: str, int, float, bool, list[X], dict, Literal[...], X | None.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin

from minipi.agent.tools import AgentTool, ToolResult
from minipi.ai.types import JsonObject
from minipi.errors import AgentError

__all__ = ["dataclass_schema", "schema_of", "tool_from_function"]

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def tool_from_function(
    function: Callable[..., Any], *, name: str | None = None, mutating: bool = False
) -> AgentTool:
    """An AgentTool whose parameters are ``function``'s; its result becomes the tool output.

    A str result is used as is; anything else is written as JSON. Raise ``ToolError`` in the
    function for a refusal with a stable code.
    """
    hints = typing.get_type_hints(function)
    doc = inspect.getdoc(function) or ""
    described = _arg_docs(doc)
    properties: JsonObject = {}
    required: list[str] = []
    for param in inspect.signature(function).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise AgentError(f"{function.__name__}: *args/**kwargs cannot be tool parameters")
        if param.name not in hints:
            raise AgentError(f"{function.__name__}: parameter {param.name!r} needs a type hint")
        schema = schema_of(hints[param.name], function.__name__)
        if param.name in described:
            schema["description"] = described[param.name]
        properties[param.name] = schema
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters: JsonObject = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }

    def handler(arguments: Mapping[str, Any]) -> str | ToolResult:
        value = function(**arguments)
        if isinstance(value, str | ToolResult):
            return value
        return json.dumps(value, ensure_ascii=False, default=str)

    summary = doc.split("\n\n")[0].strip() or function.__name__
    return AgentTool(name or function.__name__, summary, parameters, handler, mutating)


def schema_of(annotation: Any, owner: str) -> JsonObject:
    """The JSON Schema of a type hint: ``str``, ``int``, ``float``, ``bool``, ``Literal``,
    lists (tuples, sets) of one, ``dict``, unions (``X | None`` among them) and dataclasses
    (an object of their fields, each required); ``AgentError`` naming ``owner`` for any
    other. A tool's parameters and a structured answer's shape (``minipi.structured``) are
    read by this one rule."""
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset):
        return {"type": "array", "items": schema_of(args[0], owner) if args else {}}
    if annotation is dict or origin is dict:
        return {"type": "object"}
    if origin in (types.UnionType, typing.Union):
        return _union(args, owner)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return dataclass_schema(annotation, owner)
    raise AgentError(f"{owner}: unsupported parameter type {annotation!r}")


def _union(args: tuple[Any, ...], owner: str) -> JsonObject:
    """``X | None`` as ``X`` or null; any other union as any of its members."""
    options = [a for a in args if a is not type(None)]
    shown = [schema_of(a, owner) for a in options]
    if len(options) < len(args):
        shown.append({"type": "null"})
    return {"anyOf": shown}


def dataclass_schema(model: type, owner: str) -> JsonObject:
    """A dataclass as an object schema: each field by its type hint, each required."""
    try:
        hints = typing.get_type_hints(model)
    except NameError as error:  # a hint naming a class defined inside a function
        said = f"{owner}: cannot read the type hints of {model.__name__}: {error}"
        raise AgentError(said) from None
    fields = {f.name: schema_of(hints[f.name], owner) for f in dataclasses.fields(model)}
    return {
        "type": "object",
        "properties": fields,
        "required": list(fields),
        "additionalProperties": False,
    }


_ARG_LINE = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


def _arg_docs(doc: str) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    found: dict[str, str] = {}
    section = doc.partition("Args:")[2]
    for line in section.splitlines():
        if line.strip() and not line.startswith((" ", "\t")):
            break
        match = _ARG_LINE.match(line)
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found
