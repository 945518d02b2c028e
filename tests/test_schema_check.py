"""The subset validator (``minipi.agent.schema_check``) against jsonschema, its authority."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from minipi.agent import AgentTool
from minipi.agent.schema_check import compile_schema


def _reference(schema: Any, value: Any) -> bool:
    return bool(Draft202012Validator(schema).is_valid(value))


def _fast(schema: Any, value: Any) -> bool:
    check = compile_schema(schema)
    assert check is not None, f"{schema!r} should be in the subset"
    return check(value)


# --- differential: generated subset schemas x JSON values ----------------------------------

KEYS = st.sampled_from(["a", "b", "é", ""])
NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, -1.5, 1e300, 2**53, 2**53 + 1, float(2**53)]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    st.text(alphabet="ab é\u0301😀\x00", max_size=4),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")
TYPE_NAMES = st.sampled_from(TYPES)
LIMITS = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 1.0, -1.5, 2**53, 1e300]))
SIZES = st.integers(0, 4)
SCALAR_KEYWORDS = {
    "type": TYPE_NAMES | st.lists(TYPE_NAMES, max_size=3),
    "enum": st.lists(JSON, max_size=3),
    "const": JSON,
    "minimum": LIMITS,
    "maximum": LIMITS,
    "exclusiveMinimum": LIMITS,
    "exclusiveMaximum": LIMITS,
    "minLength": SIZES,
    "maxLength": SIZES,
    "minItems": SIZES,
    "maxItems": SIZES,
    "required": st.lists(KEYS, max_size=3),
    "description": st.text(max_size=3),
    "title": st.text(max_size=3),
    "default": JSON,
    "examples": st.lists(JSON, max_size=2),
}


def _small(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A schema with a few of the scalar keywords and ``strategy``'s keywords."""
    picked = st.lists(st.sampled_from(sorted(SCALAR_KEYWORDS)), max_size=3, unique=True)
    typed = st.fixed_dictionaries({}, optional={"type": SCALAR_KEYWORDS["type"]})
    parts = st.tuples(typed, picked.flatmap(_fixed), strategy)
    return parts.map(lambda three: {**three[0], **three[1], **three[2]})


def _fixed(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({name: SCALAR_KEYWORDS[name] for name in names})


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    nested = st.fixed_dictionaries(
        {},
        optional={
            "properties": st.dictionaries(KEYS, inner, max_size=3),
            "additionalProperties": inner,
            "items": inner,
            "anyOf": st.lists(inner, min_size=1, max_size=3),
        },
    )
    return _small(nested)


SCHEMAS = st.recursive(st.booleans() | _small(st.just({})), _extend, max_leaves=6)


EDGES: list[Any] = [
    *(None, True, False, 0, 1, -1, 2, 1.0, 0.0, -0.0, 0.5, 1.5, 2.0, -0.5),
    *(2**53, 2**53 + 1, float(2**53), 1e300, 10**400),
    *("", "a", "1", "é", "😀", "e\u0301", "ab", "😀😀", "a\x00"),
    *([], [1], [1.0], [True], [1, 2], [[1]], [{"a": 1}], [None, "a", 2], [1, 2, None]),
    *({}, {"a": 1}, {"a": True}, {"a": 1.0}, {"a": 1, "b": 2}, {"b": None}, {"a": {"a": 1}}),
    {"": 1},
]


def _variants(value: Any) -> list[Any]:
    """``value``, a JSON-equal twin of another Python type (1 and 1.0), a bool/int mix-up, and
    a near miss (one element or character fewer)."""
    if isinstance(value, bool):
        return [value, int(value), float(value)]
    if isinstance(value, int):
        twins = [value, float(value)] if abs(value) < 2**60 else [value]
        return twins + ([bool(value)] if value in (0, 1) else [])
    if isinstance(value, float):
        return [value, int(value)] if value.is_integer() else [value]
    if isinstance(value, str):
        return [value, value[:-1], value + "😀"]
    if isinstance(value, list):
        return [value, [_variants(v)[-1] for v in value], value[:-1]]
    if isinstance(value, dict):
        twin = {k: _variants(v)[-1] for k, v in value.items()}
        return [value, twin, dict(list(value.items())[:-1])]
    return [value]


BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
SIZE_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")


def _candidates(schema: dict[str, Any]) -> list[Any]:
    """Values at the edges of ``schema``'s own constants and limits."""
    pool: list[Any] = list(EDGES)
    for value in [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]:
        pool += _variants(value)
    for limit in (schema[k] for k in BOUNDS if k in schema):
        pool += [limit - 1, limit - 0.5, limit + 0.5, limit + 1, *_variants(limit)]
    for size in (schema[k] for k in SIZE_KEYWORDS[:2] if k in schema):
        pool += [c * n for c in "aé😀" for n in (size - 1, size, size + 1) if n >= 0]
        pool += ["e\u0301" * size]
    for size in (schema[k] for k in SIZE_KEYWORDS[2:] if k in schema):
        pool += [[1] * n for n in (size - 1, size, size + 1) if n >= 0]
    return pool


def _near(schema: Any) -> st.SearchStrategy[Any]:
    """JSON values, mostly close to what ``schema`` accepts or refuses."""
    if not isinstance(schema, dict):
        return JSON
    edges = st.sampled_from(_candidates(schema))
    options = [JSON, edges, edges]
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    keys = [*properties, *schema.get("required", []), "zz"]
    fields = {k: _near(properties.get(k, extra)) for k in keys}
    options.append(st.fixed_dictionaries({}, optional=fields))
    options.append(st.lists(_near(schema.get("items", True)), max_size=4))
    options += [_near(branch) for branch in schema.get("anyOf", [])]
    return st.one_of(options)


@settings(max_examples=1000, deadline=None, database=None)
@given(data=st.data())
def test_subset_check_agrees_with_jsonschema(data: st.DataObject) -> None:
    schema = data.draw(SCHEMAS, label="schema")
    for value in data.draw(st.lists(_near(schema), min_size=2, max_size=10), label="values"):
        assert _fast(schema, value) == _reference(schema, value), (schema, value)


# --- exhaustive: each keyword alone (or nearly) against every edge value --------------------

ATOMS: list[Any] = [
    True,
    False,
    {},
    *({"type": name} for name in TYPES),
    {"type": ["integer", "string"]},
    {"type": ["number", "null", "number"]},
    {"type": []},
    *({"const": value} for value in EDGES),
    *({"enum": [value, "zz"]} for value in EDGES),
    {"enum": [1, True, [0]]},
    {"enum": []},
    *({key: limit} for key in BOUNDS for limit in (0, 1, 1.0, 1.5, -0.5, 2**53, 1e300)),
    *({key: size} for key in SIZE_KEYWORDS for size in (0, 1, 2)),
    {"required": ["a"]},
    {"required": ["a", "b"]},
    {"required": []},
    {"properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {"type": "integer"}, "b": {"const": None}}},
    {"properties": {"a": False}},
    {"additionalProperties": False},
    {"properties": {"a": {}}, "additionalProperties": False},
    {"properties": {"b": True}, "additionalProperties": {"type": "integer"}},
    {"additionalProperties": {"properties": {"a": {"const": 1}}}},
    {"items": {"type": "integer"}},
    {"items": {"anyOf": [{"type": "null"}, {"minLength": 1}]}},
    {"items": False},
    {"items": True, "minItems": 1},
    {"anyOf": [{"type": "string"}, {"const": 1}]},
    {"anyOf": [{"minimum": 2}, {"maximum": 0}]},
    {"anyOf": [False]},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}, "required": ["a"]},
]


@pytest.mark.parametrize("schema", ATOMS)
def test_each_keyword_agrees_with_jsonschema_on_edge_values(schema: Any) -> None:
    check = compile_schema(schema)
    assert check is not None
    reference = Draft202012Validator(schema)
    for value in EDGES:
        assert check(value) == reference.is_valid(value), value


@settings(max_examples=300, deadline=None, database=None)
@given(
    properties=st.dictionaries(KEYS, SCHEMAS, max_size=3),
    required=st.lists(KEYS, max_size=2),
    additional=st.booleans(),
    arguments=st.dictionaries(KEYS, JSON, max_size=3),
)
def test_validate_is_none_exactly_when_jsonschema_accepts(
    properties: dict[str, Any], required: list[str], additional: bool, arguments: dict[str, Any]
) -> None:
    schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": additional,
    }
    tool = AgentTool("t", "test", schema, lambda _: "ok")
    assert (tool.validate(arguments) is None) == _reference(schema, arguments)


# --- the tricky cases, spelled out ----------------------------------------------------------

TRICKY = [
    ({"type": "integer"}, True, False),
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer"}, -0.0, True),
    ({"type": "integer"}, 1.5, False),
    ({"type": "integer"}, 10**30, True),
    ({"type": "integer"}, 1e300, True),
    ({"type": "number"}, False, False),
    ({"type": "number"}, 1, True),
    ({"type": "boolean"}, 0, False),
    ({"type": ["integer", "null"]}, None, True),
    ({"type": ["integer", "null"]}, "1", False),
    ({"type": []}, None, False),
    ({"const": 1}, 1.0, True),
    ({"const": 1.0}, 1, True),
    ({"const": 1}, True, False),
    ({"const": True}, 1, False),
    ({"const": False}, 0, False),
    ({"const": 0}, -0.0, True),
    ({"const": [1, {"a": True}]}, [1.0, {"a": True}], True),
    ({"const": [1, {"a": True}]}, [True, {"a": 1}], False),
    ({"const": {"a": 1}}, {"a": 1, "b": 2}, False),
    ({"const": None}, None, True),
    ({"const": "1"}, 1, False),
    ({"enum": [1, "a"]}, 1.0, True),
    ({"enum": [1, "a"]}, True, False),
    ({"enum": [True]}, 1, False),
    ({"enum": []}, None, False),
    ({"minimum": 1}, True, True),
    ({"minimum": 1}, "0", True),
    ({"minimum": 1}, 0.999, False),
    ({"exclusiveMinimum": 1}, 1.0, False),
    ({"exclusiveMaximum": 2**53}, float(2**53), False),
    ({"maximum": 2**53}, 2**53 + 1, False),
    ({"minLength": 2}, "😀", False),
    ({"maxLength": 1}, "😀", True),
    ({"maxLength": 1}, "e\u0301", False),
    ({"minLength": 1}, 5, True),
    ({"minItems": 1}, [], False),
    ({"maxItems": 1}, "ab", True),
    ({"items": False}, [], True),
    ({"items": False}, [1], False),
    ({"items": {"type": "string"}}, ["a", 1], False),
    ({"items": {"type": "string"}}, {"a": 1}, True),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 2, False),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 3.0, True),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, None, True),
    ({"required": ["a"]}, [], True),
    ({"required": ["a"]}, {"b": 1}, False),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1}, True),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
    ({"additionalProperties": {"type": "integer"}}, {"x": 1.0, "y": True}, False),
    (
        {
            "type": "object",
            "properties": {
                "outer": {
                    "type": "object",
                    "properties": {"inner": {"type": "integer", "minimum": 1}},
                    "required": ["inner"],
                    "additionalProperties": False,
                }
            },
        },
        {"outer": {"inner": 2.0}},
        True,
    ),
    (
        {"properties": {"outer": {"properties": {"inner": {"type": "integer"}}}}},
        {"outer": {"inner": False}},
        False,
    ),
    (True, {"anything": [1]}, True),
    (False, None, False),
    ({"description": "x", "title": "y", "default": 3, "examples": [1]}, "z", True),
]


@pytest.mark.parametrize(("schema", "value", "valid"), TRICKY)
def test_tricky_cases(schema: Any, value: Any, valid: bool) -> None:
    assert _reference(schema, value) is valid
    assert _fast(schema, value) is valid


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"format": "email"},
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"properties": {"a": {"type": "string", "minLength": 1, "pattern": "x"}}},
        {"anyOf": [{"type": "string"}, {"not": {}}]},
        {"items": [{"type": "string"}]},
        {"prefixItems": [{}], "items": False},
        {"type": "text"},
        {"type": ["string", 1]},
        {"minimum": "1"},
        {"minimum": True},
        {"minimum": float("nan")},
        {"minLength": 1.0},
        {"minLength": -1},
        {"required": "a"},
        {"enum": "ab"},
        {"enum": [(1, 2)]},
        {"const": float("inf")},
        {"anyOf": {"type": "string"}},
        {"additionalProperties": 0},
        {"properties": {1: {}}},
        {"$comment": "not in the subset either"},
        None,
        [],
    ],
)
def test_anything_else_defers_to_jsonschema(schema: Any) -> None:
    assert compile_schema(schema) is None


def _tool(schema: dict[str, Any]) -> AgentTool:
    return AgentTool("t", "test", {"type": "object", "properties": schema}, lambda _: "ok")


def test_unsupported_keyword_is_still_enforced() -> None:
    tool = _tool({"name": {"type": "string", "pattern": "^a"}})
    assert tool.validate({"name": "abc"}) is None
    assert tool.validate({"name": "xyz"}) == "name: 'xyz' does not match '^a'"


def test_values_that_are_not_plain_json_go_to_jsonschema() -> None:
    tool = _tool({"x": {"type": "number", "minimum": 1}})
    check = compile_schema(tool.parameters)
    assert check is not None
    assert not check({"x": Decimal("1.5")})  # not sure: jsonschema decides
    assert tool.validate({"x": Decimal("1.5")}) is None
    assert tool.validate({"x": Decimal("0.5")}) == "x: Decimal('0.5') is less than the minimum of 1"
    assert tool.validate({"x": float("nan")}) is None  # jsonschema: NaN < 1 is false


def test_invalid_arguments_keep_jsonschema_messages() -> None:
    tool = _tool({"n": {"type": "integer", "minimum": 1}, "s": {"type": "string"}})
    assert tool.validate({"n": 0, "s": 1}) == (
        "n: 0 is less than the minimum of 1; s: 1 is not of type 'string'"
    )
    assert tool.validate({"n": True}) == "n: True is not of type 'integer'"
    assert tool.validate({"n": 1.0, "s": "é"}) is None


# --- the point of it: a valid call never imports jsonschema ---------------------------------

_PROBE = """
import json, sys
from minipi.files import ProjectFiles, make_read_file_tool

with ProjectFiles(sys.argv[1]) as files:
    tool = make_read_file_tool(files)
    good = tool.execute({"path": "a.txt", "offset": 2, "limit": 1})
    print(json.dumps([good.is_error, good.content, "jsonschema" in sys.modules]))
    for bad in ({"path": "a.txt", "offset": 0}, {"pth": "a.txt"}, {"path": "a.txt", "limit": True}):
        print(json.dumps(tool.execute(bad).content))
"""


def test_valid_call_does_not_import_jsonschema(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    good, *bad = (json.loads(line) for line in done.stdout.splitlines())
    assert good[0] is False
    assert "two" in good[1]
    assert "three" not in good[1]
    assert good[2] is False, "a valid call imported jsonschema"
    prefix = "error [invalid_arguments]: read_file: "
    assert bad == [
        prefix + "offset: 0 is less than the minimum of 1",
        prefix + "'path' is required; unexpected field(s) 'pth'",
        prefix + "limit: True is not of type 'integer'",
    ]
