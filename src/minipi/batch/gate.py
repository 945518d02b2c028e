"""What every worker of a batch shares on the way to the model: a bound on concurrent
requests, one "not before" time that rate limiting pushes forward, and the stop signal.

    gate = Gate(max_connections=8, stop=threading.Event())
    client = GatedClient(model.client, gate)        # one per task; the inner client is shared
    run_agent(client, tools, config, question)

``GatedClient.create`` waits for the gate (the shared not-before time, then a free
connection), asks the inner client and releases the connection.

HTTP 429: the model layer retries a 429 itself, honouring a short ``Retry-After``
(``minipi.ai.http``). When a request still ends ``rate_limited``, the gate pushes the
not-before time forward for every worker (the ``Retry-After`` the error carries, else a
backoff doubling from 1 s while 429s keep coming, at most 60 s) and the request is asked
again once that time comes, up to ``rate_limit_rounds`` times: one worker's 429 slows them
all, and a batch rides out a rate limit instead of failing the tasks that met it. This is
not the HTTP layer's retry done twice: that one waits seconds for one request; this one waits
for the whole batch, after that one has given up (the layers: ``minipi.ai.http``). A model
layer that reports each 429 as it happens can call ``Gate.wait`` before each attempt and
``Gate.defer`` with each ``Retry-After`` (the hook described in the batch README section).

Once ``stop`` is set (Ctrl-C), no request starts and the requests in flight are given up
(``stop`` is each request's ``cancel``: the HTTP layer drops a streaming reply at its next
piece and stops waiting for a plain answer within a fraction of a second): the run ends
``cancelled`` (code ``cancelled``), so the task is not recorded and runs again on resume.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from minipi.ai.types import Delta, ModelClient, ModelRequest, ModelResponse
from minipi.errors import ModelError

__all__ = ["Cancelled", "Gate", "GatedClient"]

_POLL = 0.05
"""Seconds between two looks at ``stop`` while waiting (a Ctrl-C is seen this fast)."""


class Cancelled(ModelError):
    """The batch is stopping: this task's run ends ``cancelled``."""

    def __init__(self) -> None:
        super().__init__(
            "the batch was stopped (Ctrl-C) before this task finished", code="cancelled"
        )


class Gate:
    """At most ``max_connections`` requests at once, none before ``not_before``."""

    def __init__(
        self,
        max_connections: int,
        stop: threading.Event | None = None,
        *,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        rate_limit_rounds: int = 3,
    ) -> None:
        self.max_connections = max_connections
        self.stop = stop or threading.Event()
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.rate_limit_rounds = rate_limit_rounds
        self._slots = threading.Semaphore(max_connections)
        self._lock = threading.Lock()
        self._not_before = 0.0
        self._strikes = 0
        self.deferrals = 0
        """How many times rate limiting pushed the not-before time."""

    def limit(self, max_connections: int) -> None:
        """Set the number of connections, before any request (the model decides: an
        embedded engine serves one at a time)."""
        self.max_connections = max_connections
        self._slots = threading.Semaphore(max_connections)

    def defer(self, seconds: float) -> None:
        """No worker starts a request for ``seconds`` from now (a later time already set
        stays)."""
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)
            self.deferrals += 1

    def rate_limited(self, retry_after: float | None = None) -> None:
        """A request ended ``rate_limited``: everyone waits ``retry_after`` (when the server
        said), else a backoff that doubles while 429s keep coming."""
        with self._lock:
            self._strikes += 1
            strikes = self._strikes
        backoff = min(self.backoff * 2.0 ** (strikes - 1), self.max_backoff)
        self.defer(min(max(retry_after or 0.0, backoff), self.max_backoff))

    def succeeded(self) -> None:
        with self._lock:
            self._strikes = 0

    def wait(self) -> None:
        """Until the not-before time; ``Cancelled`` once stopping."""
        while True:
            if self.stop.is_set():
                raise Cancelled()
            with self._lock:
                left = self._not_before - time.monotonic()
            if left <= 0:
                return
            self.stop.wait(min(left, _POLL))

    def acquire(self) -> None:
        """Wait for the not-before time and a free connection; ``Cancelled`` once stopping."""
        while True:
            self.wait()
            if self._slots.acquire(timeout=_POLL):
                return

    def release(self) -> None:
        self._slots.release()


class GatedClient:
    """``inner`` behind ``gate``: a ``ModelClient`` for one task's run. Closing it does not
    close ``inner`` (the batch shares it)."""

    def __init__(self, inner: ModelClient, gate: Gate) -> None:
        self.inner = inner
        self.gate = gate

    @property
    def model(self) -> str:
        return self.inner.model

    def create(self, request: ModelRequest) -> ModelResponse:
        watched = self._watched(request)
        rounds = 0
        while True:
            try:
                response = self._send(watched)
            except ModelError as error:
                late = request.deadline is not None and time.monotonic() >= request.deadline
                if error.code != "rate_limited" or rounds >= self.gate.rate_limit_rounds or late:
                    raise
                rounds += 1
                self.gate.rate_limited(_retry_after(error))
                continue
            self.gate.succeeded()
            return response

    def _send(self, request: ModelRequest) -> ModelResponse:
        self.gate.acquire()
        try:
            return self.inner.create(request)
        except ModelError as error:
            if self.gate.stop.is_set() and not isinstance(error, Cancelled):
                raise Cancelled() from error  # what broke it was the stop, not the endpoint
            raise
        finally:
            self.gate.release()

    def _watched(self, request: ModelRequest) -> ModelRequest:
        """``request`` cancelled once the batch is stopping (its ``cancel`` is ``stop``),
        and whose delta sink raises ``Cancelled`` then."""
        sink = request.on_delta
        stop = self.gate.stop

        def on_delta(delta: Delta) -> None:
            if stop.is_set():
                raise Cancelled()
            if sink is not None:
                sink(delta)

        return replace(request, on_delta=on_delta, cancel=stop)

    def close(self) -> None:
        """Nothing to release: the inner client belongs to the batch."""


def _retry_after(error: ModelError) -> float | None:
    """The ``Retry-After`` seconds a 429 error carries, where the model layer records it."""
    value = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, int | float) else None
