"""What the two wire modules share: the client skeleton, the fragment cache, call decoding.

Per-turn cost matters (a 200-turn run re-sends a history that grows every turn), so a request
body is never encoded whole: each wire message is encoded once into a JSON fragment (bytes),
the ``FragmentCache`` reuses the previous request's fragments for the part of the history
that did not change, and the body is the join of the fragments inside a small envelope.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.http import HttpCore
from minipi.ai.stream import StreamReader, raise_inband_error
from minipi.ai.types import (
    DeltaSink,
    FinishReason,
    FunctionCall,
    Item,
    JsonObject,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    Usage,
    new_call_id,
)
from minipi.errors import ConfigError, ModelProtocolError

__all__ = ["FragmentCache", "WireClient", "decode_call", "dumps", "new_call_id", "read_usage"]


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as servers usually send it (so replayed items stay byte-identical)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate (from a "\\ud800" escape): keep it escaped
        return json.dumps(value, separators=(",", ":")).encode()


def decode_call(
    name: object, arguments: object, call_id: object, seen: set[str]
) -> tuple[str, str, str]:
    """One tool call as the wire sent it -> ``(name, arguments JSON text, call_id)``.

    ``arguments`` may be a JSON string (as sent), an object (Ollama: dumped to JSON) or
    anything else (dumped too, so the loop reports it as invalid arguments). A missing, empty
    or already ``seen`` call id is replaced by ``new_call_id()``; the caller patches it into
    the raw copy it keeps. A call without a name is a ``ModelProtocolError``: nothing sensible
    can be answered to it. Names are otherwise kept as sent (the loop handles unknown tools).
    """
    if not isinstance(name, str) or not name:
        shown = "" if name is None or name == "" else f" (name: {str(name)[:40]!r})"
        raise ModelProtocolError(
            f"the model sent a tool call without a name{shown}; its "
            "answer cannot be used — retry, or use a model/server with "
            "working tool calling",
            code="malformed_call",
        )
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(call_id, str) or not call_id or call_id in seen:
        call_id = new_call_id()
    seen.add(call_id)
    return name, arguments, call_id


def read_usage(data: Any, inputs: str, outputs: str, details: str) -> Usage:
    """Token counts from a ``usage`` object; absent or odd fields count 0."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return Usage(requests=1)
    detail = usage.get(details)
    cached = detail.get("cached_tokens") if isinstance(detail, dict) else 0
    return Usage(_count(usage.get(inputs)), _count(usage.get(outputs)), _count(cached), 1)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True, slots=True)
class _Encoded:
    """What one request sent: its items and the fragments of its wire messages."""

    items: tuple[Item, ...]
    starts: list[int]  # index in ``items`` where the message of each fragment begins
    fragments: list[bytes]


UnitEncoder = Callable[[tuple[Item, ...], int], tuple[int, bytes]]
"""``(items, start) -> (end, fragment)``: the wire message made of ``items[start:end]``;
``b""`` if the wire leaves those items out."""


class FragmentCache:
    """Encoded history of the previous request, reused when the next one extends it.

    A loop's history only grows, so request k+1 almost always starts with request k's items.
    When it does (a C-speed tuple comparison: identity first, then equality, and equal
    frozen items encode equally), every fragment but the last is reused and encoding resumes
    at the last message, which new items may extend (a chat message's items arrive together,
    but a neutral group may grow). Otherwise the history is encoded afresh. State is per
    thread, so a client shared by threads stays correct; memory is one history per thread.
    Items and their ``raw`` dicts are treated as immutable.
    """

    __slots__ = ("_local", "_unit")

    def __init__(self, unit: UnitEncoder) -> None:
        self._unit = unit
        self._local = threading.local()

    def fragments(self, history: Sequence[Item]) -> list[bytes]:
        """The fragments of ``history``, in order (the list is shared: do not modify it)."""
        items = tuple(history)
        last: _Encoded | None = getattr(self._local, "last", None)
        starts: list[int] = []
        fragments: list[bytes] = []
        position = 0
        if last is not None and last.starts and items[: len(last.items)] == last.items:
            starts, fragments = last.starts[:-1], last.fragments[:-1]
            position = last.starts[-1]
        while position < len(items):
            end, fragment = self._unit(items, position)
            if fragment:
                starts.append(position)
                fragments.append(fragment)
            position = end
        self._local.last = _Encoded(items, starts, fragments)
        return fragments


class _CallIds:
    """The call ids of a history, kept up to date as it grows (per thread, like the
    FragmentCache): a loop's history only grows, so each request adds only its new items."""

    def __init__(self) -> None:
        self._local = threading.local()

    def of(self, items: Sequence[Item]) -> frozenset[str]:
        count, last, ids = getattr(self._local, "state", (0, None, frozenset()))
        if not (count and len(items) >= count and items[count - 1] is last):
            count, ids = 0, frozenset()  # another history: start over
        new = [i.call_id for i in items[count:] if isinstance(i, FunctionCall)]
        if new:
            ids = ids | frozenset(new)
        self._local.state = (len(items), items[-1] if items else None, ids)
        return ids


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


class WireClient:
    """The ``ModelClient`` skeleton: encode (wire-specific) -> POST -> decode (wire-specific).

    Subclasses set ``path`` and ``reserved`` (request keys options may not set) and implement
    ``encode_unit``, ``encode_envelope``, ``encode_tool`` and ``decode``.
    """

    path: ClassVar[str]
    reserved: ClassVar[frozenset[str]]

    def __init__(
        self,
        endpoint: Endpoint,
        config: ClientConfig | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.config = config or ClientConfig()
        self._http = HttpCore(endpoint, self.config, transport=transport)
        self.cache = FragmentCache(self.encode_unit)
        self._call_ids = _CallIds()
        self._tools: tuple[tuple[ToolSpec, ...], bytes] = ((), b"[]")

    @property
    def model(self) -> str:
        return self.endpoint.model

    def create(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``; the decoded response. Raises ``ModelError`` subclasses, or
        ``ConfigError`` for a request that cannot be sent (reserved option, not JSON)."""
        data, sent = self.post(lambda: self.encode(request), request)
        return self.read_response(request, data, sent)

    def post(self, encode: Callable[[], bytes], request: ModelRequest) -> tuple[JsonObject, int]:
        """POST the body ``encode()`` makes; the answer's JSON object and the bytes sent.
        Streamed when ``config.stream`` (deltas go to ``request.on_delta``)."""
        try:
            body = encode()
        except (TypeError, ValueError) as exc:  # json.dumps: an option or schema is not JSON
            raise ConfigError(f"the request cannot be encoded as JSON: {exc}") from None
        reader = self.stream_reader(request.on_delta) if self.config.stream else None
        return self._http.post_json(self.path, body, reader)

    def stream_reader(self, on_delta: DeltaSink | None) -> StreamReader:
        """This wire's reader of a streamed answer."""
        raise NotImplementedError

    def encode_stream(self, request: ModelRequest) -> bytes:
        """``,"stream":true`` (and the wire's stream options) when streaming, else nothing."""
        return b',"stream":true' if self.config.stream else b""

    def read_response(self, request: ModelRequest, data: JsonObject, sent: int) -> ModelResponse:
        """The ``ModelResponse`` of the answer ``data`` to ``request`` (``sent`` bytes)."""
        url = self.endpoint.base_url + self.path
        try:
            raise_inband_error(data, url)
            # An id the conversation already used (servers that number calls per reply)
            # would give two results one id: such calls get a new one (D7).
            taken = self._call_ids.of(request.items)
            names = frozenset(t.name for t in request.tools)
            items, finish, usage = self.decode(data, names, taken)
        except ModelProtocolError as exc:
            raise ModelProtocolError(
                f"{exc.message} (from {url})", url=url, code=exc.code
            ) from None
        rid = data.get("id")
        return ModelResponse(
            items, finish, usage, rid if isinstance(rid, str) else None, data, sent
        )

    def encode(self, request: ModelRequest) -> bytes:
        """The request body: cached history fragments joined inside a small envelope."""
        history = b",".join(self.encode_history(request))
        head, tail = self.encode_envelope(request)
        options = self.encode_options(request.options)
        return b"".join((head, history, tail, options, self.encode_stream(request), b"}"))

    def encode_options(self, options: Mapping[str, Any]) -> bytes:
        """``,"key":value`` for each option, in this wire's names; reserved keys refused."""
        if not options:
            return b""
        clash = sorted(set(options) & self.reserved)
        if clash:
            raise ConfigError(
                f"request options may not set {', '.join(clash)}: minipi builds these itself",
                code="reserved_option",
            )
        return b"," + dumps(self.wire_options(options))[1:-1]

    def wire_options(self, options: Mapping[str, Any]) -> JsonObject:
        """``options`` as this wire names them (the chat wire renames a few)."""
        return dict(options)

    def tools_json(self, tools: tuple[ToolSpec, ...]) -> bytes:
        """The encoded tool list, recomputed only when the specs are not the same objects."""
        cached, fragment = self._tools
        if not _same(cached, tools):
            fragment = dumps([self.encode_tool(t) for t in tools])  # once per tool list
            self._tools = (tools, fragment)
        return fragment

    def encode_history(self, request: ModelRequest) -> list[bytes]:
        """One fragment per wire message, from ``self.cache`` where possible."""
        return self.cache.fragments(request.items)

    def encode_unit(self, items: tuple[Item, ...], start: int) -> tuple[int, bytes]:
        """The wire message that begins at ``items[start]``: (index after it, its JSON)."""
        raise NotImplementedError

    def encode_envelope(self, request: ModelRequest) -> tuple[bytes, bytes]:
        """The bytes before the history list (ending in ``[``) and after it (from ``]``)."""
        raise NotImplementedError

    def encode_tool(self, tool: ToolSpec) -> JsonObject:
        raise NotImplementedError

    def decode(
        self,
        data: JsonObject,
        tool_names: frozenset[str] = frozenset(),
        taken: frozenset[str] = frozenset(),
    ) -> tuple[tuple[Item, ...], FinishReason, Usage]:
        """The response's neutral items, finish reason and usage. ``tool_names`` are the
        request's tools: with some, ``<tool_call>`` text in a reply without native calls is
        decoded as calls (``textcalls.py``). A call whose id is in ``taken`` (or repeats one
        of the same reply) gets a new id, in its raw copy too."""
        raise NotImplementedError

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
