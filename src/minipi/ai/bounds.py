"""Wall-clock bounds on one HTTP exchange, enforced in every socket operation under httpx.

httpx's timeouts bound each connect, read or write on its own: a body that trickles in one
byte every 2 s never trips a 120 s read timeout, and nothing bounds a whole exchange. A
``Budget`` holds the instants (``time.monotonic()``) by which the exchange must be done, by
name: ``deadline`` (the request's, i.e. the run's ``--max-seconds``), ``total`` (a plain
exchange: ``read_timeout`` after it began), ``grace`` (after a stream's end marker: the
little time the rest of the body gets). While a budget is ``active`` in a thread, the
network backend installed by ``bound_client`` cuts the timeout of every connect, read and
write of that thread to the time left, so the blocking call itself returns in time: no
watchdog thread, and no check that waits for the next byte to arrive. Past the nearest
instant an operation fails at once with httpcore's timeout error (httpx's
``TimeoutException``); ``passed`` then says which limit it was.

A budget may also hold a ``cancel`` event (a batch stopping at Ctrl-C): a blocking read is
then made in slices of at most ``WATCH`` seconds, and once the event is set the next slice
fails with httpcore's read timeout (``cancelled`` then says why), so a request waiting for
its answer is given up within a slice. Writes and connects are not sliced (a timed-out
``sendall`` may have sent part of the data, so it cannot be started again).

What it cannot bound: name resolution (``getaddrinfo`` has no timeout) and pool waits
(``HttpCore`` cuts httpx's pool timeout to the budget instead). A transport given by the
caller (``httpx.MockTransport`` in tests) has no sockets to bound: ``HttpCore`` also checks
the budget between chunks, which covers every transport at chunk granularity.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

__all__ = ["WATCH", "Budget", "active", "bound_client"]

_WRITE_PIECE = 64 * 1024  # each piece of a large write gets the time left when it starts
WATCH = 0.1
"""Seconds of one slice of a read watched for ``Budget.cancel``: how late a cancel is seen."""


@dataclass(slots=True)
class Budget:
    """The instants by which one exchange must be done, by name (see the module docstring)."""

    limits: dict[str, float] = field(default_factory=dict)
    cancel: threading.Event | None = None
    """Once set, every read fails within ``WATCH`` seconds (``cancelled`` is then True)."""

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def limit(self, name: str, at: float | None) -> None:
        """Add (or tighten) the limit ``name`` at ``at``; None adds nothing."""
        if at is not None:
            self.limits[name] = min(at, self.limits.get(name, math.inf))

    def left(self) -> float | None:
        """Seconds to the nearest limit (<= 0 once passed); None without limits."""
        if not self.limits:
            return None
        return min(self.limits.values()) - time.monotonic()

    def passed(self) -> str | None:
        """The name of the earliest limit that has passed (within 5 ms), or None."""
        now = time.monotonic() + 0.005  # a socket timeout may return a hair early
        due = [(at, name) for name, at in self.limits.items() if at <= now]
        return min(due)[1] if due else None

    def clamp(self, timeout: float | None, error: type[Exception]) -> float | None:
        """``timeout`` cut to the time left; ``error`` at once when none is left."""
        left = self.left()
        if left is None:
            return timeout
        if left <= 0:
            raise error(f"the exchange's {self.passed() or 'time'} limit passed")
        return left if timeout is None else min(timeout, left)

    def timeout(self, timeout: httpx.Timeout) -> httpx.Timeout:
        """httpx's timeouts cut to the time left (the pool wait is not a socket operation)."""
        left = self.left()
        if left is None:
            return timeout
        left = max(left, 0.001)

        def cut(value: float | None) -> float:
            return left if value is None else min(value, left)

        return httpx.Timeout(
            connect=cut(timeout.connect),
            read=cut(timeout.read),
            write=cut(timeout.write),
            pool=cut(timeout.pool),
        )

    def check(self) -> None:
        """``httpx.ReadTimeout`` if a limit has passed or the exchange was cancelled (between
        chunks, any transport)."""
        name = "cancel" if self.cancelled else self.passed()
        if name is not None:
            raise httpx.ReadTimeout(f"the exchange's {name} limit passed")

    def watched(self, read: Callable[[float | None], bytes], timeout: float | None) -> bytes:
        """``read(timeout)`` cut to the time left, made in slices of at most ``WATCH``
        seconds while ``cancel`` is not set; httpcore's ``ReadTimeout`` once it is."""
        if self.cancel is None:
            return read(self.clamp(timeout, httpcore.ReadTimeout))
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.cancel.is_set():
                raise httpcore.ReadTimeout("the exchange was cancelled")
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                raise httpcore.ReadTimeout("the read timeout passed")
            left = self.clamp(left, httpcore.ReadTimeout)
            piece = WATCH if left is None else min(left, WATCH)
            try:
                return read(piece)
            except httpcore.ReadTimeout:
                if piece == left:  # the whole time was given: it has passed
                    raise


_ACTIVE: ContextVar[Budget | None] = ContextVar("minipi_http_budget", default=None)


@contextlib.contextmanager
def active(budget: Budget) -> Iterator[Budget]:
    """Make ``budget`` bound the socket operations of this thread until the block ends."""
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def _clamp(timeout: float | None, error: type[Exception]) -> float | None:
    budget = _ACTIVE.get()
    return timeout if budget is None else budget.clamp(timeout, error)


class _BoundedStream(httpcore.NetworkStream):
    """A connection whose reads and writes are cut to the active budget."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        budget = _ACTIVE.get()
        if budget is None:
            return self._stream.read(max_bytes, timeout)
        return budget.watched(lambda limit: self._stream.read(max_bytes, limit), timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        for start in range(0, len(view), _WRITE_PIECE):
            piece = bytes(view[start : start + _WRITE_PIECE])
            self._stream.write(piece, _clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        limit = _clamp(timeout, httpcore.ConnectTimeout)
        return _BoundedStream(self._stream.start_tls(ssl_context, server_hostname, limit))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, its connections bounded by the active budget."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        limit = _clamp(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, limit, local_address, socket_options)
        return _BoundedStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        limit = _clamp(timeout, httpcore.ConnectTimeout)
        return _BoundedStream(self._inner.connect_unix_socket(path, limit, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_client(client: httpx.Client) -> int:
    """Install the bounded backend in every connection pool of ``client`` (its transport and
    the proxy transports httpx mounted from the environment); the number of pools bounded
    afterwards (those bounded before included).

    httpx offers no public way to give ``HTTPTransport`` a network backend, so this sets
    the pool's ``_network_backend`` (httpcore's pools read it for each new connection).
    A test (``test_hostile_time``) fails if a release of httpx or httpcore moves it."""
    transports = [getattr(client, "_transport", None)]
    transports += list(getattr(client, "_mounts", {}).values())
    bounded = 0
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        inner = getattr(pool, "_network_backend", None)
        if not isinstance(transport, httpx.HTTPTransport) or inner is None:
            continue
        if not isinstance(inner, _BoundedBackend):
            pool._network_backend = _BoundedBackend(inner)  # type: ignore[union-attr]
        bounded += 1
    return bounded
