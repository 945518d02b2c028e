"""Shared fixtures and suite-wide settings. Keep this file small: helpers with logic live in
their own modules (``support/fake.py``) and are imported by the tests that need them."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from minipi.ai import ClientConfig, Endpoint, ModelClient, Wire, connect
from support.fake import FakeServer
from support.terminal import Terminal

FAST_RETRIES = ClientConfig(backoff_base=0.01, read_timeout=10.0)
"""Real retry policy, tiny backoff: tests that retry stay fast."""


def pytest_configure(config: pytest.Config) -> None:
    """Make the suite independent of the shell that started it.

    A shell that ignores SIGINT (``cmd &`` in a script, some CI runners) passes the ignored
    disposition to pytest, and through it to every ``minipi`` the tests start: an ignored
    signal stays ignored across exec, and Python then installs no KeyboardInterrupt handler,
    so a test's Ctrl-C does nothing. Python's own handler here restores what an interactive
    start gives: KeyboardInterrupt in this process, and SIG_DFL (so Python's handler) in each
    child, since exec resets a caught signal to its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


settings.register_profile(
    "minipi",
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""Property tests that give the same verdict on every run and machine: the examples come
from a seed derived from each test (``derandomize``), nothing is replayed from an earlier
run's database, and no wall-clock check applies. ``too_slow`` judges how long the strategies
take to draw, which on a loaded machine (2 cores shared by parallel runs) measures the
machine, not the tiny strategies the tests use. Each test keeps its ``max_examples``.
``pytest --hypothesis-profile default`` explores with fresh random examples instead."""
settings.load_profile("minipi")


# --- the fake OpenAI-compatible server (real HTTP on 127.0.0.1) ---------------------------


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A started ``FakeServer`` with an empty script; ``fake_server.add(...)`` replies."""
    with FakeServer() as server:
        yield server


@pytest.fixture(params=["chat", "responses"])
def wire(request: pytest.FixtureRequest) -> Wire:
    """Each wire API in turn: a test using it runs once per wire."""
    value: Wire = request.param
    return value


@pytest.fixture
def model_client(fake_server: FakeServer, wire: Wire) -> Iterator[ModelClient]:
    """A client of ``fake_server`` (model ``fake-model``) on ``wire``, closed afterwards."""
    client = connect(Endpoint(fake_server.base_url, "fake-model", wire=wire), FAST_RETRIES)
    yield client
    client.close()


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Terminals a test opens (``support.terminal``), killed at its end even when it failed."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.kill()
