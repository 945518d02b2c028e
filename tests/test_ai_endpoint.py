"""Endpoint / ClientConfig values, ``connect``, and the import cost of ``minipi.ai``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import minipi.ai
from minipi.ai import ClientConfig, Endpoint, chat, connect, responses
from minipi.ai.chain import ChainedClient
from minipi.ai.client import HttpModelClient
from minipi.errors import ConfigError


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("http://127.0.0.1:8021", "http://127.0.0.1:8021/v1"),
        ("http://127.0.0.1:8021/", "http://127.0.0.1:8021/v1"),
        ("http://127.0.0.1:8021/v1", "http://127.0.0.1:8021/v1"),
        (" http://127.0.0.1:8021/v1// ", "http://127.0.0.1:8021/v1"),
        ("https://api.example.com/openai/v1/", "https://api.example.com/openai/v1"),
    ],
)
def test_base_url_is_normalised(given: str, normalised: str) -> None:
    assert Endpoint(given, "m").base_url == normalised


def test_seed_url_with_and_without_v1_is_the_same_endpoint() -> None:
    assert Endpoint("http://127.0.0.1:8021", "q") == Endpoint("http://127.0.0.1:8021/v1", "q")


@pytest.mark.parametrize("bad", ["127.0.0.1:8021", "localhost:8021/v1", "ftp://x/v1", ""])
def test_base_url_without_http_scheme_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="QWEN_BASE_URL"):
        Endpoint(bad, "m")


def test_unknown_wire_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'chat' or 'responses'"):
        Endpoint("http://h/v1", "m", wire="grpc")  # type: ignore[arg-type]


def test_repr_never_shows_the_key() -> None:
    endpoint = Endpoint("http://h/v1", "m", api_key="sk-secret-123")
    assert "sk-secret-123" not in repr(endpoint)
    assert "sk-secret-123" not in str(endpoint)
    assert "api_key='***'" in repr(endpoint)
    assert "api_key=None" in repr(Endpoint("http://h/v1", "m"))


def test_client_config_defaults_follow_the_reliability_defaults() -> None:
    config = ClientConfig()
    assert (config.connect_timeout, config.read_timeout, config.max_retries) == (5.0, 120.0, 2)
    assert (config.backoff_base, config.max_retry_after) == (0.5, 20.0)


@pytest.mark.parametrize(
    "bad",
    [{"read_timeout": 0}, {"connect_timeout": -1}, {"max_retries": -1}, {"backoff_base": -0.1}],
)
def test_client_config_rejects_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        ClientConfig(**bad)  # type: ignore[arg-type]


def test_connect_composes_the_client_with_the_endpoints_wire() -> None:
    base = "http://127.0.0.1:9/v1"
    chaining = ClientConfig(previous_response_id=True)
    clients = [
        connect(Endpoint(base, "m")),
        connect(Endpoint(base, "m", wire="responses")),
        connect(Endpoint(base, "m", wire="responses"), chaining),
        connect(Endpoint(base, "m"), chaining),  # the chat wire ignores chaining
    ]
    try:
        plain_chat, plain_responses, chained, chat_anyway = clients
        assert isinstance(plain_chat, HttpModelClient)
        assert plain_chat.wire is chat.WIRE
        assert isinstance(plain_responses, HttpModelClient)
        assert plain_responses.wire is responses.WIRE
        assert isinstance(chained, ChainedClient)
        assert chained.inner.wire is responses.WIRE
        assert isinstance(chat_anyway, HttpModelClient)
        assert chat_anyway.wire is chat.WIRE
        assert {c.model for c in clients} == {"m"}  # the endpoint's model, the one copy
    finally:
        for client in clients:
            client.close()


def test_all_is_sorted_and_complete() -> None:
    assert minipi.ai.__all__ == sorted(minipi.ai.__all__)
    assert {"connect", "Endpoint", "ClientConfig", "output_text"} <= set(minipi.ai.__all__)


def test_importing_the_model_layer_does_not_import_httpx() -> None:
    code = (
        "import sys, minipi.ai, minipi.ai.testing; "
        "print(sorted(m for m in ('httpx', 'minipi.ai.http') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert result.stdout.strip() == "[]"


def test_credentials_in_the_url_leave_it_and_are_sent_as_basic_auth() -> None:
    import base64
    from contextlib import closing

    from minipi.ai import Message, ModelRequest
    from support.fake import FakeServer, Turn

    with FakeServer([Turn("hi"), Turn("hi")]) as server:
        secret = server.base_url.replace("http://", "http://us%40er:p%3Aw-SECRET@")
        endpoint = Endpoint(secret, "fake-model")
        assert endpoint.base_url == server.base_url
        assert "SECRET" not in repr(endpoint)
        request = ModelRequest([Message("user", "q")])
        with closing(connect(endpoint)) as client:
            client.create(request)
        with closing(connect(Endpoint(secret, "fake-model", api_key="sk-1"))) as client:
            client.create(request)
        sent = [r.headers["authorization"] for r in server.requests]
    expected = base64.b64encode(b"us@er:p:w-SECRET").decode()
    assert sent == [f"Basic {expected}", "Bearer sk-1"]  # the key wins


def test_an_unreachable_url_with_credentials_never_shows_them() -> None:
    from contextlib import closing

    from minipi.ai import Message, ModelRequest
    from minipi.errors import ModelConnectionError

    endpoint = Endpoint("http://user:pw-SECRET@127.0.0.1:9/v1", "m")
    config = ClientConfig(max_retries=0, connect_timeout=1)
    with (
        closing(connect(endpoint, config)) as client,
        pytest.raises(ModelConnectionError) as caught,
    ):
        client.create(ModelRequest([Message("user", "q")]))
    assert "SECRET" not in str(caught.value)
    assert "127.0.0.1:9" in str(caught.value)
