"""The first-use download of Qwen3-0.6B into the Hugging Face cache (no huggingface_hub).

The file is streamed from ``{endpoint}/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf``
into a temporary file next to its final place, checked (complete, GGUF magic) and renamed
atomically to ``models--Qwen--Qwen3-0.6B-GGUF/snapshots/<commit>/Qwen3-0.6B-Q8_0.gguf``, and
``refs/main`` records the commit, so huggingface_hub and minipi both find it later. (The hub
itself stores a blob and a symlink; a plain file in the snapshot is equally valid for readers.)

Offline it fails fast: a 3 s connect timeout, and DNS failures are immediate. Proxies from the
environment are honoured.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx

from minipi.errors import ConfigError
from minipi.local.models import GGUF_MAGIC, QWEN_FILE, QWEN_REPO

__all__ = ["CONNECT_TIMEOUT", "download_qwen"]

CONNECT_TIMEOUT = 3.0
"""Seconds to reach the hub; an unreachable hub fails within this."""
_READ_TIMEOUT = 30.0
_CHUNK = 1 << 20
_FALLBACK_COMMIT = "main"
_HEADERS = {"accept-encoding": "identity"}  # the byte count must match Content-Length


def download_qwen(
    cache: Path, endpoint: str, *, report: Callable[[str], None] | None = None
) -> Path:
    """Download the Qwen3-0.6B GGUF into ``cache``; the path of the complete file.

    ``endpoint`` is the hub's root URL (``https://huggingface.co`` or a mirror). ``report``
    receives one-line progress messages. Raises ``ConfigError`` (code ``download_failed``)
    with the reason on any failure; nothing partial is left in the cache.
    """
    url = f"{endpoint.rstrip('/')}/{QWEN_REPO}/resolve/main/{QWEN_FILE}"
    repo = cache / ("models--" + QWEN_REPO.replace("/", "--"))
    timeout = httpx.Timeout(_READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=True, headers=_HEADERS) as client,
            client.stream("GET", url) as response,
        ):
            if not response.is_success:
                raise _failed(f"{url} answered {response.status_code}")
            commit = _commit(response)
            target = repo / "snapshots" / commit / QWEN_FILE
            _save(response, target, report or _quiet)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise _failed(f"cannot reach {endpoint}: {_reason(exc)}") from None
    except httpx.HTTPError as exc:
        raise _failed(f"fetching {url} failed: {_reason(exc)}") from None
    except OSError as exc:
        raise _failed(f"cannot write into {cache}: {exc.strerror or exc}") from None
    with contextlib.suppress(OSError):  # only a hint for huggingface_hub; the file is there
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return target


def _save(response: httpx.Response, target: Path, report: Callable[[str], None]) -> None:
    """Stream ``response`` into ``target`` via a temporary file in the same directory."""
    target.parent.mkdir(parents=True, exist_ok=True)
    expected = _content_length(response)
    size = f" ({expected / 1e6:.0f} MB)" if expected else ""
    report(f"downloading {QWEN_FILE}{size} into {target.parent} …")
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - renamed or removed below
        dir=target.parent, prefix=f".{QWEN_FILE}.", suffix=".incomplete", delete=False
    )
    temporary = Path(handle.name)
    try:
        with handle:
            received = _copy(response, handle, expected, report)
        _check(temporary, received, expected)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    report(f"downloaded {QWEN_FILE} ({received / 1e6:.0f} MB)")


def _copy(
    response: httpx.Response,
    handle: tempfile._TemporaryFileWrapper[bytes],
    expected: int | None,
    report: Callable[[str], None],
) -> int:
    """Write the body to ``handle``; bytes received. Reports every 10 % when the size is known."""
    received, next_step = 0, 10
    for chunk in response.iter_bytes(_CHUNK):
        handle.write(chunk)
        received += len(chunk)
        if expected and received * 100 >= next_step * expected:
            report(f"… {received * 100 // expected}% of {QWEN_FILE}")
            next_step = received * 100 // expected + 10
    return received


def _check(path: Path, received: int, expected: int | None) -> None:
    if expected is not None and received != expected:
        raise _failed(f"the download stopped after {received} of {expected} bytes")
    with path.open("rb") as handle:
        if handle.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
            raise _failed("the server sent something that is not a GGUF file")


def _commit(response: httpx.Response) -> str:
    """The repository commit the hub resolved ``main`` to (``X-Repo-Commit``, sent before the
    redirect to the CDN), or ``main`` when no response carried it."""
    for answer in (response, *response.history):
        commit = str(answer.headers.get("x-repo-commit", "")).strip()
        if commit and "/" not in commit and commit not in (".", ".."):
            return commit
    return _FALLBACK_COMMIT


def _content_length(response: httpx.Response) -> int | None:
    try:
        value = int(response.headers.get("content-length", ""))
    except ValueError:
        return None
    return value if value > 0 else None


def _failed(reason: str) -> ConfigError:
    return ConfigError(reason, code="download_failed")


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _quiet(_: str) -> None:
    pass
