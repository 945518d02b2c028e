"""The grammar of a guided reply: the calls ``guided_schema`` allows, or an answer in its form.

``guided_grammar`` turns a ``guided_schema`` into GBNF (``minipi.guided.gbnf``; the
schema's nodes through ``minipi.guided.json_rules``) whose answer branch has the
``AnswerForm`` asked for: the facts (``minipi.guided.facts``, re-exported here) chosen
before the text, each at most once and in order, or a text whose digits can only be copied
from the results. JSON Schema cannot say either ("each at most once, in order"; "a digit only
inside one of these literals"), so the grammar is llama.cpp's GBNF, which llama-cpp-python's
server and llama-server take as the request's ``grammar``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from minipi.ai.types import JsonObject
from minipi.guided.facts import FACT_CHARS, MAX_FACTS, Facts, digit_literals, guided_facts
from minipi.guided.gbnf import (
    JSON,
    UNQUOTED,
    Chars,
    Grammar,
    Ref,
    Rules,
    Symbol,
    json_text,
    reachable,
)
from minipi.guided.json_rules import visit

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


AnswerForm: TypeAlias = Literal["plain", "facts", "digits", "facts_digits"]
"""``plain``: ``{"answer": TEXT}`` (``ANSWER_BRANCH``, plain JSON Schema). ``facts``:
``{"facts": [F, ...], "answer": TEXT}`` with 1 to ``MAX_PICKS`` of the offered facts, each at
most once, in the offered order (``{"answer": TEXT}`` while there is none). ``digits``:
``{"answer": TEXT}`` where every digit of TEXT belongs to a literal of ``digit_literals``,
copied whole. ``facts_digits``: both."""

MAX_PICKS = 5
"""The most facts one answer cites (a longer list would run into the output-token limit)."""


def guided_grammar(schema: JsonObject, facts: Facts, form: AnswerForm) -> Grammar:
    """``schema`` (from ``guided_schema``) as a grammar, its answer branch in ``form`` with
    ``facts`` (from ``guided_facts``). JSON is written in one layout, the one the history
    shows (``{"tool": "x", "arguments": {"path": "a"}}``): a tiny model has nothing to vary."""
    rules: Rules = {**JSON}
    root = visit(schema, rules, lambda: _answer(rules, facts, form))
    rules["root"] = (root,)
    return Grammar(reachable(rules))


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
        rules[f"fact-{index}"] = ((json_text(fact),),)
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
    free = Chars((*UNQUOTED, ("0", "9"), ("０", "９")), negated=True)
    rules["dchar"] = ((free,), ("\\", Chars(tuple((c, c) for c in '"\\/nt'))))
    if literals:
        rules["literal"] = tuple((json_text(value)[1:-1],) for value in literals)
        rules["dpiece"] = ((Ref("dchar"),), (Ref("literal"), Ref("dchar")))
        rules["dtext"] = ((Ref("dpiece"), Ref("dtext")), (Ref("dpiece"),), (Ref("literal"),))
    else:
        rules["dtext"] = ((Ref("dchar"), Ref("dtext")), (Ref("dchar"),))
    return ('"', Ref("dtext"), '"')
