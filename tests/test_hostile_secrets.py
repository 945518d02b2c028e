"""Issue 14, items 1 and 8: a key, header or base URL that cannot be sent is a usage error.

A key with a line end (a key file saved with CRLF, read by ``$(cat key.txt)``), a space, a
control or a non-ASCII character (curly quotes pasted from a web page), credentials in the
URL that hold control characters, a base URL with a ``?query`` / ``#fragment`` or a bad
port: each is refused by ``Endpoint`` before anything is sent (``ConfigError``, CLI exit 2),
and no message, trace or session ever holds the key. Before, the key was quoted in full in
a "connection dropped" error retried three times (stderr, ``--trace``, the session), and a
non-ASCII key crashed with a traceback.
"""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelRequest, connect
from minipi.errors import ConfigError, ModelConnectionError
from support.cli import clean_env, minipi
from support.fake import FakeServer, Turn

pytestmark = pytest.mark.reliability

KEY = "sk-proj-Secret1234567890"
BAD_KEYS = {
    "crlf": (KEY + "\r", "a line end", len(KEY) + 1),
    "lf": (KEY + "\n", "a line end", len(KEY) + 1),
    "inner-newline": (KEY[:5] + "\n" + KEY[5:], "a line end", 6),
    "tab": (KEY + "\t", "a space or tab", len(KEY) + 1),
    "space": (KEY[:3] + " " + KEY[3:], "a space or tab", 4),
    "nul": (KEY + "\x00", "a control character", len(KEY) + 1),
    "escape": ("\x1b[31m" + KEY, "a control character", 1),
    "curly-quotes": ("\u201c" + KEY + "\u201d", "a non-ASCII character", 1),
    "nbsp": (KEY + "\u00a0", "a non-ASCII character", len(KEY) + 1),
    "surrogate": (KEY + "\ud800", "a broken character", len(KEY) + 1),
}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer([Turn("never")] * 4) as fake:
        yield fake


@pytest.mark.parametrize("case", sorted(BAD_KEYS))
def test_a_key_that_cannot_be_sent_is_refused_without_showing_it(case: str) -> None:
    key, flaw, position = BAD_KEYS[case]
    with pytest.raises(ConfigError) as caught:
        Endpoint("http://127.0.0.1:9/v1", "m", api_key=key)
    message = caught.value.message
    assert f"holds {flaw} at position {position} of {len(key)}" in message
    assert "--api-key / OPENAI_API_KEY" in message
    assert KEY not in message
    assert KEY[4:12] not in message  # no piece of it either
    assert caught.value.code == "config_error"


@pytest.mark.parametrize("key", ["sk-proj-AbC_123.xyz~", "x", "Bearer-like/+=token==", "a" * 400])
def test_a_usable_key_is_accepted_and_sent(key: str, server: FakeServer) -> None:
    server.add(Turn("ok"))
    with closing(connect(Endpoint(server.base_url, "fake-model", api_key=key))) as client:
        client.create(ModelRequest([Message("user", "hi")]))
    assert server.requests[-1].headers["authorization"] == f"Bearer {key}"


@pytest.mark.parametrize(
    ("userinfo", "part"),
    [
        ("user:pw%0DTOPSECRET", "password"),
        ("TOPSECRET%0A:pw", "user name"),
        ("user:TOPSECRET%00", "password"),
    ],
)
def test_url_credentials_with_control_characters_are_refused(userinfo: str, part: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Endpoint(f"http://{userinfo}@127.0.0.1:8021/v1", "m")
    assert f"the {part} in the base URL holds" in caught.value.message
    assert "TOPSECRET" not in caught.value.message
    assert "%0" not in caught.value.message


def test_url_credentials_are_sent_as_basic_auth_never_in_the_url(server: FakeServer) -> None:
    server.add(Turn("ok"))
    base = server.base_url.replace("http://", "http://me:p%C3%A4ss%40word@")
    endpoint = Endpoint(base, "fake-model")
    assert "word" not in endpoint.base_url
    assert "word" not in repr(endpoint)
    with closing(connect(endpoint)) as client:
        client.create(ModelRequest([Message("user", "hi")]))
    sent = server.requests[-1].headers["authorization"]
    assert sent == "Basic " + base64.b64encode("me:päss@word".encode()).decode()


def test_no_library_error_can_carry_the_key_into_a_message() -> None:
    """Defence in depth: whatever an exception below says, the key is masked."""

    def leak(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError(f"broken: {request.headers['authorization']}")

    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", api_key=KEY)
    config = ClientConfig(max_retries=0)
    client = connect(endpoint, config, transport=httpx.MockTransport(leak))
    with closing(client), pytest.raises(ModelConnectionError) as caught:
        client.create(ModelRequest([Message("user", "hi")]))
    assert KEY not in str(caught.value)
    assert "Bearer ***" in str(caught.value)
    assert KEY not in repr(endpoint) + repr(client)


# --- base URLs (item 8) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "what"),
    [
        ("http://127.0.0.1:8021/v1?api-version=2024&key=TOPSECRET", "a ?query"),
        ("http://127.0.0.1:8021/v1/?x", "a ?query"),
        ("http://127.0.0.1:8021?x=1", "a ?query"),
        ("http://127.0.0.1:8021/v1#TOPSECRET", "a #fragment"),
        ("http://127.0.0.1:8021#frag", "a #fragment"),
    ],
)
def test_a_base_url_with_a_query_or_fragment_is_refused(url: str, what: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Endpoint(url, "m")
    assert f"has {what}" in caught.value.message
    assert "middle of the path" in caught.value.message
    assert "TOPSECRET" not in caught.value.message
    assert "--base-url" in caught.value.message


@pytest.mark.parametrize(
    ("port", "what"),
    [
        ("0", "out of range"),
        ("65536", "out of range"),
        ("99999999999", "out of range"),
        ("80a", "not a number"),
        ("", "not a number"),
        ("-1", "not a number"),
        ("\uff18\uff10", "not a number"),  # fullwidth digits: isdigit() is true
    ],
)
def test_a_bad_port_is_refused(port: str, what: str) -> None:
    with pytest.raises(ConfigError, match=f"the port .* is {what}"):
        Endpoint(f"http://127.0.0.1:{port}/v1", "m")


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1]:8021/v1",
        "http://localhost:1/v1",
        "https://api.example.com:65535/openai/v1",
        "http://my_host.internal/v1",
    ],
)
def test_good_base_urls_still_pass(url: str) -> None:
    assert Endpoint(url, "m").base_url == url


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8021/v 1",
        "http://127.0.0.1:8021/v1\r/x",
        "http://exa mple.com/v1",
        "http://\u201cexample.com\u201d/v1",
        "http://[::1/v1",
        "http://[::1]x/v1",
    ],
)
def test_base_urls_that_cannot_be_sent_are_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="--base-url"):
        Endpoint(url, "m")


# --- through the real CLI -------------------------------------------------------------------


def _ask(
    server: FakeServer, tmp_path: Path, *flags: str, base_url: str | None = None, **env: str
) -> tuple[int, str, str]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    args = ["ask", "hi", "--project", str(project), "--model", "fake-model"]
    args += ["--base-url", base_url or server.base_url, *flags]
    environment = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"), **env)
    proc = minipi(*args, env=environment)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def _files_hold(directory: Path, secret: str) -> list[str]:
    """Files under ``directory`` holding ``secret`` (the session database read as SQL too)."""
    found = []
    for path in directory.rglob("*") if directory.exists() else ():
        if path.is_file() and secret.encode() in path.read_bytes():
            found.append(str(path))
        if path.suffix == ".db":
            with sqlite3.connect(path) as db:
                rows = db.execute("SELECT event FROM entries").fetchall()
            found += [str(path) for (event,) in rows if secret in event]
    return found


@pytest.mark.parametrize("case", ["crlf", "curly-quotes", "escape"])
def test_cli_refuses_the_key_with_exit_2_and_writes_it_nowhere(
    case: str, server: FakeServer, tmp_path: Path
) -> None:
    key = BAD_KEYS[case][0]
    trace = tmp_path / "trace.jsonl"
    code, stdout, stderr = _ask(
        server, tmp_path, "--trace", str(trace), "--session", "s1", "--api-key", key
    )
    assert code == 2, stderr
    assert "the API key holds" in stderr
    assert "--api-key / OPENAI_API_KEY" in stderr
    assert KEY not in stdout + stderr
    assert server.posts == 0  # nothing was sent, nothing retried
    assert _files_hold(tmp_path, KEY) == []


def test_cli_refuses_a_key_from_the_environment_too(server: FakeServer, tmp_path: Path) -> None:
    code, _, stderr = _ask(server, tmp_path, OPENAI_API_KEY=BAD_KEYS["curly-quotes"][0])
    assert code == 2, stderr
    assert "non-ASCII character at position 1" in stderr
    assert KEY not in stderr
    assert server.posts == 0


@pytest.mark.parametrize(
    ("tail", "expected"),
    [("/v1?api-version=1", "a ?query"), ("/v1#x", "a #fragment")],
)
def test_cli_refuses_a_base_url_with_a_query(
    server: FakeServer, tmp_path: Path, tail: str, expected: str
) -> None:
    base = server.base_url.removesuffix("/v1") + tail
    code, _, stderr = _ask(server, tmp_path, base_url=base)
    assert code == 2, stderr
    assert expected in stderr
    assert not server.requests


@pytest.mark.parametrize("port", ["70000", "0", "http"])
def test_cli_refuses_a_bad_port(server: FakeServer, tmp_path: Path, port: str) -> None:
    code, _, stderr = _ask(server, tmp_path, base_url=f"http://127.0.0.1:{port}/v1")
    assert code == 2, stderr
    assert "the port" in stderr
