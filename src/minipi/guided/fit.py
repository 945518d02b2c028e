"""Whether a question fits a tool: the content words they share, read before any call.

Guided mode decides from this what the first reply of a question may be (``guided_schema``):
a tool the question shares no word with is not offered then, and when no tool fits, the
reply is an answer (the question is answered without a call, as a capable model declines a
tool that does not fit). Tools whose arguments come from what other tools showed (the file
tools: ``choice_specs``) explore the project and fit every question; this reads only the
others (an MCP server's, a library user's).

The words: ``minipi.reading.words`` (Latin words of 3+ letters less English function
words, cut by the one light stemmer: ``calculates``/``calculated`` -> ``calculat``; pairs of
adjacent Han characters), less the words of any function's schema (``_SCHEMA_WORDS``).
A tool's words come from its name (``get_current_time``, ``math.hypot``,
``camelCase`` split), its description, and each parameter's name and enum values, nested
ones included (not the parameters' descriptions: ``_schema_texts``). When the question and
the tool share no script (a Chinese question, an English tool), the words cannot tell:
``fit`` is None.

A question a tool answers nearly always names something its schema names, so sharing no word
is strong evidence that the tool does not fit, and sharing one is weak evidence that it does
(the measurements: bench/TUNING.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from minipi.ai.types import ToolSpec
from minipi.reading.words import words

__all__ = ["fit", "question_words", "tool_words"]

_SCHEMA_WORDS = frozenset(
    words(
        """value values number numbers list based provided specific specified certain type
        types input output return returns result results function functions call default
        optional required parameter parameters string integer float boolean array object dict
        true false none null more most other same such very given doing done using used like
        want need make"""
    )
)
"""The words of JSON Schema and of describing any function's parameters (``string``,
``required``, ``the value of``): every tool's schema holds them, so they tell nothing of
which tool a question fits."""
_MAX_DEPTH = 8


def question_words(text: str) -> frozenset[str]:
    """The content words of a question (module docstring)."""
    return frozenset(_words(text))


def tool_words(spec: ToolSpec) -> frozenset[str]:
    """The content words of a tool's name, description and parameters."""
    name = spec.name.replace("_", " ").replace(".", " ")
    texts = [name, spec.description, *_schema_texts(spec.parameters, 0)]
    return frozenset(w for text in texts for w in _words(text))


def fit(question: frozenset[str], tool: frozenset[str]) -> int | None:
    """How many content words ``question`` and ``tool`` share; None when they share no
    script (Latin, Han), so words cannot tell."""
    shared = len(question & tool)
    if shared or not question or not tool:
        return shared if question and tool else None
    scripts = {_script(w) for w in question} & {_script(w) for w in tool}
    return 0 if scripts else None


def _words(text: str) -> Iterator[str]:
    return (word for word in words(text) if word not in _SCHEMA_WORDS)


def _script(word: str) -> str:
    return "latin" if word.isascii() else "han"


def _schema_texts(schema: Any, depth: int) -> Iterator[str]:
    """The names and enum values of a parameters schema, nested ones too: what a tool works
    on. A parameter's description says how to call the tool (``the name of``, ``if the user
    gave none``), not what it does, and every schema's descriptions share such words."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return
    properties = schema.get("properties")
    for key, node in properties.items() if isinstance(properties, Mapping) else ():
        yield str(key).replace("_", " ")
        if isinstance(node, Mapping):
            values = node.get("enum")
            yield from (
                (str(v) for v in values if isinstance(v, str)) if isinstance(values, list) else ()
            )
            yield from _schema_texts(node, depth + 1)
            yield from _schema_texts(node.get("items"), depth + 1)
