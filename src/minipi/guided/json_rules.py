"""A guided schema as grammar rules: the JSON Schema subset ``guided_schema`` writes.

``visit(node, rules, answer)`` returns the symbols of one schema node and adds the rules they
use to ``rules``; the answer branch (``ANSWER_BRANCH``) is ``answer()``'s, which knows the
answer form. The nodes:

- ``anyOf``: one rule, an alternative each; ``const``, ``enum``: their JSON text;
- an object with ``properties`` and ``additionalProperties: false``: the properties in their
  order, the ``required`` ones always, each other one present or not; any other object, any
  object;
- an array: its ``items`` (``{}``: any value), at least ``minItems``, at most ``maxItems``;
- a string: any JSON string, of ``minLength`` to ``maxLength`` characters when bounded (an
  escape counts as one);
- ``integer``, ``number``, ``boolean``, ``null``; any other node is any JSON value, which the
  loop's argument check then answers.

Written by us, not by llama-cpp-python's JSON-Schema converter: importing that loads libllama
into the client (0.38 s and 41 MB measured here), and a client of llama-server may not have
it; the answer branches (facts cited in order, digits copied) are beyond JSON Schema anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from minipi.ai.types import JsonObject
from minipi.guided.gbnf import Ref, Rules, Symbol, json_text
from minipi.guided.schema import ANSWER_BRANCH

__all__ = ["Answer", "visit"]

Answer = Callable[[], tuple[Symbol, ...]]
"""Makes the answer branch's symbols (and its rules) when the schema has one."""

_SCALARS = {"integer": "integer", "number": "number", "boolean": "boolean", "null": "null"}


def visit(node: JsonObject, rules: Rules, answer: Answer) -> tuple[Symbol, ...]:
    """The symbols of ``node`` (module docstring); rules they use are added to ``rules``."""
    if node == ANSWER_BRANCH:
        return answer()
    if "anyOf" in node:
        name = _reserve(rules, "branch")
        rules[name] = tuple(visit(branch, rules, answer) for branch in node["anyOf"])
        return (Ref(name),)
    if "const" in node:
        return (json_text(node["const"]),)
    if "enum" in node:
        name = _reserve(rules, "enum")
        rules[name] = tuple((json_text(value),) for value in node["enum"])
        return (Ref(name),)
    return _typed(node, rules, answer)


def _typed(node: JsonObject, rules: Rules, answer: Answer) -> tuple[Symbol, ...]:
    """The symbols of a node by its ``type`` (any other node: any JSON value)."""
    kind = node.get("type")
    if kind == "object":
        return _object(node, rules, answer)
    if kind == "array":
        return _array(node, rules, answer)
    if kind == "string":
        return (_string(node, rules),)
    return (Ref(_SCALARS.get(kind, "value")) if isinstance(kind, str) else Ref("value"),)


def _reserve(rules: Rules, prefix: str) -> str:
    """A new rule name, reserved before the rules of what it holds take theirs."""
    name = f"{prefix}-{len(rules)}"
    rules[name] = ()
    return name


def _object(node: JsonObject, rules: Rules, answer: Answer) -> tuple[Symbol, ...]:
    properties = node.get("properties")
    if not isinstance(properties, Mapping) or node.get("additionalProperties") is not False:
        return (Ref("object"),)
    required = set(node.get("required") or ())
    members = [
        (f"{json_text(key)}: ", visit(value, rules, answer), key in required)
        for key, value in properties.items()
    ]
    if all(needed for _, _, needed in members):  # one shape: the properties in order
        symbols: list[Symbol] = ["{"]
        for index, (key, value, _) in enumerate(members):
            symbols.extend(((", " if index else "") + key, *value))
        return (*symbols, "}")
    return ("{", _members(members, rules), "}")


def _members(members: list[tuple[str, tuple[Symbol, ...], bool]], rules: Rules) -> Ref:
    """The members of an object with optional ones: ``first-i`` before anything is written
    (no comma), ``rest-i`` after; each required member always, each optional one or not."""
    base = _reserve(rules, "members")
    count = len(members)
    for index in range(count, -1, -1):
        first, rest = f"{base}-first-{index}", f"{base}-rest-{index}"
        if index == count:
            rules[first], rules[rest] = ((),), ((),)
            continue
        key, value, needed = members[index]
        after = Ref(f"{base}-rest-{index + 1}")
        skip_first = () if needed else ((Ref(f"{base}-first-{index + 1}"),),)
        skip_rest = () if needed else ((after,),)
        rules[first] = ((key, *value, after), *skip_first)
        rules[rest] = ((", " + key, *value, after), *skip_rest)
    rules[base] = ((Ref(f"{base}-first-0"),),)
    return Ref(base)


def _array(node: JsonObject, rules: Rules, answer: Answer) -> tuple[Symbol, ...]:
    items = node.get("items")
    least, most = _bounds(node, "minItems", "maxItems")
    if not isinstance(items, Mapping) or (not items and least == 0 and most is None):
        return (Ref("array"),)
    item = _reserve(rules, "item")
    rules[item] = (visit(dict(items), rules, answer),)
    if most == 0:
        return ("[]",)
    tail = _repeat(rules, (", ", Ref(item)), max(least - 1, 0), None if most is None else most - 1)
    full = ("[", Ref(item), tail, "]")
    return full if least else (_either(rules, ("[]",), full),)


def _string(node: JsonObject, rules: Rules) -> Ref:
    least, most = _bounds(node, "minLength", "maxLength")
    if most is None:
        return Ref("string1" if least else "string")
    name = f"text-{least}-{most}"
    if name not in rules:
        rules[name] = (('"', _repeat(rules, (Ref("char"),), least, most), '"'),)
    return Ref(name)


def _bounds(node: JsonObject, low: str, high: str) -> tuple[int, int | None]:
    least, most = node.get(low), node.get(high)
    least = least if isinstance(least, int) and least > 0 else 0
    most = most if isinstance(most, int) and most >= 0 else None
    return least, None if most is None else max(most, least)


def _repeat(rules: Rules, piece: tuple[Symbol, ...], least: int, most: int | None) -> Ref:
    """``piece`` at least ``least`` times and at most ``most`` (None: no limit), as a chain
    of rules (``least`` taken, then each further one or none)."""
    base = _reserve(rules, "repeat")
    if most is None:
        rules[f"{base}-more"] = ((*piece, Ref(f"{base}-more")), ())
        rules[base] = ((*piece * least, Ref(f"{base}-more")),)
        return Ref(base)
    optional = most - least
    for index in range(optional, -1, -1):
        later = (Ref(f"{base}-{index + 1}"),) if index < optional else ()
        rules[f"{base}-{index}"] = ((*piece, *later), ()) if index < optional else ((),)
    rules[base] = ((*piece * least, Ref(f"{base}-0")),)
    return Ref(base)


def _either(rules: Rules, *alternatives: tuple[Symbol, ...]) -> Ref:
    name = _reserve(rules, "either")
    rules[name] = alternatives
    return Ref(name)
