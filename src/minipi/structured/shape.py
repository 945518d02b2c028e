"""The shape a structured answer must have: a JSON Schema, from what the caller gives.

``shape_of`` accepts a JSON Schema (a mapping), a dataclass, a pydantic model (when pydantic
is installed; its own ``model_json_schema``), or text as ``minipi ask --schema`` takes it:

- a file holding a JSON Schema (or the shorthand below);
- inline JSON: a JSON Schema, or the shorthand ``{"date": "string", "orders": "integer"}``
  (each key a field, each value a type name);
- the compact form ``"date, orders:int, revenue:number"`` (fields by commas or lines; a type
  after ``:`` or a space; any other text after ``:`` is the field's description; no type is
  ``string``).

Every field of the shorthand and the compact form is required. A value is checked with
``fastjsonschema`` (already a dependency: the same validator the batch records use).
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastjsonschema

from minipi.errors import ConfigError

__all__ = ["OutputShape", "shape_of"]

_TYPES = {
    "str": "string",
    "string": "string",
    "text": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "num": "number",
    "number": "number",
    "decimal": "number",
    "bool": "boolean",
    "boolean": "boolean",
}
"""Type names of the shorthand and compact forms, to JSON Schema types."""
_SCHEMA_KEYS = frozenset(
    {"type", "properties", "$schema", "$ref", "anyOf", "oneOf", "allOf", "items", "enum"}
)
_NAME = re.compile(r"^[A-Za-z_\u4e00-\u9fff][\w\u4e00-\u9fff-]*$")


@dataclass(frozen=True)
class OutputShape:
    """A JSON Schema and its compiled validator; ``model`` is the dataclass or pydantic model
    the caller gave (None: a schema), to build from the value (``build``)."""

    schema: dict[str, Any]
    model: type | None = None
    _check: Any = field(default=None, repr=False, compare=False)

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit the schema (the validator's message), or None."""
        try:
            self._check(value)
        except fastjsonschema.JsonSchemaValueException as error:
            return str(error.message)
        return None

    def build(self, value: Any) -> Any:
        """``value`` as the caller's model (a dataclass or pydantic instance), else itself."""
        model = self.model
        if model is None:
            return value
        validate = getattr(model, "model_validate", None)
        if validate is not None:
            return validate(value)
        return _dataclass_of(model, value)


def shape_of(spec: object) -> OutputShape:
    """The ``OutputShape`` of ``spec`` (module docstring); ``ConfigError`` (code
    ``invalid_schema``) when it is none of those or its schema does not compile."""
    if isinstance(spec, OutputShape):
        return spec
    model: type | None = None
    if isinstance(spec, str):
        schema = _from_text(spec)
    elif isinstance(spec, Mapping):
        schema = _from_mapping(dict(spec))
    elif isinstance(spec, type) and hasattr(spec, "model_json_schema"):
        schema, model = dict(spec.model_json_schema()), spec
    elif isinstance(spec, type) and dataclasses.is_dataclass(spec):
        schema, model = _dataclass_schema(spec), spec
    else:
        raise _invalid(f"not a schema, a dataclass or a pydantic model: {type(spec).__name__}")
    try:
        check = fastjsonschema.compile(schema)
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError) as error:
        raise _invalid(f"the schema does not compile: {error}") from None
    return OutputShape(schema, model, check)


def _invalid(message: str) -> ConfigError:
    return ConfigError(f"schema: {message}", code="invalid_schema")


def _from_text(text: str) -> dict[str, Any]:
    """A schema from a file's path, inline JSON, or the compact form."""
    stripped = text.strip()
    if not stripped:
        raise _invalid("empty")
    if stripped[0] not in "{[" and _is_file(stripped):
        stripped = Path(stripped).read_text(encoding="utf-8").strip()
    if stripped[:1] in "{[":
        try:
            loaded = json.loads(stripped)
        except ValueError as error:
            raise _invalid(f"not valid JSON: {error}") from None
        if not isinstance(loaded, dict):
            raise _invalid("a JSON schema is an object")
        return _from_mapping(loaded)
    return _compact(stripped)


def _is_file(text: str) -> bool:
    try:
        return "\n" not in text and Path(text).is_file()
    except OSError:
        return False


def _from_mapping(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema as it is, or the shorthand ``{"field": "type name"}`` as one."""
    if _SCHEMA_KEYS & schema.keys() or not schema:
        return schema
    fields = {}
    for name, kind in schema.items():
        if not isinstance(kind, str) or kind.strip().lower() not in _TYPES:
            raise _invalid(f"field {name!r}: give a type name ({', '.join(sorted(_TYPES))})")
        fields[str(name)] = {"type": _TYPES[kind.strip().lower()]}
    return _object(fields)


def _compact(text: str) -> dict[str, Any]:
    """``"date, orders:int, revenue: the day's revenue"`` as an object schema."""
    fields: dict[str, dict[str, Any]] = {}
    for part in (p.strip() for p in re.split(r"[,\n]", text)):
        if not part:
            continue
        name, kind, about = _field(part)
        fields[name] = {"type": kind} | ({"description": about} if about else {})
    if not fields:
        raise _invalid("no fields")
    return _object(fields)


def _field(part: str) -> tuple[str, str, str]:
    """(name, JSON type, description) of one compact field: ``name``, ``name type``,
    ``name:type`` or ``name: description`` (or ``name type: description``)."""
    head, _, about = part.partition(":")
    pieces = head.split()
    rest = about.strip()
    first = rest.split(" ", 1)[0].lower() if rest else ""
    if len(pieces) == 1 and first in _TYPES:  # name:type[ description]
        pieces.append(first)
        rest = rest[len(first) :].strip()
    if not pieces or len(pieces) > 2 or not _NAME.match(pieces[0]):
        raise _invalid(f"cannot read the field {part!r} (write name, name:type or name type)")
    kind = pieces[1].lower() if len(pieces) == 2 else "string"
    if kind not in _TYPES:
        raise _invalid(f"field {pieces[0]!r}: unknown type {kind!r}")
    return pieces[0], _TYPES[kind], rest


def _object(fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": fields,
        "required": list(fields),
        "additionalProperties": False,
    }


def _dataclass_schema(model: type) -> dict[str, Any]:
    """The dataclass's schema by the rule tool parameters are read with
    (``minipi.agent.function_tool.schema_of``)."""
    from minipi.agent.function_tool import dataclass_schema
    from minipi.errors import AgentError

    try:
        return dict(dataclass_schema(model, model.__name__))
    except AgentError as error:
        raise _invalid(str(error)) from None


def _dataclass_of(model: type, value: Any) -> Any:
    """A dataclass instance from a JSON object that fits its schema (nested ones too)."""
    hints = typing.get_type_hints(model)
    made = {}
    for item in dataclasses.fields(model):
        hint = hints[item.name]
        raw = value.get(item.name)
        nested = isinstance(hint, type) and dataclasses.is_dataclass(hint)
        made[item.name] = _dataclass_of(hint, raw) if nested and raw is not None else raw
    return model(**made)
