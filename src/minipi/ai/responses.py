"""The OpenAI Responses wire: ``POST {base}/responses`` (the seed's API).

Request::

    {"model", "instructions"?, "input": [...], "tools": [{"type": "function", "name",
     "description", "parameters", "strict": true}], "tool_choice", "parallel_tool_calls",
     "store": false, **options}

With ``ClientConfig(previous_response_id=True)`` the client chains instead: ``"store": true``,
and a request that extends the previous one adds ``"previous_response_id"`` after ``model``
and sends in ``input`` only the items added since that response (``ResponseChain``).

Input items: a user message is ``{"role": "user", "content": [{"type": "input_text", ...}]}``
(the seed's shape); a tool result is ``{"type": "function_call_output", "call_id", "output"}``;
an item the model produced on this wire is replayed verbatim from its ``raw`` output item,
reasoning included. Items from the chat wire are converted from their neutral fields, except
chat reasoning, which is left out: Responses servers want an id or encrypted content for a
reasoning input item that a chat reply cannot supply.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.stream import ResponsesStream, StreamReader
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
    ModelResponse,
    Reasoning,
    ToolSpec,
    Usage,
)
from minipi.ai.wire import WireClient, decode_call, dumps, read_usage
from minipi.errors import ModelHTTPError, ModelProtocolError

__all__ = ["ResponseChain", "ResponsesClient"]

_CHOICES = frozenset({"auto", "none", "required"})
_INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
_LOST_CHAIN = re.compile(r"previous[ _]response|response with id", re.IGNORECASE)


class ResponsesClient(WireClient):
    """``ModelClient`` for the Responses API. By default ``store`` is false and the whole
    history is sent; ``ClientConfig.previous_response_id`` chains requests instead."""

    path = "/responses"
    reserved = frozenset(
        {
            "model",
            "previous_response_id",
            "instructions",
            "input",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "store",
            "stream",
        }
    )

    def __init__(
        self,
        endpoint: Endpoint,
        config: ClientConfig | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(endpoint, config, transport=transport)
        self.chain = ResponseChain() if self.config.previous_response_id else None

    def create(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` (chained when possible, see ``ClientConfig.previous_response_id``)."""
        if self.chain is None:
            return super().create(request)
        items = tuple(request.items)
        data, sent = self._post_chained(request, self.chain.link(items))
        response = self.read_response(request, data, sent)
        self.chain.remember(items, response)
        return response

    def _post_chained(
        self, request: ModelRequest, link: tuple[str, list[bytes]] | None
    ) -> tuple[JsonObject, int]:
        """POST the chained body for ``link``; the full history without a link, or once when
        the server has lost the previous response."""
        if link is not None:
            previous, fragments = link
            try:
                return self.post(lambda: self.encode_chained(request, previous, fragments), request)
            except ModelHTTPError as exc:
                if not _chain_lost(exc):
                    raise
        return self.post(lambda: self.encode(request), request)

    def encode_chained(self, request: ModelRequest, previous: str, fragments: list[bytes]) -> bytes:
        """A body chained to response ``previous``, whose ``input`` is ``fragments``."""
        head, tail = self.encode_envelope(request, previous)
        options = self.encode_options(request.options) + self.encode_stream(request)
        return b"".join((head, b",".join(fragments), tail, options, b"}"))

    def encode_envelope(
        self, request: ModelRequest, previous: str | None = None
    ) -> tuple[bytes, bytes]:
        head = b'{"model":' + dumps(self.endpoint.model)
        if previous is not None:
            head += b',"previous_response_id":' + dumps(previous)
        if request.instructions:
            head += b',"instructions":' + dumps(request.instructions)
        choice = request.tool_choice
        tail = b"".join(
            (
                b'],"tools":',
                self.tools_json(tuple(request.tools)),
                b',"tool_choice":',
                dumps(choice if choice in _CHOICES else {"type": "function", "name": choice}),
                b',"parallel_tool_calls":',
                b"true" if request.parallel_tool_calls else b"false",
                b',"store":false' if self.chain is None else b',"store":true',
            )
        )
        return head + b',"input":[', tail

    def stream_reader(self, on_delta: DeltaSink | None) -> StreamReader:
        return ResponsesStream(on_delta)

    def encode_tool(self, tool: ToolSpec) -> JsonObject:
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": True,
        }

    def encode_unit(self, items: tuple[Item, ...], start: int) -> tuple[int, bytes]:
        return start + 1, _input_item(items[start])

    def decode(
        self,
        data: JsonObject,
        tool_names: frozenset[str] = frozenset(),
        taken: frozenset[str] = frozenset(),
    ) -> tuple[tuple[Item, ...], FinishReason, Usage]:
        output = data.get("output")
        if not isinstance(output, list):
            raise ModelProtocolError("the response has no `output` list")
        seen = set(taken)
        items = tuple(i for entry in output if (i := _output_item(entry, seen)) is not None)
        if tool_names and not any(isinstance(i, FunctionCall) for i in items):
            items = tuple(_with_text_calls(items, tool_names))
        finish = _finish(data, any(isinstance(i, FunctionCall) for i in items))
        usage = read_usage(data, "input_tokens", "output_tokens", "input_tokens_details")
        return items, finish, usage


@dataclass(frozen=True, slots=True)
class _Link:
    """A stored response to chain from: its id and the history the server holds for it."""

    response_id: str
    history: tuple[Item, ...]  # what its request sent, then its output items


class ResponseChain:
    """The last stored response of each thread's conversation, and whether a history extends
    it. Like ``FragmentCache``: a C-speed tuple comparison (identity first, then equality);
    items and their ``raw`` dicts are treated as immutable."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def link(self, items: tuple[Item, ...]) -> tuple[str, list[bytes]] | None:
        """``(previous_response_id, input fragments of the new items)`` when ``items`` is the
        last link's history plus new items that put something on the wire; else None."""
        last: _Link | None = getattr(self._local, "last", None)
        if last is None or len(items) <= len(last.history):
            return None
        if items[: len(last.history)] != last.history:
            return None
        fragments = [f for item in items[len(last.history) :] if (f := _input_item(item))]
        return (last.response_id, fragments) if fragments else None

    def remember(self, items: tuple[Item, ...], response: ModelResponse) -> None:
        """``response`` answered ``items``: the next request may chain from it if the server
        gave it an id and its items are the output the server stored, verbatim."""
        if response.id is None or not _verbatim(response):
            self._local.last = None
            return
        self._local.last = _Link(response.id, items + response.items)


def _verbatim(response: ModelResponse) -> bool:
    """Every item is an output entry of the answer as sent (not a rewritten copy)."""
    output = response.raw.get("output")
    entries = {id(entry) for entry in output} if isinstance(output, list) else set()
    return all(
        isinstance(item, Message | FunctionCall | Reasoning) and id(item.raw) in entries
        for item in response.items
    )


def _chain_lost(exc: ModelHTTPError) -> bool:
    """The server does not know the previous response (expired, never stored, another
    server). A 404's own text is not kept by the HTTP layer, so any 404 but a missing model
    counts (the same URL answered the request that made the response)."""
    if exc.status == 404:
        return exc.code != "model_not_found"
    return exc.status == 400 and _LOST_CHAIN.search(exc.message) is not None


def _input_item(item: Item) -> bytes:
    """One input item as JSON; ``b""`` for an item this wire leaves out."""
    if isinstance(item, FunctionCallOutput):
        return dumps(
            {"type": "function_call_output", "call_id": item.call_id, "output": item.output}
        )
    if item.raw is not None and item.wire == "responses":
        return dumps(item.raw)
    if isinstance(item, Message):
        if item.role == "assistant":
            return dumps({"role": "assistant", "content": item.text})
        return dumps({"role": item.role, "content": [{"type": "input_text", "text": item.text}]})
    if isinstance(item, FunctionCall):
        return dumps(
            {
                "type": "function_call",
                "call_id": item.call_id,
                "name": item.name,
                "arguments": item.arguments,
            }
        )
    return b""  # chat reasoning: see the module docstring


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


def _with_text_calls(items: tuple[Item, ...], tool_names: frozenset[str]) -> Iterator[Item]:
    """Messages holding ``<tool_call>`` text become neutral items: their prose, then the calls
    (a ``function_call`` input item carries each call on replay; see textcalls.py)."""
    for item in items:
        found = find_text_calls(item.text, tool_names) if isinstance(item, Message) else None
        if found is None:
            yield item
            continue
        if found.text:
            yield Message("assistant", found.text)
        yield from (FunctionCall(c.call_id, c.name, c.arguments) for c in found.calls)


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
