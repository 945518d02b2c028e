"""Guided tool calling for small local models: each reply is one valid call or an answer.

``GuidedClient`` wraps a chat-wire ``ModelClient`` (a llama.cpp-compatible server) and
constrains every reply with a JSON-Schema grammar sent as ``response_format``. The loop does
not know: it sends ordinary neutral requests and gets ordinary neutral items back.

What the server sees instead of the neutral request:

- no native tools; the tool declarations and the reply protocol are appended to the system
  instructions, which therefore never change during a run (the engine's prefix cache holds);
- the history as plain messages (tiny models' chat templates do not know the tool role): an
  earlier call as the assistant's ``{"tool": NAME, "arguments": {...}}``, an earlier answer as
  ``{"answer": TEXT}``, a tool result as a user message
  ``Result of list_files {"path": "reports"}:\\n<output>``; reasoning is left out. Each item is
  rendered once and the same ``Message`` object is reused on later turns, so the inner
  client's fragment cache and the server's prefix cache both hit;
- the constraint, rebuilt every turn from the history, only in ``response_format``
  (``guided_schema``): one branch per tool that can still be called usefully, plus the
  answer branch when it is allowed.

The rules of the schema are in ``minipi.local.guided_schema``.

Styles of ``response_format``: ``"json_object"`` (``{"type": "json_object", "schema": S}``,
what llama-cpp-python's server accepts; its 0.3.x refuses ``json_schema`` with an error) and
``"json_schema"`` (``{"type": "json_schema", "json_schema": {"name", "schema": S}}``, what
llama.cpp's llama-server, vLLM and OpenAI accept).

A reply that is not JSON despite the grammar, or that is neither shape, raises
``ModelProtocolError`` (the server probably ignores ``response_format``). A well-formed call
the schema did not allow is passed on and the loop's own checks answer it (llama-cpp-python
silently falls back to a plain-JSON grammar for a schema it cannot convert). A blank answer
is an empty reply (the loop asks once more); a reply cut at the token limit passes through
with finish ``length``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeAlias

from minipi.ai.think import strip_think
from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    output_text,
)
from minipi.errors import ConfigError, ModelProtocolError
from minipi.local.guided_schema import (
    ANSWER_BRANCH,
    guided_schema,
    loads_or_none,
    required_parameters,
)

__all__ = [
    "ANSWER_BRANCH",
    "GuidedClient",
    "ResponseFormatStyle",
    "guided_instructions",
    "guided_schema",
    "response_format",
]

ResponseFormatStyle: TypeAlias = Literal["json_object", "json_schema"]

_PROTOCOL = """Reply with exactly one JSON object and nothing else:
{"tool": "<tool name>", "arguments": {...}} calls a tool; its result comes back to you.
{"answer": "<your answer>"} is your final answer to the user.
Use the tools to find the facts first. As soon as a tool result holds what the question asks
for, reply with {"answer": ...} and give the facts from that result."""


class GuidedClient:
    """A ``ModelClient`` that makes the inner (chat-wire) client's replies grammar-guided.

    ``style`` picks the ``response_format`` shape the server understands. Which tools change
    things is read from each request's tools (``ToolSpec.mutating``), never from their names:
    after a successful call of one, identical calls made before it become allowed again;
    ``answer_needs_evidence`` withholds the answer until a tool result follows the question;
    ``free_text`` offers tools that take free-text arguments (off: tiny models fill them with
    noise, so only tools whose required arguments all come from discovered values are offered);
    ``offer_mutating=False`` leaves the tools flagged ``mutating`` out of the grammar (when no
    approval can be given, a tiny model's stray change could only be refused).
    """

    def __init__(
        self,
        inner: ModelClient,
        *,
        style: ResponseFormatStyle = "json_object",
        answer_needs_evidence: bool = True,
        free_text: bool = False,
        offer_mutating: bool = True,
    ) -> None:
        self.inner = inner
        self.style = style
        self.answer_needs_evidence = answer_needs_evidence
        self.free_text = free_text
        self.offer_mutating = offer_mutating
        self._rendered: dict[int, tuple[Item, Message | None]] = {}

    def create(self, request: ModelRequest) -> ModelResponse:
        """Rewrite ``request`` for the grammar, ask the inner client, translate the reply."""
        if "response_format" in request.options:
            raise ConfigError(
                "request options may not set response_format in guided mode: "
                "GuidedClient builds it every turn",
                code="reserved_option",
            )
        mutating = frozenset(t.name for t in request.tools if t.mutating)
        tools = request.tools
        if not self.offer_mutating:
            tools = [t for t in tools if not t.mutating]
        schema = guided_schema(
            tools,
            request.items,
            request.tool_choice,
            mutating=mutating,
            answer_needs_evidence=self.answer_needs_evidence,
            free_text=self.free_text,
        )
        options = {**request.options, "response_format": response_format(schema, self.style)}
        guided = ModelRequest(
            items=self._render(request.items),
            instructions=guided_instructions(request.instructions, request.tools),
            parallel_tool_calls=request.parallel_tool_calls,
            options=options,
        )
        return _translate(self.inner.create(guided), self.style)

    @property
    def model(self) -> str:
        return self.inner.model

    def close(self) -> None:
        self.inner.close()

    def _render(self, items: Sequence[Item]) -> list[Item]:
        """The history as plain messages, reusing each item's rendering from earlier turns.

        The cache is keyed by item identity (checked, so a reused id is never confused) and
        keeps only the current history; a client shared by threads stays correct."""
        calls = {i.call_id: i for i in items if isinstance(i, FunctionCall)}
        previous, current = self._rendered, {}
        rendered: list[Item] = []
        for item in items:
            hit = previous.get(id(item))
            message = hit[1] if hit is not None and hit[0] is item else _render(item, calls)
            current[id(item)] = (item, message)
            if message is not None:
                rendered.append(message)
        self._rendered = current
        return rendered


def response_format(schema: JsonObject, style: ResponseFormatStyle) -> JsonObject:
    """The ``response_format`` request value for ``schema`` in the server's ``style``."""
    if style == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "guided_reply", "strict": True, "schema": schema},
        }
    return {"type": "json_object", "schema": schema}


def guided_instructions(instructions: str | None, tools: Sequence[ToolSpec]) -> str:
    """The system message: the caller's instructions, the tools (required parameters only,
    as guided mode offers them) and the reply protocol. Static for a given tool list."""
    lines = ["You can use these tools:"]
    for tool in tools:
        required = required_parameters(tool.parameters)
        signature = ", ".join(f"{n}: {s.get('type', 'value')}" for n, s in required.items())
        lines.append(f"- {tool.name}({signature}): {tool.description}")
        lines.extend(
            f"  {name}: {schema['description']}"
            for name, schema in required.items()
            if schema.get("description")
        )
    tools_text = "\n".join(lines) if tools else "You have no tools."
    head = f"{instructions.strip()}\n\n" if instructions and instructions.strip() else ""
    return f"{head}{tools_text}\n\n{_PROTOCOL}"


def _render(item: Item, calls: Mapping[str, FunctionCall]) -> Message | None:
    """One history item as a plain message (None for reasoning and empty messages)."""
    if isinstance(item, Message):
        if item.role != "assistant":
            return item
        text = strip_think(item.text).strip()
        return Message("assistant", _dumps({"answer": text})) if text else None
    if isinstance(item, FunctionCall):
        return Message("assistant", _dumps({"tool": item.name, "arguments": _shown(item)}))
    if isinstance(item, FunctionCallOutput):
        call = calls.get(item.call_id)
        head = f"Result of {call.name} {_dumps(_shown(call))}" if call else "Result"
        return Message("user", f"{head}:\n{item.output}")
    return None


def _shown(call: FunctionCall) -> Any:
    """A call's arguments as a JSON value: the parsed object, or the text as sent."""
    arguments = loads_or_none(call.arguments)
    return arguments if isinstance(arguments, dict) else call.arguments


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _translate(response: ModelResponse, style: ResponseFormatStyle) -> ModelResponse:
    """The guided JSON reply as neutral items: one ``FunctionCall`` or an answer ``Message``."""
    if response.finish_reason in ("length", "content_filter"):
        return response  # cut or filtered: the loop ends the run, nothing here is executed
    text = output_text(response.items)
    if not text:
        return replace(response, items=())  # the loop's empty-reply rule applies
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise ModelProtocolError(
            f"the guided reply is not valid JSON despite the grammar ({str(error)[:80]}): "
            f"{text[:160]!r}; the server may ignore response_format in style {style!r} "
            "(llama-cpp-python wants 'json_object'; llama-server and vLLM 'json_schema')",
            code="guided_invalid_json",
        ) from None
    finish = response.finish_reason
    if isinstance(value, dict) and set(value) == {"tool", "arguments"}:
        name, arguments = value["tool"], value["arguments"]
        if isinstance(name, str) and name and isinstance(arguments, dict):
            call = FunctionCall(f"call_guided_{uuid.uuid4().hex[:12]}", name, _dumps(arguments))
            return replace(response, items=(call,), finish_reason=_finish(finish, "tool_calls"))
    if isinstance(value, dict) and set(value) == {"answer"} and isinstance(value["answer"], str):
        if not value["answer"].strip():
            return replace(response, items=())  # a blank answer is an empty reply
        message = Message("assistant", value["answer"])
        return replace(response, items=(message,), finish_reason=_finish(finish, "stop"))
    raise ModelProtocolError(
        f"the guided reply is neither a tool call nor an answer: {text[:160]!r}; "
        "the server may not enforce the response_format schema",
        code="guided_invalid_reply",
    )


def _finish(
    sent: str, meant: Literal["stop", "tool_calls"]
) -> Literal["stop", "tool_calls", "unknown"]:
    return "unknown" if sent == "unknown" else meant  # a missing finish reason stays missing


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
