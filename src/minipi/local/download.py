"""The first-use download of Qwen3-0.6B into the Hugging Face cache, through huggingface_hub.

``hf_hub_download`` does the work: the hub's own cache layout (``blobs/<etag>``, a symlink in
``snapshots/<commit>/``, ``refs/main``), a dropped transfer resumed with Range requests, the
size checked, the token (``HF_TOKEN``, else the one ``hf auth login`` saved) sent to the hub
and never to the CDN, a lock against a parallel download of the same file. minipi adds:

- a probe first: one metadata request without retries (``get_hf_file_metadata``, 3 s to
  connect). When no copy is cached, ``hf_hub_download`` answers an unreachable hub by retrying
  with back-off for about half a minute (huggingface_hub 2.x, measured: 23 s against a closed
  port, see the test of the fall-through); minipi has a next option and says so at once;
- the sha256 of the file checked against the hub's ETag (huggingface_hub checks only the size
  of a plain HTTP download) and the GGUF magic; a file that fails is removed from the cache.

huggingface_hub is imported only here, when a download is attempted (0.1-0.3 s to import:
``minipi --help``, runs against an endpoint and runs with a cached model never pay it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minipi.errors import ConfigError
from minipi.local.models import GGUF_MAGIC, QWEN_FILE, QWEN_REPO

__all__ = ["CONNECT_TIMEOUT", "download_qwen"]

CONNECT_TIMEOUT = 3.0
"""Seconds to reach the hub; an unreachable hub fails within this."""
_ANSWER_TIMEOUT = 10.0  # huggingface_hub's own default for the metadata request
_SHA256 = re.compile(r"[0-9a-f]{64}")


def download_qwen(
    cache: Path,
    endpoint: str,
    *,
    token: str | None = None,
    report: Callable[[str], None] | None = None,
) -> Path:
    """Download the Qwen3-0.6B GGUF into ``cache``; the path of the file in its snapshot.

    ``endpoint`` is the hub's root URL (``https://huggingface.co`` or a mirror); ``token``
    overrides huggingface_hub's own lookup (``HF_TOKEN``, the saved login). ``report``
    receives one-line messages before and after the transfer (huggingface_hub draws its
    progress bar on stderr in between). Raises ``ConfigError`` (code ``download_failed``)
    with the reason on any failure; no file that failed a check is left in the cache.
    """
    say = report or _quiet
    try:
        import httpx2
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    except ImportError as exc:
        raise _failed(f"{exc.name} is not installed: pip install 'minipi[local]'") from None
    failures = (httpx2.HTTPError, httpx2.InvalidURL, OSError, ValueError)
    url = hf_hub_url(QWEN_REPO, QWEN_FILE, endpoint=endpoint)
    timeout: Any = httpx2.Timeout(_ANSWER_TIMEOUT, connect=CONNECT_TIMEOUT)  # hf says float
    try:
        metadata = get_hf_file_metadata(url, token=token, timeout=timeout, endpoint=endpoint)
    except failures as exc:
        unreached = isinstance(exc, httpx2.TransportError | httpx2.InvalidURL)
        where = f"cannot reach {endpoint}" if unreached else f"{endpoint} refused it"
        raise _failed(f"{where}: {_reason(exc)}") from None
    size = f" ({_size(metadata.size)})" if metadata.size else ""
    say(f"downloading {QWEN_FILE}{size} from {endpoint} into {cache} …")
    try:
        path = Path(
            hf_hub_download(QWEN_REPO, QWEN_FILE, cache_dir=cache, endpoint=endpoint, token=token)
        )
    except failures as exc:
        raise _failed(f"fetching {url} failed: {_reason(exc)}") from None
    checked = _check(path, metadata.etag)
    say(f"downloaded {QWEN_FILE} ({_size(path.stat().st_size)}{checked})")
    return path


def _check(path: Path, etag: str | None) -> str:
    """Check the file's sha256 against ``etag`` (when it is one) and its GGUF magic; remove it
    from the cache and raise when either fails. What was checked, for the message."""
    blob = path.resolve()
    with blob.open("rb") as handle:
        magic = handle.read(len(GGUF_MAGIC))
        handle.seek(0)
        digest = hashlib.file_digest(handle, "sha256").hexdigest() if _is_sha(etag) else None
    problem = None
    if digest is not None and digest != etag:
        problem = f"the file's sha256 {digest[:12]}… is not the hub's {str(etag)[:12]}…"
    elif magic != GGUF_MAGIC:
        problem = "the server sent something that is not a GGUF file"
    if problem is not None:
        path.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        raise _failed(problem)
    return "; sha256 checked" if digest is not None else ""


def _is_sha(etag: str | None) -> bool:
    return etag is not None and _SHA256.fullmatch(etag) is not None


def _size(count: int) -> str:
    return f"{count / 1e6:.0f} MB" if count >= 1e6 else f"{count / 1e3:.0f} kB"


def _failed(reason: str) -> ConfigError:
    return ConfigError(reason, code="download_failed")


def _reason(exc: BaseException) -> str:
    """The first line of the error (huggingface_hub's HTTP errors carry several)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _quiet(_: str) -> None:
    pass
