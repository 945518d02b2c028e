"""``EngineClient``: the model client of minipi's own engine (``minipi.local.engine``).

It adds what only the engine's owner can know: how much of each prompt came from the
engine's cache (its log), and, when a request fails, whether the engine's child has died
and of what, instead of the HTTP client's "cannot connect … is the server running?".
"""

from __future__ import annotations

from dataclasses import replace

from minipi.ai.types import ModelClient, ModelRequest, ModelResponse
from minipi.errors import ModelConnectionError, ModelError, ModelStreamError
from minipi.local.engine import Engine

__all__ = ["EngineClient"]

_DEATH_GRACE = 1.0
"""Seconds to wait for a child that broke the connection to be reaped: a dying process
closes its sockets a moment before its exit can be seen."""


class EngineClient:
    """A ``ModelClient`` for the embedded engine: ``inner``'s responses, with the usage's
    ``cached_tokens`` taken from the engine's log (the last prefix-match record the request
    produced; 0 when it produced none). ``input_tokens`` stays as the server reported it.

    When the engine's child has exited, before a request or as the reason a request failed,
    ``create`` raises the engine's ``exit_error`` (code ``engine_died``: the signal or exit
    code and what to do) instead of the inner client's "cannot connect" guess.
    ``close()`` closes ``inner``, not the engine."""

    def __init__(self, inner: ModelClient, engine: Engine) -> None:
        self.inner = inner
        self.engine = engine

    @property
    def model(self) -> str:
        return self.inner.model

    def create(self, request: ModelRequest) -> ModelResponse:
        died = self.engine.exit_error()
        if died is not None:
            raise died
        self.engine.prompt_stats()  # drop records of requests this client did not send
        try:
            response = self.inner.create(request)
        except ModelError as error:
            dropped = isinstance(error, ModelConnectionError | ModelStreamError)
            died = self.engine.exit_error(_DEATH_GRACE if dropped else 0.0)
            if died is None:
                raise
            raise died from error
        stats = self.engine.prompt_stats()
        cached = stats[-1].cached if stats else 0
        return replace(response, usage=replace(response.usage, cached_tokens=cached))

    def close(self) -> None:
        self.inner.close()
