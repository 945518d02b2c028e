"""The HTTP model client: one class, composed with a wire (``chat.WIRE``, ``responses.WIRE``).

A request goes ``wire.encode`` (a JSON dict) -> compact UTF-8 bytes -> ``HttpCore.post_json``
(retries, streaming) -> ``wire.decode`` -> ``ModelResponse``.
"""

from __future__ import annotations

import json
import threading
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


class _HistoryJson:
    """The previous body's history entries and their JSON (per thread), so that a body whose
    history extends them encodes only the new entries.

    Why (measured on the 200-turn chain task of ``bench/perf.py``): encoding each body whole
    costs 0.4-0.6 ms of CPU per turn, 0.12 ms with this, where the stdlib loop spends
    0.7-1.0 ms per turn in all; without it, ``bench/perf.py --quick --no-engine`` put the
    library API's per-turn overhead at 1.5-4.5x the stdlib loop in four runs (target 1.5x),
    and ``run_agent`` took 1.5-2.0 ms of CPU per turn against 1.2-1.7 ms with it.

    Entries are compared before their bytes are reused (identity first, then equality), so
    the bytes are what ``dumps(entries)`` gives (up to ``1`` / ``1.0`` / ``true``, which
    compare equal: no loop's history swaps one for another); items and their ``raw`` dicts
    are treated as immutable.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def encode(self, entries: list[JsonObject]) -> bytes:
        """``dumps(entries)``, reusing the previous call's bytes for the entries it shares."""
        known, text = getattr(self._local, "last", ([], b""))
        if known and len(entries) >= len(known) and entries[: len(known)] == known:
            new = entries[len(known) :]
            text = text[:-1] + b"," + dumps(new)[1:] if new else text
        else:
            text = dumps(entries)
        self._local.last = (entries, text)
        return text


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
        self._history = _HistoryJson()

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
        retries included, bounded by ``request.deadline`` (``ModelDeadlineError``) and given
        up once ``request.cancel`` is set (code ``cancelled``)."""
        try:
            payload = self._payload(body)
        except (TypeError, ValueError) as exc:  # an option or schema is not JSON
            raise ConfigError(f"the request cannot be encoded as JSON: {exc}") from None
        reader = self.wire.stream(request.on_delta) if self.config.stream else None
        deadline, cancel = request.deadline, request.cancel
        data, sent = self._http.post_json(self.wire.path, payload, reader, deadline, cancel)
        return self._response(request, data, sent)

    def _payload(self, body: JsonObject) -> bytes:
        """``dumps(body)``, its history list through ``_HistoryJson``."""
        parts = [
            dumps(key) + b":" + self._history.encode(value)
            if key == self.wire.history
            else dumps({key: value})[1:-1]
            for key, value in body.items()
        ]
        return b"{" + b",".join(parts) + b"}"

    def _response(self, request: ModelRequest, data: JsonObject, sent: int) -> ModelResponse:
        """The ``ModelResponse`` of the answer ``data`` to ``request`` (``sent`` bytes)."""
        url = self.endpoint.base_url + self.wire.path
        # An id the conversation already used (servers that number calls per reply) would
        # give two results one id: such calls get a new one (D7).
        taken = frozenset(i.call_id for i in request.items if isinstance(i, FunctionCall))
        names = frozenset(t.name for t in request.tools)
        try:
            raise_inband_error(data, url)
            items, finish, usage = self.wire.decode(data, names, taken, request.items)
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
