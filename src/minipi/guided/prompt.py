"""The system message of a guided run: the tools as guided mode offers them and the reply
protocol of the answer form (``GuidedClient`` sends it; static for a given tool list, so the
engine's prefix cache holds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from minipi.ai.types import JsonObject, ToolSpec
from minipi.guided.grammar import AnswerForm
from minipi.guided.reply import dumps_json
from minipi.guided.schema import explores, required_parameters

__all__ = ["guided_instructions"]

_PROTOCOL = """Reply with exactly one JSON object and nothing else:
{"tool": "<tool name>", "arguments": {...}} calls a tool; its result comes back to you.
"""
_ANSWER = """{"answer": "<your answer>"} is your final answer to the user.
Use the tools to find the facts first. As soon as a tool result holds what the question asks
for, reply with {"answer": ...} and give the facts from that result."""
_FACTS = """{"facts": [...], "answer": "..."} is your final answer to the user: the facts are
copied from the tool results, the answer is your reply in the question's language.
Use the tools to find the facts first. As soon as a tool result holds what the question asks
for, reply with {"facts": [...], "answer": ...}: first copy the facts that answer the
question, then write the answer with them."""
# Not said: "a question that asks for a change is answered after the change". A sentence
# of the prompt is paid for by every question; the order of a change and its answer is the
# grammar's to enforce (guided_schema), not a wording's.
_DIGITS = "\nEvery number in your answer is copied from a tool result."
_PROTOCOLS: Mapping[AnswerForm, str] = {
    "plain": _PROTOCOL + _ANSWER,
    "digits": _PROTOCOL + _ANSWER + _DIGITS,
    "facts": _PROTOCOL + _FACTS,
    "facts_digits": _PROTOCOL + _FACTS + _DIGITS,
}
# With tools that take their arguments from the question (not only the file tools): several
# calls in one reply, and an answer without a call when no tool fits.
_CALLS = """Reply with exactly one JSON value and nothing else:
[{"tool": "<tool name>", "arguments": {...}}] calls tools (one, or several at once, each its
own object in the list); their results come back to you. When the question asks the same
for several things (cities, years, values), make one call for each.
"""
_ANSWER_FORMS: Mapping[AnswerForm, str] = {
    "plain": '{"answer": "<your answer>"} is your final answer to the user.',
    "digits": '{"answer": "<your answer>"} is your final answer to the user.' + _DIGITS,
    "facts": '{"facts": [...], "answer": "..."} is your final answer to the user: the facts '
    "are copied from the tool results, the answer is your reply in the question's language.",
}
_DECLINE = "\nCall the tools the question needs. If no tool fits the question, answer it directly."


def guided_instructions(
    instructions: str | None,
    tools: Sequence[ToolSpec],
    answer: AnswerForm = "facts",
    *,
    lists: bool = True,
    optional: bool = True,
) -> str:
    """The system message: the caller's instructions, the tools (as guided mode offers
    them: ``optional`` parameters too or not) and the reply protocol for the ``answer``
    form (with ``lists``, calls are a list where the tools allow it). Static for a given
    tool list."""
    lines = ["You can use these tools:"]
    for tool in tools:
        lines.extend(_declaration(tool, optional))
    tools_text = "\n".join(lines) if tools else "You have no tools."
    head = f"{instructions.strip()}\n\n" if instructions and instructions.strip() else ""
    return f"{head}{tools_text}\n\n{_protocol(tools, answer, lists)}"


def _declaration(tool: ToolSpec, optional: bool = True) -> list[str]:
    """A tool as the system prompt declares it: ``- name(a: string, b?: integer): what it
    does``, then each parameter's description. An exploring tool's required parameters
    only (as its grammar has them); another tool's all (with ``optional``), ``?`` marking
    the optional ones."""
    properties = tool.parameters.get("properties")
    shown = required_parameters(tool.parameters)
    if optional and not explores(tool) and isinstance(properties, dict):
        shown = {n: s for n, s in properties.items() if isinstance(s, dict)}
    needed = set(required_parameters(tool.parameters))
    signature = ", ".join(
        f"{name}{'' if name in needed else '?'}: {_type_name(schema)}"
        for name, schema in shown.items()
    )
    described = (f"  {name}: {text}" for name, s in shown.items() if (text := _described(s)))
    return [f"- {tool.name}({signature}): {tool.description}", *described]


def _described(schema: JsonObject) -> str:
    """A parameter's description, with its values when it lists them and its default: the
    grammar offers the values, the words tell which one the question means: a value the
    model has not seen described, or a default it has not been told, it can only guess (a
    model's own chat template shows the whole schema for the same reason)."""
    words = " ".join(str(schema.get("description") or "").split())
    values = schema.get("enum")
    if isinstance(values, list) and values:
        shown = ", ".join(_short(v) for v in values[:_SHOWN_VALUES])
        more = f" and {len(values) - _SHOWN_VALUES} more" if len(values) > _SHOWN_VALUES else ""
        words += f" One of: {shown}{more}."
    if "default" in schema:
        words += f" Default: {_short(schema['default'])}."
    return words.strip()


_SHOWN_VALUES = 16
"""The most values of one parameter the prompt lists (a server's schema may list thousands;
the grammar still offers them all)."""


def _short(value: object) -> str:
    """A value as JSON, at most 80 characters (a default may be a whole document)."""
    text = dumps_json(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _type_name(schema: JsonObject) -> str:
    kind = schema.get("type", "value")
    return "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)


def _protocol(tools: Sequence[ToolSpec], answer: AnswerForm, lists: bool) -> str:
    """The reply protocol: the file tools' (measured with them) when every tool explores,
    else with calls as a list (``lists``) and answers without a call."""
    if all(explores(tool) for tool in tools):
        return _PROTOCOLS[answer]
    form = _ANSWER_FORMS["facts" if answer == "facts_digits" else answer]
    digits = _DIGITS if answer == "facts_digits" else ""
    return (_CALLS if lists else _PROTOCOL) + form + digits + _DECLINE
