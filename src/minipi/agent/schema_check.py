"""An exact, fast check for the subset of JSON Schema (2020-12) that tool parameters use:
boolean schemas, type, properties, required, additionalProperties, enum, const, minimum,
maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, items, minItems, maxItems,
anyOf, and the ignored description, title, default, examples. ``compile_schema`` is None for a
schema with any other keyword. Its check says True only when ``Draft202012Validator(schema)``
would; False means "invalid, or not sure" (a value that is not plain JSON: Decimal, NaN,
tuple), and jsonschema then decides. Nothing in the subset negates a check, so "not sure" can
only turn a True into a False.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["Check", "compile_schema"]

Check = Callable[[Any], bool]
_Builder = Callable[[Any, dict[str, Any]], Check | None]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples"})


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    """int or float, not bool (jsonschema also counts other ``numbers.Number``: we defer)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    """2020-12: a float with no fractional part is an integer; a bool is not."""
    return value.is_integer() if isinstance(value, float) else _is_number(value)


def _other_than_number(value: Any) -> bool:
    """What jsonschema's numeric keywords pass (a Decimal is neither: we defer on it)."""
    return isinstance(value, bool) or not isinstance(value, numbers.Number)


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def _equal(one: Any, two: Any) -> bool:
    """JSON equality (1 == 1.0, True != 1); False for values that are not plain JSON."""
    if one is two:
        return True
    if isinstance(one, str) and isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(map(_equal, one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    return _is_number(one) and _is_number(two) and one == two


def _is_json(value: Any) -> bool:
    """Plain JSON: dict (str keys), list, str, int, finite float, bool, None."""
    if value is None or isinstance(value, str | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(map(_is_json, value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


def compile_schema(schema: Any) -> Check | None:
    """A check of instances against ``schema``, or None when it is outside the subset."""
    if isinstance(schema, bool):
        return _always if schema else _never
    if not isinstance(schema, dict):
        return None
    checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        builder = _BUILDERS.get(keyword) if isinstance(keyword, str) else None
        check = builder(value, schema) if builder is not None else None
        if check is None:
            return None
        if check is not _always:
            checks.append(check)
    if len(checks) <= 1:
        return checks[0] if checks else _always
    return lambda v: all(check(v) for check in checks)


def _compile_all(schemas: Any) -> list[Check] | None:
    checks = [compile_schema(s) for s in schemas] if isinstance(schemas, list) else [None]
    return None if None in checks else [c for c in checks if c is not None]


def _type(names: Any, schema: dict[str, Any]) -> Check | None:
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    checks = [_TYPES[n] for n in dict.fromkeys(names)]
    return checks[0] if len(checks) == 1 else lambda v: any(c(v) for c in checks)


def _properties(properties: Any, schema: dict[str, Any]) -> Check | None:
    if not isinstance(properties, dict) or not all(isinstance(k, str) for k in properties):
        return None
    checks = _compile_all(list(properties.values()))
    if checks is None:
        return None
    pairs = [(k, c) for k, c in zip(properties, checks, strict=True) if c is not _always]
    return lambda v: not isinstance(v, dict) or all(k not in v or c(v[k]) for k, c in pairs)


def _required(names: Any, schema: dict[str, Any]) -> Check | None:
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return lambda v: not isinstance(v, dict) or all(n in v for n in names)
    return None


def _additional(extra: Any, schema: dict[str, Any]) -> Check | None:
    known = schema.get("properties", {})
    check = compile_schema(extra)
    if check is None or not isinstance(known, dict):
        return None
    return lambda v: not isinstance(v, dict) or all(k in known or check(v[k]) for k in v)


def _enum(values: Any, schema: dict[str, Any]) -> Check | None:
    ok = isinstance(values, list) and _is_json(values)
    return (lambda v: any(_equal(v, value) for value in values)) if ok else None


def _bound(compare: Callable[[Any, Any], bool]) -> _Builder:
    """``minimum`` and friends: ``compare(instance, limit)`` must hold for a number."""

    def build(limit: Any, schema: dict[str, Any]) -> Check | None:
        if not _is_number(limit) or not _is_json(limit):
            return None
        return lambda v: compare(v, limit) if _is_number(v) else _other_than_number(v)

    return build


def _size(kind: type[str] | type[list[Any]], compare: Callable[[int, int], bool]) -> _Builder:
    """``minLength`` and friends: ``compare(len(instance), limit)`` must hold for ``kind``."""

    def build(limit: Any, schema: dict[str, Any]) -> Check | None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            return None
        return lambda v: not isinstance(v, kind) or compare(len(v), limit)

    return build


def _items(items: Any, schema: dict[str, Any]) -> Check | None:
    check = compile_schema(items)
    return None if check is None else lambda v: not isinstance(v, list) or all(map(check, v))


def _any_of(schemas: Any, schema: dict[str, Any]) -> Check | None:
    checks = _compile_all(schemas)
    return None if checks is None else lambda v: any(c(v) for c in checks)


_BUILDERS: dict[str, _Builder] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "enum": _enum,
    "const": lambda value, schema: _enum([value], schema),
    "minimum": _bound(operator.ge),
    "maximum": _bound(operator.le),
    "exclusiveMinimum": _bound(operator.gt),
    "exclusiveMaximum": _bound(operator.lt),
    "minLength": _size(str, operator.ge),
    "maxLength": _size(str, operator.le),
    "items": _items,
    "minItems": _size(list, operator.ge),
    "maxItems": _size(list, operator.le),
    "anyOf": _any_of,
}
