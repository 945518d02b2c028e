"""Issue 37, item 3: an endpoint that echoes the API key (or the URL's credentials) gets it
written nowhere: not on stderr, not in the ``--trace`` file, not in ``sessions.db``, whether
the echo is in an error body (JSON or not, cut at the snippet's length or not), a streamed
error, or the reply itself. Before, the 401 message quoted the server's words, key and all,
on stderr, in the trace and in the session's run end."""

from __future__ import annotations

import base64
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from minipi.ai import ClientConfig, Endpoint, Message, ModelRequest, connect
from minipi.errors import ModelError
from support.cli import clean_env, minipi
from support.fake import Exchange, FakeServer, Step, Turn

pytestmark = pytest.mark.reliability

KEY = "Zq7-echo-4c1e9b2d8a6f3e0d"
PIECES = (KEY, KEY[:9], KEY[-9:])
"""No piece of the key either (a message cut at its length would keep the key's start)."""
USER, PASSWORD = "alice", "pw-Hq2v8Lk3Nc5Rt9"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass(frozen=True)
class Echo:
    """Answers ``status`` with ``body``, where ``@AUTH@`` is the request's Authorization
    header and ``@KEY@`` the credential in it (a server that quotes what it was sent)."""

    status: int
    body: str
    kind: str = "application/json"

    def play(self, exchange: Exchange) -> None:
        auth = exchange.request.headers.get("authorization", "")
        text = self.body.replace("@AUTH@", auth).replace("@KEY@", auth.partition(" ")[2])
        exchange.send(self.status, text.encode(), {"content-type": self.kind})


@dataclass(frozen=True)
class EchoingAnswer:
    """A proper reply (streamed when asked) whose text quotes the key it was sent."""

    def play(self, exchange: Exchange) -> None:
        auth = exchange.request.headers.get("authorization", "")
        exchange.answer(Turn(f"the server saw {auth}; the key was {auth.partition(' ')[2]}"))


ECHOES: dict[str, Step] = {
    "401 JSON": Echo(401, '{"error": {"message": "Invalid API key: @AUTH@"}}'),
    "422 header in JSON": Echo(  # FastAPI's validation errors quote the input
        422, '{"detail": [{"loc": ["header", "authorization"], "input": "@AUTH@"}]}'
    ),
    "403 text cut at 300": Echo(403, "x" * 287 + " @KEY@", "text/plain"),  # 12 kept by a snippet
    "200 not JSON": Echo(200, "<p>key @KEY@</p>", "text/plain"),
    "streamed error": Echo(
        200, 'data: {"error": {"message": "quota exceeded for @KEY@"}}\n\n', "text/event-stream"
    ),
    "the answer": EchoingAnswer(),
}


def _outputs(tmp_path: Path, server: FakeServer, *flags: str) -> dict[str, str]:
    """Run ``minipi ask`` against ``server`` with a trace and a session; every text it wrote."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("hello\n", encoding="utf-8")
    data, trace = tmp_path / "data", tmp_path / "trace.json"
    args = ["ask", "hi", "--project", str(project), "--model", "fake-model", "--max-turns", "2"]
    env = clean_env(MINIPI_DATA_DIR=str(data))
    proc = minipi(*args, "--trace", str(trace), "--session", "s1", *flags, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert server.posts >= 1
    texts = {"stdout": proc.stdout, "stderr": proc.stderr}
    texts["trace"] = trace.read_text(encoding="utf-8")
    with closing(sqlite3.connect(data / "sessions.db")) as db:
        texts["sessions.db"] = "\n".join(db.iterdump())
    for path in data.rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return texts


def _holding(texts: dict[str, str], pieces: tuple[str, ...]) -> list[str]:
    return [f"{name}: {piece}" for name, text in texts.items() for piece in pieces if piece in text]


@pytest.mark.parametrize("case", sorted(ECHOES))
def test_an_echoed_key_is_written_nowhere(case: str, tmp_path: Path) -> None:
    with FakeServer([ECHOES[case]] * 4) as server:
        base = server.base_url
        texts = _outputs(tmp_path, server, "--base-url", base, "--api-key", KEY)
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    if case == "the answer":  # its pieces are shown as they stream, the server's as sent
        texts.pop("stderr")
    assert _holding(texts, PIECES) == []
    assert "***" in texts["trace"]  # the message quotes the echo, without the key


def test_an_answer_that_echoes_the_key_is_shown_without_it(tmp_path: Path) -> None:
    with FakeServer([ECHOES["the answer"]]) as server:
        flags = ("--base-url", server.base_url, "--api-key", KEY, "--no-stream")
        texts = _outputs(tmp_path, server, *flags)
    assert _holding(texts, PIECES) == []
    assert "the key was ***" in texts["stdout"]


def test_echoed_url_credentials_are_written_nowhere(tmp_path: Path) -> None:
    with FakeServer([ECHOES["401 JSON"]]) as server:
        base = server.base_url.replace("http://", f"http://{USER}:{PASSWORD}@")
        texts = _outputs(tmp_path, server, "--base-url", base)
    assert server.requests[-1].headers["authorization"] == f"Basic {BASIC}"
    assert _holding(texts, (PASSWORD, BASIC)) == []


def test_the_library_client_raises_errors_without_the_key() -> None:
    """The root: every error the HTTP client raises, and the reply it returns, are clean."""
    quiet = ClientConfig(max_retries=0)
    request = ModelRequest([Message("user", "hi")])
    for case in ("401 JSON", "403 text cut at 300", "streamed error"):
        with FakeServer([ECHOES[case]]) as server:
            endpoint = Endpoint(server.base_url, "fake-model", api_key=KEY)
            with closing(connect(endpoint, quiet)) as client, pytest.raises(ModelError) as caught:
                client.create(request)
        error = caught.value
        shown = [error.message, str(error), *map(str, error.args)]
        shown += [error.said.text(chinese=True), error.said.text()] if error.said else []
        assert not [piece for text in shown for piece in PIECES if piece in text], case
    with FakeServer([EchoingAnswer()]) as server:
        endpoint = Endpoint(server.base_url, "fake-model", api_key=KEY)
        with closing(connect(endpoint, quiet)) as client:
            response = client.create(request)
    assert KEY not in repr(response)
    assert "***" in repr(response)
