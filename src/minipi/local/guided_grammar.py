"""The grammar of a guided answer that cites facts: verbatim pieces of this run's tool results.

The facts are ``guided_facts``'s (``minipi.local.guided_facts``, re-exported here);
``guided_grammar`` turns a
``guided_schema`` into a GBNF grammar whose answer branch has the ``AnswerForm`` asked for:
the facts chosen before the text, each at most once and in order, or a text whose digits can
only be copied from the results. JSON Schema cannot say either ("each at most once, in
order"; "a digit only inside one of these literals"), so the grammar is llama.cpp's GBNF,
which llama-cpp-python's server and llama-server take as the request's ``grammar``. It is
written by us, not by llama-cpp-python's JSON-Schema converter: importing that loads libllama
into the client (0.38 s and 41 MB measured here), and a client of llama-server may not have
it. It is built as data (``Grammar``) so that a test can match text against the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from minipi.ai.types import JsonObject
from minipi.local.guided_facts import FACT_CHARS, MAX_FACTS, Facts, digit_literals, guided_facts
from minipi.local.guided_schema import ANSWER_BRANCH

__all__ = [
    "FACT_CHARS",
    "MAX_FACTS",
    "MAX_PICKS",
    "AnswerForm",
    "Chars",
    "Facts",
    "Grammar",
    "Ref",
    "Symbol",
    "digit_literals",
    "guided_facts",
    "guided_grammar",
]


# --- the reply grammar as GBNF: the answer with facts, or with copied digits ----------------

AnswerForm: TypeAlias = Literal["plain", "facts", "digits", "facts_digits"]
"""``plain``: ``{"answer": TEXT}`` (``ANSWER_BRANCH``, plain JSON Schema). ``facts``:
``{"facts": [F, ...], "answer": TEXT}`` with 1 to ``MAX_PICKS`` of the offered facts, each at
most once, in the offered order (``{"answer": TEXT}`` while there is none). ``digits``:
``{"answer": TEXT}`` where every digit of TEXT belongs to a literal of ``digit_literals``,
copied whole. ``facts_digits``: both."""

MAX_PICKS = 5
"""The most facts one answer cites (a longer list would run into the output-token limit)."""


@dataclass(frozen=True, slots=True)
class Chars:
    """One character within the inclusive ``ranges``, or (``negated``) outside them all."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False

    def matches(self, char: str) -> bool:
        return any(lo <= char <= hi for lo, hi in self.ranges) is not self.negated


@dataclass(frozen=True, slots=True)
class Ref:
    """The rule ``name``."""

    name: str


Symbol: TypeAlias = str | Chars | Ref
"""A ``str`` is literal text."""
Rules: TypeAlias = dict[str, tuple[tuple[Symbol, ...], ...]]


@dataclass(frozen=True, slots=True)
class Grammar:
    """A GBNF grammar as data: rule name -> alternatives, each a sequence of symbols (an empty
    one matches the empty string); it starts at ``root``. ``gbnf()`` is what llama.cpp reads."""

    rules: Mapping[str, tuple[tuple[Symbol, ...], ...]]

    def gbnf(self) -> str:
        return "".join(
            f"{name} ::= {' | '.join(_gbnf_sequence(a) for a in alternatives)}\n"
            for name, alternatives in self.rules.items()
        )


def guided_grammar(schema: JsonObject, facts: Facts, form: AnswerForm) -> Grammar:
    """``schema`` (from ``guided_schema``) as a grammar, its answer branch in ``form`` with
    ``facts`` (from ``guided_facts``). JSON is written in one layout, the one the history
    shows (``{"tool": "x", "arguments": {"path": "a"}}``): a tiny model has nothing to vary."""
    rules: Rules = {**_JSON_RULES}
    root = _visit(schema, rules, lambda: _answer(rules, facts, form))
    rules["root"] = (root,)
    return Grammar(_reachable(rules))


def _visit(
    node: JsonObject, rules: Rules, answer: Callable[[], tuple[Symbol, ...]]
) -> tuple[Symbol, ...]:
    """The symbols of one schema node (the subset ``guided_schema`` writes; any other node
    is any JSON value, which the loop's argument check then answers)."""
    if node == ANSWER_BRANCH:
        return answer()
    if "anyOf" in node:
        name = f"branch-{len(rules)}"
        rules[name] = ()  # reserve the name before the branches take theirs
        rules[name] = tuple(_visit(branch, rules, answer) for branch in node["anyOf"])
        return (Ref(name),)
    if "const" in node:
        return (_json(node["const"]),)
    if "enum" in node:
        name = f"enum-{len(rules)}"
        rules[name] = tuple((_json(value),) for value in node["enum"])
        return (Ref(name),)
    properties = node.get("properties")
    if node.get("type") == "object" and isinstance(properties, dict) and _closed(node):
        return _object_symbols(properties, rules, answer)
    return (_scalar_ref(node),)


def _object_symbols(
    properties: JsonObject, rules: Rules, answer: Callable[[], tuple[Symbol, ...]]
) -> tuple[Symbol, ...]:
    """The symbols of a closed object: each property, in order."""
    symbols: list[Symbol] = ["{"]
    for index, (key, value) in enumerate(properties.items()):
        key_text = (", " if index else "") + _json(key) + ": "
        symbols.extend((key_text, *_visit(value, rules, answer)))
    return (*symbols, "}")


def _scalar_ref(node: JsonObject) -> Ref:
    """A string (non-empty when ``minLength`` says so), a number, a boolean, or any value."""
    kind = node.get("type")
    if kind == "string":
        return Ref("string1" if node.get("minLength", 0) >= 1 else "string")
    return Ref(kind if kind in ("integer", "number", "boolean") else "value")


def _closed(node: JsonObject) -> bool:
    """Every property required, no other allowed: the object has one shape."""
    properties = node.get("properties") or {}
    return node.get("additionalProperties") is False and set(node.get("required", ())) == set(
        properties
    )


def _answer(rules: Rules, facts: Facts, form: AnswerForm) -> tuple[Symbol, ...]:
    digits = form in ("digits", "facts_digits")
    text = _digit_text(rules, digit_literals(facts.all)) if digits else (Ref("string1"),)
    if form in ("facts", "facts_digits") and facts.all:
        leading = facts.leading or facts.bearing or len(facts.content)
        chosen = _ordered_subset(rules, facts.citable, MAX_PICKS, leading)
        return ('{"facts": [', chosen, '], "answer": ', *text, "}")
    return ('{"answer": ', *text, "}")


def _ordered_subset(rules: Rules, facts: Sequence[str], picks: int, leading: int) -> Ref:
    """1 to ``picks`` of ``facts``, each at most once, in their order, the first among the
    ``leading`` first ones (all when 0). ``first-i``: the first pick is fact i or later;
    ``rest-i-k``: at most k more, from fact i on. A chain of rules (skip fact i, or take it),
    so the grammar grows with facts x picks, not with the number of subsets."""
    count = len(facts)
    leading = leading or count

    def rest(index: int, left: int) -> tuple[Symbol, ...]:
        return (Ref(f"rest-{index}-{left}"),) if index < count and left else ()

    for index, fact in enumerate(facts):
        rules[f"fact-{index}"] = ((_json(fact),),)
        for left in range(1, picks):
            take = (", ", Ref(f"fact-{index}"), *rest(index + 1, left - 1))
            rules[f"rest-{index}-{left}"] = (take, rest(index + 1, left))
        if index < leading:
            later = ((Ref(f"first-{index + 1}"),),) if index + 1 < leading else ()
            rules[f"first-{index}"] = ((Ref(f"fact-{index}"), *rest(index + 1, picks - 1)), *later)
    return Ref("first-0")


def _digit_text(rules: Rules, literals: Sequence[str]) -> tuple[Symbol, ...]:
    """A JSON string whose digits all come from ``literals``, each copied whole and never
    glued to another digit: free characters have no digit (nor ``\\u`` escapes)."""
    free = Chars((*_UNQUOTED, ("0", "9"), ("０", "９")), negated=True)
    rules["dchar"] = ((free,), ("\\", Chars(tuple((c, c) for c in '"\\/nt'))))
    if literals:
        rules["literal"] = tuple((_json(value)[1:-1],) for value in literals)
        rules["dpiece"] = ((Ref("dchar"),), (Ref("literal"), Ref("dchar")))
        rules["dtext"] = ((Ref("dpiece"), Ref("dtext")), (Ref("dpiece"),), (Ref("literal"),))
    else:
        rules["dtext"] = ((Ref("dchar"), Ref("dtext")), (Ref("dchar"),))
    return ('"', Ref("dtext"), '"')


def _reachable(rules: Rules) -> Rules:
    """``root`` first, then the rules it uses (the JSON basics are left out when unused)."""
    seen: dict[str, None] = {}
    todo = ["root"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen[name] = None
            todo.extend(s.name for a in rules[name] for s in a if isinstance(s, Ref))
    return {name: rules[name] for name in seen}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_UNQUOTED = (('"', '"'), ("\\", "\\"), ("\x00", "\x1f"), ("\x7f", "\x7f"))
_DIGIT = Chars((("0", "9"),))
_HEX = Chars((("0", "9"), ("a", "f"), ("A", "F")))
_JSON_RULES: Rules = {
    "char": (
        (Chars(_UNQUOTED, negated=True),),
        ("\\", Chars(tuple((c, c) for c in '"\\/bfnrt'))),
        ("\\u", _HEX, _HEX, _HEX, _HEX),
    ),
    "chars": ((Ref("char"), Ref("chars")), ()),
    "string": (('"', Ref("chars"), '"'),),
    "string1": (('"', Ref("char"), Ref("chars"), '"'),),
    "digits": ((_DIGIT, Ref("digits")), (_DIGIT,)),
    "natural": (("0",), (Chars((("1", "9"),)), Ref("digits")), (Chars((("1", "9"),)),)),
    "integer": (("-", Ref("natural")), (Ref("natural"),)),
    "fraction": ((".", Ref("digits")), ()),
    "exponent": ((Chars((("e", "e"), ("E", "E"))), Ref("sign"), Ref("digits")), ()),
    "sign": (("-",), ("+",), ()),
    "number": ((Ref("integer"), Ref("fraction"), Ref("exponent")),),
    "boolean": (("true",), ("false",)),
    "value": (*((Ref(n),) for n in ("object", "array", "string", "number", "boolean")), ("null",)),
    "object": (("{}",), ("{", Ref("member"), Ref("members"), "}")),
    "members": ((", ", Ref("member"), Ref("members")), ()),
    "member": ((Ref("string"), ": ", Ref("value")),),
    "array": (("[]",), ("[", Ref("value"), Ref("elements"), "]")),
    "elements": ((", ", Ref("value"), Ref("elements")), ()),
}
"""JSON's values in the one layout (``", "`` and ``": "``, no other white space)."""


def _gbnf_sequence(symbols: Sequence[Symbol]) -> str:
    return " ".join(map(_gbnf_symbol, symbols)) or '""'


def _gbnf_symbol(symbol: Symbol) -> str:
    if isinstance(symbol, Ref):
        return symbol.name
    if isinstance(symbol, Chars):
        ranges = (
            _gbnf_char(lo, _IN_CLASS) + (f"-{_gbnf_char(hi, _IN_CLASS)}" if hi != lo else "")
            for lo, hi in symbol.ranges
        )
        return f"[{'^' if symbol.negated else ''}{''.join(ranges)}]"
    return f'"{"".join(_gbnf_char(c, _IN_LITERAL) for c in symbol)}"'


_IN_LITERAL = frozenset('"\\')
_IN_CLASS = frozenset('"\\[]-^')


def _gbnf_char(char: str, special: frozenset[str]) -> str:
    """A character as GBNF writes it (``\\xNN`` for the special and the unprintable ones:
    llama.cpp knows no ``\\-`` or ``\\^``)."""
    return f"\\x{ord(char):02X}" if char in special or char < " " or char == "\x7f" else char
