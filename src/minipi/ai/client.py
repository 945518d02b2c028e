"""The HTTP model client: one class, composed with a wire (``chat.WIRE``, ``responses.WIRE``).

A request goes ``wire.encode`` (a JSON dict) -> compact UTF-8 bytes -> ``HttpCore.post_json``
(retries, streaming) -> ``wire.decode`` -> ``ModelResponse``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.http import HttpCore
from minipi.ai.stream import raise_inband_error
from minipi.ai.types import FunctionCall, JsonObject, ModelRequest, ModelResponse
from minipi.ai.wire import WireApi
from minipi.errors import ConfigError, ModelProtocolError

__all__ = ["HttpModelClient", "dumps"]


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as servers usually send it (so replayed items stay byte-identical)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate (from a "\\ud800" escape): keep it escaped
        return json.dumps(value, separators=(",", ":")).encode()


class HttpModelClient:
    """A ``ModelClient`` for ``endpoint`` speaking ``wire``. Thread-safe; close it when done."""

    def __init__(
        self,
        endpoint: Endpoint,
        config: ClientConfig,
        wire: WireApi,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.config = config
        self.wire = wire
        self._http = HttpCore(endpoint, config, transport=transport)

    @property
    def model(self) -> str:
        return self.endpoint.model

    def create(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``; the decoded response. Raises ``ModelError`` subclasses, or
        ``ConfigError`` for a request that cannot be sent (reserved option, not JSON)."""
        body = self.wire.encode(request, self.model, stream=self.config.stream)
        return self.send(request, body)

    def send(self, request: ModelRequest, body: JsonObject) -> ModelResponse:
        """POST ``body`` (made from ``request``) and decode the answer against ``request``.
        Streamed when ``config.stream`` (deltas go to ``request.on_delta``); the whole of it,
        retries included, bounded by ``request.deadline`` (``ModelDeadlineError``)."""
        try:
            payload = dumps(body)
        except (TypeError, ValueError) as exc:  # an option or schema is not JSON
            raise ConfigError(f"the request cannot be encoded as JSON: {exc}") from None
        reader = self.wire.stream(request.on_delta) if self.config.stream else None
        data, sent = self._http.post_json(self.wire.path, payload, reader, request.deadline)
        return self._response(request, data, sent)

    def _response(self, request: ModelRequest, data: JsonObject, sent: int) -> ModelResponse:
        """The ``ModelResponse`` of the answer ``data`` to ``request`` (``sent`` bytes)."""
        url = self.endpoint.base_url + self.wire.path
        # An id the conversation already used (servers that number calls per reply) would
        # give two results one id: such calls get a new one (D7).
        taken = frozenset(i.call_id for i in request.items if isinstance(i, FunctionCall))
        names = frozenset(t.name for t in request.tools)
        try:
            raise_inband_error(data, url)
            items, finish, usage = self.wire.decode(data, names, taken)
        except ModelProtocolError as exc:
            raise ModelProtocolError(
                f"{exc.message} (from {url})", url=url, code=exc.code
            ) from None
        rid = data.get("id")
        return ModelResponse(
            items, finish, usage, rid if isinstance(rid, str) else None, data, sent
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HttpModelClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
