"""A guided reply read back: the JSON the grammar allowed becomes neutral items, its
``FunctionCall``s or the answer ``Message``, whose cited facts ride on ``Message.cited``
(minipi's words, shown in minipi's block, never sent back as the model's text)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from minipi.ai.textcalls import find_text_calls, quoted_call
from minipi.ai.types import FunctionCall, Item, Message, ModelResponse, output_text
from minipi.errors import ModelProtocolError
from minipi.guided.facts import Facts

__all__ = ["Cited", "ResponseFormatStyle", "cited_lines", "dumps_json", "translate"]

ResponseFormatStyle: TypeAlias = Literal["json_object", "json_schema"]


def cited_lines(facts: Sequence[str], origins: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Each fact with the file it was read from when ``origins`` knows it
    (``orders: 128 (reports/daily.json)``): a line such as ``性格：亲人，爱晒太阳`` says little
    without it. What the answer ``Message`` carries as ``cited``."""
    where = origins or {}
    return tuple(f"{fact} ({where[fact]})" if fact in where else fact for fact in facts)


def dumps_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Cited:
    """The facts offered to one reply and its question; set when the reply cited facts: the
    composed answer and the reply as the model wrote it (minus facts not offered)."""

    offered: Facts
    question: str
    composed: Message | None = None
    reply: Message | None = None


def translate(
    response: ModelResponse,
    style: ResponseFormatStyle,
    cited: Cited | None = None,
    offered: Collection[str] = (),
    declared: Collection[str] = (),
    history: Sequence[Item] = (),
) -> ModelResponse:
    """The guided JSON reply as neutral items: its ``FunctionCall``s (one, or a list) or an
    answer ``Message`` (composed with the facts it cites, of those ``cited`` offered).

    An answer whose text is a call of a ``declared`` tool (the guided form, or any form
    ``find_text_calls`` reads) is that call: a reply that is a call is never shown as an
    answer: a model offered both may write its call as the answer's text, and the loop then
    checks the call like any other (arguments, approval, sandbox). A call of a tool the grammar
    did not ``offer`` this reply (a second change, the last turn's answer) is a protocol error,
    never run: the text must not get round what the grammar withholds. An answer that quotes a
    call a tool result of ``history`` holds (a project file's ``<tool_call>``) is an answer:
    quoting is not deciding (``minipi.ai.textcalls``, rule 2)."""
    if response.finish_reason in ("length", "content_filter"):
        return response  # cut or filtered: the loop ends the run, nothing here is executed
    text = output_text(response.items)
    if not text:
        return replace(response, items=())  # the loop's empty-reply rule applies
    value = _reply_value(text, style)
    calls = _calls(value)
    if calls:
        finish = _finish(response.finish_reason, "tool_calls")
        return replace(response, items=calls, finish_reason=finish)
    answer = _answer(value, cited or Cited(Facts(), ""))
    if answer is None:
        raise ModelProtocolError(
            f"the guided reply is neither a tool call nor an answer: {text[:160]!r}; "
            "the server may not enforce the response_format schema",
            code="guided_invalid_reply",
        )
    return _answered(response, answer, offered, declared, history)


def _reply_value(text: str, style: ResponseFormatStyle) -> Any:
    """The reply's text as JSON; a ``ModelProtocolError`` when it is not JSON."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise ModelProtocolError(
            f"the guided reply is not valid JSON despite the grammar ({str(error)[:80]}): "
            f"{text[:160]!r}; the server may ignore response_format in style {style!r} "
            "(llama-cpp-python wants 'json_object'; llama-server and vLLM 'json_schema')",
            code="guided_invalid_json",
        ) from None


def _answered(
    response: ModelResponse,
    answer: Message,
    offered: Collection[str],
    declared: Collection[str],
    history: Sequence[Item] = (),
) -> ModelResponse:
    """The reply as its answer: none when blank, the calls its text is when it is calls of
    ``declared`` tools (a ``ModelProtocolError`` for one not ``offered``), else the answer."""
    if not answer.text.strip():
        return replace(response, items=())  # a blank answer is an empty reply
    written = _written_calls(answer.text, declared, history)
    withheld = sorted({call.name for call in written} - set(offered))
    if withheld:
        raise ModelProtocolError(
            f"the guided answer is a call of {', '.join(withheld)}, which this reply "
            f"may not make: {answer.text[:160]!r}",
            code="guided_invalid_reply",
        )
    finish = response.finish_reason
    if written:
        return replace(response, items=written, finish_reason=_finish(finish, "tool_calls"))
    return replace(response, items=(answer,), finish_reason=_finish(finish, "stop"))


def _calls(value: Any) -> tuple[FunctionCall, ...]:
    """``{"tool": NAME, "arguments": {...}}``, or a list of such objects, as calls (none when
    ``value`` is not that). A call the list repeats identically is made once: the grammar
    cannot say "not the same again" and a small model under a list grammar repeats itself.
    The cost: a tool whose identical calls differ (a random draw) is asked once a reply, and
    the model may ask again; a question that wants the same call twice in one reply is
    rare."""
    listed = value if isinstance(value, list) else [value]
    once = {json.dumps(item, sort_keys=True): item for item in listed}  # first place kept
    calls = [_call(item) for item in once.values()]
    if not calls or any(call is None for call in calls):
        return ()
    return tuple(call for call in calls if call is not None)


def _written_calls(
    text: str, tool_names: Collection[str], history: Sequence[Item] = ()
) -> tuple[FunctionCall, ...]:
    """The calls an answer's text is, when it is one (the prose around them dropped; a
    malformed one is named ``invalid_tool_call``, which the loop answers with an error)."""
    if not tool_names:
        return ()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    calls = _calls(value)
    if calls and all(call.name in tool_names for call in calls):
        quoted = any(quoted_call(c.name, c.arguments, text, history) for c in calls)
        return () if quoted else calls
    found = find_text_calls(text, tool_names, history)
    if found is None:
        return ()
    return tuple(FunctionCall(c.call_id, c.name, c.arguments) for c in found.calls)


def _call(value: Any) -> FunctionCall | None:
    if not isinstance(value, dict) or set(value) != {"tool", "arguments"}:
        return None
    name, arguments = value["tool"], value["arguments"]
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return FunctionCall(f"call_guided_{uuid.uuid4().hex[:12]}", name, dumps_json(arguments))


def _answer(value: Any, cited: Cited) -> Message | None:
    """``{"answer": TEXT}`` or ``{"facts": [...], "answer": TEXT}`` as a message, else None."""
    if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
        return None
    text, facts = value["answer"], value.get("facts")
    if set(value) == {"answer"}:
        return Message("assistant", text)
    if set(value) != {"facts", "answer"} or not isinstance(facts, list):
        return None
    return _with_facts(text, facts, cited)


def _with_facts(text: str, facts: list[Any], cited: Cited) -> Message:
    """The answer with the facts it cites of those ``cited`` offered (recorded on ``cited``);
    the text alone when it cites none of them or is blank."""
    offered = cited.offered.citable
    kept = tuple(dict.fromkeys(f for f in facts if isinstance(f, str) and f in offered))
    if not kept or not text.strip():
        return Message("assistant", text)
    cited.reply = Message("assistant", dumps_json({"facts": list(kept), "answer": text}))
    cited.composed = Message("assistant", text, cited=cited_lines(kept, cited.offered.origins))
    return cited.composed


def _finish(
    sent: str, meant: Literal["stop", "tool_calls"]
) -> Literal["stop", "tool_calls", "unknown"]:
    return "unknown" if sent == "unknown" else meant  # a missing finish reason stays missing


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
