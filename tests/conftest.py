"""Shared fixtures. Keep this file small: helpers with logic live in their own modules
(``support/fake.py``) and are imported by the tests that need them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minipi.ai import ClientConfig, Endpoint, ModelClient, Wire, connect
from support.fake import FakeServer

FAST_RETRIES = ClientConfig(backoff_base=0.01, read_timeout=10.0)
"""Real retry policy, tiny backoff: tests that retry stay fast."""


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
