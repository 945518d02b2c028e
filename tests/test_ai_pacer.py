"""A pacer shared by concurrent clients (a batch's workers): one client's 429 holds back the
others' next attempts too, not only its own retry."""

from __future__ import annotations

import threading
import time

import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelRequest, connect
from support.fake import FakeServer, Turn
from support.faults import error_status

pytestmark = pytest.mark.reliability


class Pace:
    """The smallest pacer: a not-before time, and when each wait ended."""

    def __init__(self) -> None:
        self.not_before = 0.0
        self.lock = threading.Lock()
        self.deferred: list[float] = []

    def wait(self) -> None:
        while True:
            with self.lock:
                left = self.not_before - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.02))

    def defer(self, seconds: float) -> None:
        with self.lock:
            self.not_before = max(self.not_before, time.monotonic() + seconds)
            self.deferred.append(seconds)


def test_a_429_that_one_client_retries_holds_back_another_clients_request() -> None:
    pace = Pace()
    config = ClientConfig(backoff_base=0.01, pacer=pace, stream=False)
    with FakeServer([error_status(429, "slow down", retry_after="1"), Turn("a"), Turn("b")]) as s:
        first, second = (connect(Endpoint(s.base_url, "fake-model"), config) for _ in range(2))
        request = ModelRequest([Message("user", "q")])
        done: dict[str, float] = {}

        def ask(name: str, client: object) -> None:
            client.create(request)  # type: ignore[attr-defined]
            done[name] = time.monotonic()

        started = time.monotonic()
        worker = threading.Thread(target=ask, args=("first", first))
        worker.start()
        while not pace.deferred:  # the first client got its 429
            time.sleep(0.01)
        ask("second", second)
        worker.join()
        first.close()
        second.close()
    assert pace.deferred == [1.0]
    assert done["second"] - started >= 0.95  # it waited for the first one's Retry-After
    assert len(s.requests) == 3
