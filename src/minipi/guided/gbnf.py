"""GBNF, llama.cpp's grammar language, as data: the rules guided replies follow.

A grammar is a mapping of rule names to alternatives, each a sequence of symbols (literal
text, a character class, a reference to a rule), starting at ``root``; ``Grammar.gbnf()`` is
the text llama.cpp reads (llama-cpp-python's server and llama-server take it as a request's
``grammar``). Built as data so that a test can match text against the same rules. ``JSON``
holds JSON's values in the one layout guided replies use (``", "`` and ``": "``, no other
white space); ``reachable`` keeps ``root`` and the rules it uses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "JSON",
    "UNQUOTED",
    "Chars",
    "Grammar",
    "Ref",
    "Rules",
    "Symbol",
    "json_text",
    "reachable",
]


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


def reachable(rules: Rules) -> Rules:
    """``root`` first, then the rules it uses (the JSON basics are left out when unused)."""
    seen: dict[str, None] = {}
    todo = ["root"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen[name] = None
            todo.extend(s.name for a in rules[name] for s in a if isinstance(s, Ref))
    return {name: rules[name] for name in seen}


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


UNQUOTED = (('"', '"'), ("\\", "\\"), ("\x00", "\x1f"), ("\x7f", "\x7f"))
_DIGIT = Chars((("0", "9"),))
_HEX = Chars((("0", "9"), ("a", "f"), ("A", "F")))
JSON: Rules = {
    "char": (
        (Chars(UNQUOTED, negated=True),),
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
    "null": (("null",),),
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
