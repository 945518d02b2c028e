"""HTTP faults (RELIABILITY group E): retries, actionable errors, timeouts, no leaks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import closing
from email.utils import formatdate

import httpx
import pytest

from minipi.ai import (
    ClientConfig,
    Endpoint,
    Message,
    ModelClient,
    ModelRequest,
    ModelResponse,
    Wire,
    connect,
)
from minipi.errors import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelProtocolError,
    ModelTimeoutError,
)
from minipi.local.ports import free_port
from support.fake import FakeServer, RawReply, Turn

pytestmark = pytest.mark.reliability

FAST = ClientConfig(backoff_base=0.01, read_timeout=10.0)


def ask(client: ModelClient, model: str = "fake-model") -> ModelResponse:
    return client.create(ModelRequest([Message("user", "q")]))


def posts(server: FakeServer) -> int:
    return sum(r.path.endswith(("/responses", "/chat/completions")) for r in server.requests)


def error(status: int, message: str, retry_after: str | None = None) -> RawReply:
    headers = {} if retry_after is None else {"retry-after": retry_after}
    return RawReply(status, json.dumps({"error": {"message": message}}).encode(), headers)


def test_429_with_a_short_retry_after_is_waited_for(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    fake_server.add(error(429, "slow down", retry_after="1"), Turn("ok"))
    started = time.monotonic()
    assert ask(model_client).items[0].text == "ok"  # type: ignore[union-attr]
    assert 0.9 <= time.monotonic() - started < 5
    assert posts(fake_server) == 2


def test_retry_after_as_an_http_date(fake_server: FakeServer, model_client: ModelClient) -> None:
    fake_server.add(
        error(503, "busy", retry_after=formatdate(time.time() - 5, usegmt=True)), Turn("ok")
    )
    assert ask(model_client).finish_reason == "stop"
    assert posts(fake_server) == 2


def test_a_long_retry_after_is_not_waited_for(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    fake_server.add(error(429, "quota exceeded", retry_after="3600"), Turn("never"))
    started = time.monotonic()
    with pytest.raises(ModelHTTPError) as caught:
        ask(model_client)
    assert time.monotonic() - started < 2
    assert caught.value.code == "rate_limited"
    assert caught.value.status == 429
    assert "3600 s" in str(caught.value)
    assert "quota exceeded" in str(caught.value)
    assert posts(fake_server) == 1


@pytest.mark.parametrize("retries", [0, 2])
def test_5xx_every_time_is_tried_exactly_1_plus_max_retries(
    fake_server: FakeServer, wire: Wire, retries: int
) -> None:
    fake_server.add(*[error(502, "upstream down")] * 5)
    config = ClientConfig(max_retries=retries, backoff_base=0.01)
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire=wire)
    with closing(connect(endpoint, config)) as client, pytest.raises(ModelHTTPError) as caught:
        ask(client)
    assert posts(fake_server) == 1 + retries
    assert caught.value.code == "endpoint_unavailable"
    assert f"({1 + retries} attempt" in str(caught.value)
    assert "upstream down" in str(caught.value)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_retryable_statuses_then_success(
    fake_server: FakeServer, model_client: ModelClient, status: int
) -> None:
    fake_server.add(error(status, "transient"), Turn("ok"))
    assert ask(model_client).finish_reason == "stop"
    assert posts(fake_server) == 2


def test_exhausted_script_fails_the_request_and_says_so(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    with pytest.raises(ModelHTTPError, match="script exhausted after 0 replies"):
        ask(model_client)


def test_400_shows_the_servers_message_once(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    fake_server.add(error(400, "This model's maximum context length is 4096 tokens"))
    with pytest.raises(ModelHTTPError) as caught:
        ask(model_client)
    message = str(caught.value)
    assert "maximum context length is 4096 tokens" in message
    assert "longer than the model's context window" in message
    assert caught.value.code == "bad_request"
    assert posts(fake_server) == 1


@pytest.mark.parametrize(("status", "key"), [(401, None), (403, "sk-wrong")])
def test_auth_errors_name_the_key_setting(
    fake_server: FakeServer, status: int, key: str | None
) -> None:
    fake_server.add(error(status, "invalid api key"))
    endpoint = Endpoint(fake_server.base_url, "fake-model", api_key=key)
    with closing(connect(endpoint, FAST)) as client, pytest.raises(ModelHTTPError) as caught:
        ask(client)
    assert "check --api-key / OPENAI_API_KEY" in str(caught.value)
    assert ("no API key was sent" in str(caught.value)) is (key is None)
    assert "sk-wrong" not in str(caught.value)
    assert caught.value.code == "unauthorized"
    assert posts(fake_server) == 1


def test_unknown_model_lists_the_available_ones(wire: Wire) -> None:
    with FakeServer(models=("qwen3-0.6b", "qwen3-4b")) as server:
        endpoint = Endpoint(server.base_url, "qwen3:0.6b", wire=wire)
        with closing(connect(endpoint, FAST)) as client, pytest.raises(ModelHTTPError) as caught:
            ask(client, "qwen3:0.6b")
        assert posts(server) == 1
    assert str(caught.value) == (
        f"model 'qwen3:0.6b' not found at {server.base_url} (available: qwen3-0.6b, qwen3-4b)"
        " — check --model / QWEN_MODEL"
    )
    assert caught.value.code == "model_not_found"


def test_wrong_path_404_points_at_the_base_url(fake_server: FakeServer, wire: Wire) -> None:
    base = fake_server.base_url.removesuffix("/v1") + "/api"
    with (
        closing(connect(Endpoint(base, "fake-model", wire=wire), FAST)) as client,
        pytest.raises(ModelHTTPError) as caught,
    ):
        ask(client)
    path = "/responses" if wire == "responses" else "/chat/completions"
    message = str(caught.value)
    assert message.startswith(f"{base}{path} not found (404) — check --base-url")
    assert "it usually ends in /v1" in message
    assert ("try --wire chat" in message) is (wire == "responses")
    assert caught.value.code == "not_found"
    assert len(fake_server.requests) == 1


def test_closed_port_fails_fast_with_a_hint(wire: Wire) -> None:
    endpoint = Endpoint(f"http://127.0.0.1:{free_port()}", "m", wire=wire)
    started = time.monotonic()
    with closing(connect(endpoint, FAST)) as client, pytest.raises(ModelConnectionError) as caught:
        ask(client)
    assert time.monotonic() - started < 3
    message = str(caught.value)
    assert message.startswith(f"cannot connect to {endpoint.base_url} — is the server running?")
    assert "`minipi serve`" in message
    assert "QWEN_BASE_URL" in message
    assert "3 attempts" in message
    assert caught.value.code == "endpoint_unreachable"


def test_read_stall_times_out(fake_server: FakeServer, wire: Wire) -> None:
    fake_server.add(RawReply.json({}, delay=30), RawReply.json({}, delay=30))
    config = ClientConfig(read_timeout=0.2, max_retries=1, backoff_base=0.01)
    endpoint = Endpoint(fake_server.base_url, "fake-model", wire=wire)
    started = time.monotonic()
    with closing(connect(endpoint, config)) as client, pytest.raises(ModelTimeoutError) as caught:
        ask(client)
    assert time.monotonic() - started < 5
    assert "within the 0.2 s read timeout (2 attempts)" in str(caught.value)
    assert posts(fake_server) == 2


class CountingTransport(httpx.BaseTransport):
    """Counts responses whose stream is still open (E15: no connection leak)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.open = 0
        self.opened = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.open += 1
        self.opened += 1
        response.stream = _Counted(response.stream, self)  # type: ignore[arg-type]
        return response

    def close(self) -> None:
        self.inner.close()


class _Counted(httpx.SyncByteStream):
    def __init__(self, stream: httpx.SyncByteStream, counter: CountingTransport) -> None:
        self.stream, self.counter = stream, counter

    def __iter__(self) -> Iterator[bytes]:
        yield from self.stream

    def close(self) -> None:
        self.counter.open -= 1
        self.stream.close()


def test_no_response_is_left_open_after_errors_and_retries(
    fake_server: FakeServer, wire: Wire
) -> None:
    fake_server.add(
        error(500, "x"),
        Turn("ok"),
        error(404, "model 'fake-model' not found"),
        RawReply(200, b"<html>", {"content-type": "text/html"}),
        error(429, "later", retry_after="999"),
        RawReply.json({}, delay=30),
    )
    transport = CountingTransport()
    config = ClientConfig(read_timeout=0.2, max_retries=1, backoff_base=0.01)
    client = connect(
        Endpoint(fake_server.base_url, "fake-model", wire=wire), config, transport=transport
    )
    with closing(client):
        ask(client)
        for _ in range(4):
            with pytest.raises(ModelError):
                ask(client)
    assert transport.opened >= 6
    assert transport.open == 0


def test_an_undecodable_body_is_a_protocol_error(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    fake_server.add(RawReply(200, b"not gzip at all", {"content-encoding": "gzip"}))
    with pytest.raises(ModelProtocolError, match="unreadable answer"):
        ask(model_client)
    assert posts(fake_server) == 1


def test_an_invalid_port_is_a_config_error_before_any_request() -> None:
    with pytest.raises(ConfigError, match=r"the port 'port' is not a number.*check --base-url"):
        Endpoint("http://127.0.0.1:port/v1", "m")
