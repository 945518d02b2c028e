"""Issue 15 (the model layer's part): answers that retrying cannot fix fail at once.

An HTML 501 page was retried three times, then "try again later". 501 (Not Implemented)
and 505 (HTTP Version Not Supported) are not transient; an HTML error page other than a
gateway's (502/503/504: a proxy in front of a restarting server) comes from something that
is not the model API, and the message says so at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelRequest, Wire, connect
from minipi.errors import ModelHTTPError
from support.fake import FakeServer, RawReply, Turn
from support.faults import error_status, html_page
from support.rel import ask_cli

pytestmark = pytest.mark.reliability

FAST = ClientConfig(max_retries=2, backoff_base=0.01)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def failure(server: FakeServer, wire: Wire) -> tuple[ModelHTTPError, float]:
    started = time.monotonic()
    client = connect(Endpoint(server.base_url, "fake-model", wire=wire), FAST)
    with closing(client), pytest.raises(ModelHTTPError) as caught:
        client.create(ModelRequest([Message("user", "hi")]))
    return caught.value, time.monotonic() - started


@pytest.mark.parametrize("status", [500, 501, 505, 520])
def test_an_html_error_page_is_named_and_not_retried(
    server: FakeServer, wire: Wire, status: int
) -> None:
    server.add(*[html_page(status)] * 3, Turn("never"))
    error, seconds = failure(server, wire)
    assert server.posts == 1
    assert seconds < 1
    assert "is --base-url a web page or proxy?" in error.message
    assert "<html" not in error.message.lower()
    assert error.status == status


@pytest.mark.parametrize("status", [501, 505])
def test_501_and_505_are_not_retried_even_as_json(
    server: FakeServer, wire: Wire, status: int
) -> None:
    server.add(*[error_status(status, "no such thing here")] * 3)
    error, _ = failure(server, wire)
    assert server.posts == 1
    assert "no such thing here" in error.message
    assert "retrying will not help" in error.message
    assert error.code == "endpoint_unavailable"


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateways_html_page_is_still_retried(server: FakeServer, wire: Wire, status: int) -> None:
    server.add(html_page(status), Turn("back again"))
    with closing(connect(Endpoint(server.base_url, "fake-model", wire=wire), FAST)) as client:
        response = client.create(ModelRequest([Message("user", "hi")]))
    assert server.posts == 2
    assert any(getattr(i, "text", "") == "back again" for i in response.items)


def test_an_html_page_without_a_content_type_is_recognised(server: FakeServer, wire: Wire) -> None:
    page = b"<!DOCTYPE html><html><body>It works!</body></html>"
    server.add(RawReply(501, page, {"content-type": "application/octet-stream"}))
    error, _ = failure(server, wire)
    assert "web page or proxy" in error.message


def test_cli_names_the_web_page_at_once(server: FakeServer, wire: Wire, tmp_path: Path) -> None:
    server.add(*[html_page(501)] * 3)
    started = time.monotonic()
    proc = ask_cli(server, wire, tmp_path)
    assert proc.returncode == 1
    assert "is --base-url a web page or proxy?" in proc.stderr
    assert "try again later" not in proc.stderr
    assert server.posts == 1
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("value", ["nan", "NaN", "junk", "Wed, 21 Oct 99999 07:28:00 GMT"])
def test_a_retry_after_that_means_nothing_is_ignored(
    server: FakeServer, wire: Wire, value: str
) -> None:
    server.add(error_status(503, "busy", retry_after=value), Turn("ok"))
    with closing(connect(Endpoint(server.base_url, "fake-model", wire=wire), FAST)) as client:
        client.create(ModelRequest([Message("user", "hi")]))  # before: sleep(nan) raised
    assert server.posts == 2


@pytest.mark.parametrize("value", ["inf", "1e999"])
def test_an_endless_retry_after_fails_at_once(server: FakeServer, wire: Wire, value: str) -> None:
    server.add(error_status(429, "slow down", retry_after=value), Turn("never"))
    error, seconds = failure(server, wire)
    assert error.code == "rate_limited"
    assert seconds < 1
    assert server.posts == 1
