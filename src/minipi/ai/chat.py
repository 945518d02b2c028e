"""The Chat Completions wire: ``POST {base}/chat/completions`` (what most local servers speak).

Request (``encode``)::

    {"model", "messages": [{"role": "system", "content": instructions}?, ...],
     "tools": [{"type": "function", "function": {"name", "description", "parameters",
                "strict"?}}],
     "tool_choice": "auto" | "none" | "required" | {"type": "function", "function": {"name"}},
     "parallel_tool_calls", **options,
     "stream"?: true, "stream_options"?: {"include_usage": true}}

``tools``, ``tool_choice`` and ``parallel_tool_calls`` are left out when there are no tools
(OpenAI rejects them then). Options use this wire's names: ``max_output_tokens`` is sent as
``max_tokens`` and ``reasoning={"effort": E}`` as ``reasoning_effort=E``. Tools are declared
by ``declare.declare_tool``. When streaming, the usage chunk is asked for unless the options set
``stream_options`` themselves.

One assistant message becomes several neutral items (``Reasoning`` from ``reasoning_content``
or ``reasoning``, ``Message`` for the content, one ``FunctionCall`` per ``tool_calls`` entry),
all sharing the same ``raw`` dict; the encoder sends that message once, verbatim, for a run of
consecutive items sharing it (by identity, or by equality for items read back from a session).
Neutral assistant items without a chat ``raw`` are grouped into one assistant message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minipi.ai.declare import declare_tool
from minipi.ai.stream import ChatStream
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
from minipi.errors import ConfigError, ModelProtocolError

__all__ = ["WIRE", "decode", "encode"]

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the legacy name
    "length": "length",
    "content_filter": "content_filter",
    # Other servers' words for a natural end (TGI, Anthropic-compatible gateways).
    "eos": "stop",
    "eos_token": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
}
_Call = tuple[str, str, str]


def encode(request: ModelRequest, model: str, *, stream: bool) -> JsonObject:
    """The JSON body of ``request`` for ``model`` (see the module docstring)."""
    check_options(request.options)
    messages = _messages(request.items)
    if request.instructions:
        messages.insert(0, {"role": "system", "content": request.instructions})
    body: JsonObject = {"model": model, "messages": messages}
    if request.tools:
        choice = request.tool_choice
        body["tools"] = [declare_tool(t, "chat") for t in request.tools]
        body["tool_choice"] = (
            choice if choice in TOOL_CHOICES else {"type": "function", "function": {"name": choice}}
        )
        body["parallel_tool_calls"] = request.parallel_tool_calls
    body.update(_options(request.options))
    if request.output_schema is not None:
        schema = {"name": "answer", "schema": request.output_schema}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    if stream:
        body["stream"] = True
        if "stream_options" not in request.options:
            # Ask for the usage chunk (OpenAI, vLLM, llama.cpp, Ollama send it when asked).
            body["stream_options"] = {"include_usage": True}
    return body


def decode(
    data: JsonObject,
    tool_names: frozenset[str] = frozenset(),
    taken: frozenset[str] = frozenset(),
    history: Sequence[Item] = (),
) -> Decoded:
    """The answer's neutral items, finish reason and usage. ``tool_names`` are the request's
    tools: with some, a reply without native calls that is only calls written as text
    (``<tool_call>`` tags, fenced or bare JSON) is decoded as those calls, unless ``history``
    (the request's items) shows them quoted from a tool result or holds a native call
    (``textcalls.py``). A call whose id is in ``taken`` (the history's) or repeats one of the
    same reply gets a new id, in its raw copy too."""
    choice = _first_choice(data)
    message: JsonObject = choice["message"]
    raw, calls = _decode_calls(message, taken)
    raw = _replayable(raw)  # kept as it will be replayed: the same dict every turn
    items: list[Item] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        items.append(Reasoning(reasoning, raw, "chat"))
    text = _content_text(message.get("content"))
    found = None if calls else find_text_calls(text, tool_names, history)
    if found is not None:  # the reply is text calls: they share the raw message (textcalls.py)
        text = ""
        calls = [(c.name, c.arguments, c.call_id) for c in found.calls]
    if text:
        items.append(Message("assistant", text, raw, "chat"))
    items.extend(FunctionCall(cid, name, args, raw, "chat") for name, args, cid in calls)
    usage = read_usage(data, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
    return tuple(items), _finish(choice.get("finish_reason"), bool(calls)), usage


def _first_choice(data: JsonObject) -> JsonObject:
    """The answer's first choice, which has a message; else ``ModelProtocolError``."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ModelProtocolError("the response has no choices")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise ModelProtocolError("the response's first choice has no message")
    return choice


WIRE = WireApi("chat", "/chat/completions", "messages", encode, decode, ChatStream)


def _options(options: Mapping[str, Any]) -> JsonObject:
    """``options`` in this wire's names."""
    translated: JsonObject = {}
    for key, value in options.items():
        name, wire_value = key, value
        if key == "max_output_tokens":
            name = "max_tokens"
        elif key == "reasoning" and isinstance(value, Mapping) and set(value) == {"effort"}:
            name, wire_value = "reasoning_effort", value["effort"]
        if name in translated:
            raise ConfigError(
                f"request options set {name!r} twice (as {key!r} too)", code="reserved_option"
            )
        translated[name] = wire_value
    return translated


def _messages(items: Sequence[Item]) -> list[JsonObject]:
    """The chat messages of ``items``, in order: a run of items sharing a chat ``raw`` is one
    message, sent verbatim; a run of assistant items without one becomes one message.

    One loop, not split into helpers (radon grade C): it runs every turn over the whole
    history, and a builder with a method call an item cost 7% more per encode of a
    200-turn history (0.34 against 0.32 ms), which the per-turn overhead target feels."""
    messages: list[JsonObject] = []
    neutral: list[Item] = []  # the current run of assistant items without a chat raw
    sent: JsonObject | None = None  # the chat raw just sent (None after any other item)
    for item in items:
        if isinstance(item, FunctionCallOutput):
            message: JsonObject | None = {
                "role": "tool",
                "tool_call_id": item.call_id,
                "content": item.output,
            }
            sent = None
        elif item.wire == "chat" and item.raw is not None:
            raw = item.raw
            if raw is sent or (sent is not None and raw == sent):
                continue  # the rest of the message just sent
            message = sent = raw
            if raw.get("content", "") is None:
                message = _replayable(raw)
        else:
            sent = None
            message = None
            if isinstance(item, Message) and item.role != "assistant":
                message = {"role": item.role, "content": item.text}
        if message is None:
            neutral.append(item)
            continue
        if neutral:
            messages.append(_assistant_message(neutral))
            neutral = []
        messages.append(message)
    if neutral:
        messages.append(_assistant_message(neutral))
    return messages


def _decode_calls(message: JsonObject, taken: frozenset[str]) -> tuple[JsonObject, list[_Call]]:
    """The message's calls, and the message to keep as raw: a copy if an id was made up."""
    entries = message.get("tool_calls")
    if entries is None:
        return message, []
    if not isinstance(entries, list):
        raise ModelProtocolError("`tool_calls` is not a list")
    seen = set(taken)
    calls: list[_Call] = []
    patched = list(entries)
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ModelProtocolError(f"a tool call is not an object: {str(entry)[:80]}")
        function = entry.get("function")
        function = function if isinstance(function, dict) else {}
        call = decode_call(
            function.get("name"), function.get("arguments", ""), entry.get("id"), seen
        )
        if call[2] != entry.get("id"):
            patched[index] = {**entry, "id": call[2]}
        calls.append(call)
    if patched == entries:
        return message, calls
    # A made-up id goes into the raw copy too, so the replayed message and the tool result agree.
    return {**message, "tool_calls": patched}, calls


def _content_text(content: object) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ModelProtocolError(f"message content is neither text nor a list: {content!r:.80}")
    texts = (p.get("text") if isinstance(p, dict) else None for p in content)
    return "".join(t for t in texts if isinstance(t, str))


def _finish(reason: object, has_calls: bool) -> FinishReason:
    mapped = _FINISH.get(reason, "unknown") if isinstance(reason, str) else "unknown"
    # Some servers (older Ollama) say "stop" for a message with calls: name it consistently.
    return "tool_calls" if mapped == "stop" and has_calls else mapped


def _replayable(raw: JsonObject) -> JsonObject:
    """The assistant message as the server sent it, but with ``"content": null`` as ``""``:
    llama-cpp-python's chat templates fail (HTTP 500) on a null content, and every server
    accepts an empty one. ``decode`` keeps the raw in this form, so that replaying it is the
    same dict every turn (``client._HistoryJson`` then reuses its bytes by identity); items
    read back from an older session are patched as they are sent."""
    if "content" in raw and raw["content"] is None:
        return {**raw, "content": ""}
    return raw


def _assistant_message(group: Sequence[Item]) -> JsonObject:
    """One assistant message from neutral items (made on the other wire, or by hand)."""
    texts = [i.text for i in group if isinstance(i, Message)]
    calls = [i for i in group if isinstance(i, FunctionCall)]
    reasoning = "".join(i.text for i in group if isinstance(i, Reasoning))
    message: JsonObject = {"role": "assistant", "content": "".join(texts)}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
    return message
