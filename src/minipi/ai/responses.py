"""The OpenAI Responses wire: ``POST {base}/responses`` (the seed's API).

Request (``encode``)::

    {"model", "previous_response_id"?, "instructions"?, "input": [...],
     "tools": [{"type": "function", "name", "description", "parameters", "strict"}],
     "tool_choice": "auto" | "none" | "required" | {"type": "function", "name"},
     "parallel_tool_calls", "store": false, **options, "stream"?: true}

Tools are declared by ``declare.declare_tool``. ``previous_response_id`` and ``"store": true``
are set only by the chaining client (``chain.py``, ``ClientConfig(previous_response_id=True)``).

Input items: a user message is ``{"role": "user", "content": [{"type": "input_text", ...}]}``
(the seed's shape); a tool result is ``{"type": "function_call_output", "call_id", "output"}``;
an item the model produced on this wire is replayed verbatim from its ``raw`` output item,
reasoning included. Items from the chat wire are converted from their neutral fields, except
chat reasoning, which is left out: Responses servers want an id or encrypted content for a
reasoning input item that a chat reply cannot supply.
"""

from __future__ import annotations

from collections.abc import Sequence

from minipi.ai.declare import declare_tool
from minipi.ai.stream import ResponsesStream
from minipi.ai.textcalls import find_text_calls
from minipi.ai.types import (
    FinishReason,
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelRequest,
    Reasoning,
)
from minipi.ai.wire import (
    TOOL_CHOICES,
    Decoded,
    WireApi,
    check_options,
    decode_call,
    read_usage,
)
from minipi.errors import ModelProtocolError

__all__ = ["WIRE", "decode", "encode"]

_INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def encode(
    request: ModelRequest,
    model: str,
    *,
    stream: bool,
    previous_response_id: str | None = None,
    store: bool = False,
) -> JsonObject:
    """The JSON body of ``request`` for ``model`` (see the module docstring)."""
    check_options(request.options)
    body: JsonObject = {"model": model}
    if previous_response_id is not None:
        body["previous_response_id"] = previous_response_id
    if request.instructions:
        body["instructions"] = request.instructions
    choice = request.tool_choice
    body["input"] = [i for item in request.items if (i := _input_item(item)) is not None]
    body["tools"] = [declare_tool(t, "responses") for t in request.tools]
    body["tool_choice"] = choice if choice in TOOL_CHOICES else {"type": "function", "name": choice}
    body["parallel_tool_calls"] = request.parallel_tool_calls
    body["store"] = store
    body.update(request.options)
    if request.output_schema is not None:
        schema = {"type": "json_schema", "name": "answer", "schema": request.output_schema}
        body["text"] = {"format": schema}
    if stream:
        body["stream"] = True
    return body


def decode(
    data: JsonObject,
    tool_names: frozenset[str] = frozenset(),
    taken: frozenset[str] = frozenset(),
    history: Sequence[Item] = (),
) -> Decoded:
    """The answer's neutral items, finish reason and usage; ``tool_names``, ``taken`` and
    ``history`` as for ``chat.decode``."""
    output = data.get("output")
    if not isinstance(output, list):
        raise ModelProtocolError("the response has no `output` list")
    seen = set(taken)
    items = tuple(i for entry in output if (i := _output_item(entry, seen)) is not None)
    if tool_names and not any(isinstance(i, FunctionCall) for i in items):
        items = _with_text_calls(items, tool_names, history)
    finish = _finish(data, any(isinstance(i, FunctionCall) for i in items))
    usage = read_usage(data, "input_tokens", "output_tokens", "input_tokens_details")
    return items, finish, usage


WIRE = WireApi("responses", "/responses", "input", encode, decode, ResponsesStream)


def _input_item(item: Item) -> JsonObject | None:
    """One input item; None for an item this wire leaves out."""
    if isinstance(item, FunctionCallOutput):
        return {"type": "function_call_output", "call_id": item.call_id, "output": item.output}
    if item.raw is not None and item.wire == "responses":
        return item.raw
    if isinstance(item, Message):
        if item.role == "assistant":
            return {"role": "assistant", "content": item.text}
        return {"role": item.role, "content": [{"type": "input_text", "text": item.text}]}
    if isinstance(item, FunctionCall):
        return {
            "type": "function_call",
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
        }
    return None  # chat reasoning: see the module docstring


def _output_item(entry: object, seen: set[str]) -> Item | None:
    """One output item -> a neutral item keeping ``entry`` as raw; None for other kinds."""
    if not isinstance(entry, dict):
        raise ModelProtocolError(f"an `output` entry is not an object: {str(entry)[:80]}")
    kind = entry.get("type")
    if kind == "message":
        return Message("assistant", "".join(_texts(entry.get("content"))), entry, "responses")
    if kind == "function_call":
        sent_id = entry.get("call_id")
        name, arguments, call_id = decode_call(
            entry.get("name"), entry.get("arguments", ""), sent_id, seen
        )
        # A made-up id goes into the raw copy too, so the replayed call and its output agree.
        raw = entry if call_id == sent_id else {**entry, "call_id": call_id}
        return FunctionCall(call_id, name, arguments, raw, "responses")
    if kind == "reasoning":
        texts = _texts(entry.get("summary")) + _texts(entry.get("content"))
        return Reasoning("\n\n".join(texts), entry, "responses")
    return None  # built-in tool items (web search...) are not part of a minipi conversation


def _with_text_calls(
    items: tuple[Item, ...], tool_names: frozenset[str], history: Sequence[Item]
) -> tuple[Item, ...]:
    """A reply whose messages are only calls written as text (textcalls.py) with the calls
    in their place (a ``function_call`` input item carries each call on replay); else
    ``items`` as they are."""
    texts = [item.text for item in items if isinstance(item, Message)]
    found = find_text_calls("\n".join(texts), tool_names, history) if texts else None
    if found is None:
        return items
    calls = (FunctionCall(c.call_id, c.name, c.arguments) for c in found.calls)
    return (*(item for item in items if not isinstance(item, Message)), *calls)


def _texts(parts: object) -> list[str]:
    """The texts of a content/summary part list (any ``text`` part kind)."""
    if parts is None:
        return []
    if isinstance(parts, str):
        return [parts]
    if not isinstance(parts, list):
        raise ModelProtocolError(f"a content list is not a list: {str(parts)[:80]}")
    texts = (p.get("text") if isinstance(p, dict) else None for p in parts)
    return [t for t in texts if isinstance(t, str) and t]


def _finish(data: JsonObject, has_calls: bool) -> FinishReason:
    status = data.get("status")
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return _INCOMPLETE.get(reason, "unknown") if isinstance(reason, str) else "unknown"
    return "unknown"  # no status, or queued/in_progress: not a finished answer
