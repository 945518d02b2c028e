"""The Chat Completions wire: ``POST {base}/chat/completions`` (what most local servers speak).

Request::

    {"model", "messages": [{"role": "system", "content": instructions}?, ...],
     "tools": [{"type": "function", "function": {"name", "description", "parameters"}}],
     "tool_choice": "auto" | "none" | "required" | {"type": "function", "function": {"name"}},
     "parallel_tool_calls", **options}

``tools``, ``tool_choice`` and ``parallel_tool_calls`` are left out when there are no tools
(OpenAI rejects them then). Options use this wire's names: ``max_output_tokens`` is sent as
``max_tokens`` and ``reasoning={"effort": E}`` as ``reasoning_effort=E``.

One assistant message becomes several neutral items (``Reasoning`` from ``reasoning_content``
or ``reasoning``, ``Message`` for the content, one ``FunctionCall`` per ``tool_calls`` entry),
all sharing the same ``raw`` dict; the encoder sends that message once, verbatim, for a run of
consecutive items sharing it (by identity, or by equality for items read back from a session).
Neutral assistant items without a chat ``raw`` are grouped into one assistant message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minipi.ai.stream import ChatStream, StreamReader
from minipi.ai.textcalls import find_text_calls
from minipi.ai.types import (
    DeltaSink,
    FinishReason,
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelRequest,
    Reasoning,
    ToolSpec,
    Usage,
)
from minipi.ai.wire import WireClient, decode_call, dumps, read_usage
from minipi.errors import ConfigError, ModelProtocolError

__all__ = ["ChatClient"]

_CHOICES = frozenset({"auto", "none", "required"})
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


class ChatClient(WireClient):
    """``ModelClient`` for the Chat Completions API."""

    path = "/chat/completions"
    reserved = frozenset(
        {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream"}
    )

    def wire_options(self, options: Mapping[str, Any]) -> JsonObject:
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

    def stream_reader(self, on_delta: DeltaSink | None) -> StreamReader:
        return ChatStream(on_delta)

    def encode_stream(self, request: ModelRequest) -> bytes:
        if not self.config.stream:
            return b""
        if "stream_options" in request.options:
            return b',"stream":true'
        # Ask for the usage chunk (OpenAI, vLLM, llama.cpp, Ollama send it when asked).
        return b',"stream":true,"stream_options":{"include_usage":true}'

    def encode_envelope(self, request: ModelRequest) -> tuple[bytes, bytes]:
        head = b'{"model":' + dumps(self.endpoint.model) + b',"messages":['
        if not request.tools:
            return head, b"]"
        choice = request.tool_choice
        tail = b"".join(
            (
                b'],"tools":',
                self.tools_json(tuple(request.tools)),
                b',"tool_choice":',
                dumps(
                    choice
                    if choice in _CHOICES
                    else {"type": "function", "function": {"name": choice}}
                ),
                b',"parallel_tool_calls":',
                b"true" if request.parallel_tool_calls else b"false",
            )
        )
        return head, tail

    def encode_tool(self, tool: ToolSpec) -> JsonObject:
        return {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }

    def encode_history(self, request: ModelRequest) -> list[bytes]:
        history = self.cache.fragments(request.items)
        if not request.instructions:
            return history
        return [dumps({"role": "system", "content": request.instructions}), *history]

    def encode_unit(self, items: tuple[Item, ...], start: int) -> tuple[int, bytes]:
        item = items[start]
        if isinstance(item, FunctionCallOutput):
            return start + 1, dumps(
                {"role": "tool", "tool_call_id": item.call_id, "content": item.output}
            )
        if item.raw is not None and item.wire == "chat":
            end = start + 1
            while end < len(items) and _shares_message(items[end], item.raw):
                end += 1
            return end, dumps(_replayable(item.raw))
        if isinstance(item, Message) and item.role != "assistant":
            return start + 1, dumps({"role": item.role, "content": item.text})
        end = start + 1
        while end < len(items) and _neutral_assistant(items[end]):
            end += 1
        return end, dumps(_assistant_message(items[start:end]))

    def decode(
        self,
        data: JsonObject,
        tool_names: frozenset[str] = frozenset(),
        taken: frozenset[str] = frozenset(),
    ) -> tuple[tuple[Item, ...], FinishReason, Usage]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ModelProtocolError("the response has no choices")
        choice = choices[0]
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            raise ModelProtocolError("the response's first choice has no message")
        message: JsonObject = choice["message"]
        raw, calls = _decode_calls(message, taken)
        items: list[Item] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            items.append(Reasoning(reasoning, raw, "chat"))
        text = _content_text(message.get("content"))
        found = None if calls else find_text_calls(text, tool_names)
        if found is not None:  # <tool_call> text: the calls share the raw message (textcalls.py)
            text = found.text
            calls = [(c.name, c.arguments, c.call_id) for c in found.calls]
        if text:
            items.append(Message("assistant", text, raw, "chat"))
        items.extend(FunctionCall(cid, name, args, raw, "chat") for name, args, cid in calls)
        usage = read_usage(data, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
        return tuple(items), _finish(choice.get("finish_reason"), bool(calls)), usage


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


def _shares_message(item: Item, raw: JsonObject) -> bool:
    if isinstance(item, FunctionCallOutput) or item.wire != "chat" or item.raw is None:
        return False
    return item.raw is raw or item.raw == raw


def _replayable(raw: JsonObject) -> JsonObject:
    """The assistant message as the server sent it, but with ``"content": null`` as ``""``:
    llama-cpp-python's chat templates fail (HTTP 500) on a null content, and every server
    accepts an empty one."""
    if "content" in raw and raw["content"] is None:
        return {**raw, "content": ""}
    return raw


def _neutral_assistant(item: Item) -> bool:
    """An assistant-side item with no chat message of its own to replay."""
    if isinstance(item, FunctionCallOutput) or (item.raw is not None and item.wire == "chat"):
        return False
    return not (isinstance(item, Message) and item.role != "assistant")


def _assistant_message(group: tuple[Item, ...]) -> JsonObject:
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
