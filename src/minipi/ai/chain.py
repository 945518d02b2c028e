"""Responses chaining (``ClientConfig(previous_response_id=True)``) as a wrapper client.

``ChainedClient`` wraps the Responses ``HttpModelClient``. Every request says
``"store": true``; one whose history is the previous request's history plus that response's
output plus new items is sent as ``"previous_response_id"`` and only the new items. Anything
else goes with the full history, as does, once and silently, a chained request that the server
answers as not knowing the previous response. ``ClientConfig.previous_response_id`` says when
in detail.

That second request is this module's only retry, and not ``minipi.ai.http``'s: the exchange
succeeded, but the server no longer holds the chain, so only another body can work; each of
the two requests gets the HTTP layer's own retries.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace

from minipi.ai import responses
from minipi.ai.client import HttpModelClient
from minipi.ai.types import (
    FunctionCall,
    Item,
    JsonObject,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
)
from minipi.errors import ModelHTTPError

__all__ = ["ChainedClient"]

_LOST_CHAIN = re.compile(r"previous[ _]response|response with id", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Link:
    """A stored response to chain from: its id and the history the server holds for it."""

    response_id: str
    history: tuple[Item, ...]  # what its request sent, then its output items


class ChainedClient:
    """A ``ModelClient`` that chains the requests of ``inner`` (a Responses client).

    State is per thread (one conversation per thread chains). Items and their ``raw`` dicts are
    treated as immutable: a history is compared to the last link's with one tuple comparison
    (identity first, then equality)."""

    def __init__(self, inner: HttpModelClient) -> None:
        self.inner = inner
        self._local = threading.local()

    @property
    def model(self) -> str:
        return self.inner.model

    def create(self, request: ModelRequest) -> ModelResponse:
        """Send ``request``, chained to the previous response when its history extends it."""
        items = tuple(request.items)
        response = self._chained(request, items)
        if response is None:
            response = self._full(request)
        self._remember(items, response)
        return response

    def close(self) -> None:
        self.inner.close()

    def _chained(self, request: ModelRequest, items: tuple[Item, ...]) -> ModelResponse | None:
        """The answer to the chained request, or None when ``items`` cannot be chained (or the
        server lost the previous response)."""
        last: _Link | None = getattr(self._local, "last", None)
        if last is None or len(items) <= len(last.history):
            return None
        if items[: len(last.history)] != last.history:
            return None
        new = replace(request, items=items[len(last.history) :])
        body = self._encode(new, last.response_id)
        if not body["input"]:  # nothing new on the wire (chat reasoning only)
            return None
        try:
            return self.inner.send(request, body)
        except ModelHTTPError as exc:
            if not _chain_lost(exc):
                raise
        return None

    def _full(self, request: ModelRequest) -> ModelResponse:
        return self.inner.send(request, self._encode(request, None))

    def _encode(self, request: ModelRequest, previous: str | None) -> JsonObject:
        stream = self.inner.config.stream
        return responses.encode(
            request, self.model, stream=stream, previous_response_id=previous, store=True
        )

    def _remember(self, items: tuple[Item, ...], response: ModelResponse) -> None:
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
