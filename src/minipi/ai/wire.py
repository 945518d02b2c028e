"""What the two wire modules share: the ``WireApi`` value a client is composed with, and the
helpers both use (the options check, call decoding, usage)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from minipi.ai.stream import StreamReader
from minipi.ai.types import (
    RESERVED_OPTIONS,
    DeltaSink,
    FinishReason,
    Item,
    JsonObject,
    ModelRequest,
    Usage,
    Wire,
    new_call_id,
)
from minipi.errors import ConfigError, ModelProtocolError

__all__ = [
    "MAX_TOKENS_COUNT",
    "TOOL_CHOICES",
    "Decoded",
    "WireApi",
    "check_options",
    "decode_call",
    "read_usage",
]

TOOL_CHOICES = frozenset({"auto", "none", "required"})
"""The ``tool_choice`` words both wires send as they are (anything else names a tool)."""

Decoded: TypeAlias = tuple[tuple[Item, ...], FinishReason, Usage]
"""A decoded answer: its neutral items, finish reason and usage."""


class Encoder(Protocol):
    def __call__(self, request: ModelRequest, model: str, *, stream: bool) -> JsonObject: ...


class Decoder(Protocol):
    def __call__(
        self,
        data: JsonObject,
        tool_names: frozenset[str] = ...,
        taken: frozenset[str] = ...,
        history: Sequence[Item] = ...,
    ) -> Decoded: ...


@dataclass(frozen=True, slots=True)
class WireApi:
    """One wire API as a client uses it (``chat.WIRE``, ``responses.WIRE``)."""

    name: Wire
    path: str
    """Appended to the endpoint's ``base_url`` (``/chat/completions``, ``/responses``)."""
    history: str
    """The body's key holding the conversation (``messages``, ``input``)."""
    encode: Encoder
    """``(request, model, stream=...)`` -> the JSON body to POST."""
    decode: Decoder
    """``(answer, tool_names, taken, history)`` -> items, finish reason, usage (see
    ``chat.decode``)."""
    stream: Callable[[DeltaSink | None], StreamReader]
    """A reader of a streamed answer that reports ``Delta``s to the sink (``stream.py``)."""


def check_options(options: Mapping[str, Any]) -> None:
    """``ConfigError`` (``reserved_option``) if ``options`` sets a key the request is built
    from (``RESERVED_OPTIONS``)."""
    clash = sorted(RESERVED_OPTIONS.intersection(options))
    if clash:
        raise ConfigError(
            f"request options may not set {', '.join(clash)}: minipi builds these itself",
            code="reserved_option",
        )


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


MAX_TOKENS_COUNT = 10**12
"""The largest token count believed: more is no real usage (``prompt_tokens: 10**400`` is
a valid JSON number that would overflow every later sum and ratio)."""


def read_usage(data: Any, inputs: str, outputs: str, details: str) -> Usage:
    """Token counts from a ``usage`` object; absent or odd fields count 0 (not an int, a
    negative number, or more than ``MAX_TOKENS_COUNT``)."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return Usage(requests=1)
    detail = usage.get(details)
    cached = detail.get("cached_tokens") if isinstance(detail, dict) else 0
    return Usage(_count(usage.get(inputs)), _count(usage.get(outputs)), _count(cached), 1)


def _count(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS_COUNT:
        return value
    return 0
