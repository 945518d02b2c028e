"""Reading an HTTP answer for ``http.py``: its JSON, the server's own error message, the
``Retry-After`` it asks for, and short wording helpers. An ``Answer`` is the status, headers
and (bounded, decoded) body ``http.py`` read: nothing here reads from the network."""

from __future__ import annotations

import email.utils
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from minipi.ai.depth import check_depth, check_values
from minipi.ai.types import JsonObject
from minipi.errors import ModelHTTPError, ModelProtocolError
from minipi.said import Said, SaidValue

__all__ = [
    "Answer",
    "decode_json",
    "reason",
    "retry_after",
    "server_message",
    "snippet",
    "unavailable",
]

_SNIPPET = 300


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer as read: status, headers, and the decoded body (maybe cut short)."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def is_html(self) -> bool:
        kind = self.headers.get("content-type", "").lower()
        return "html" in kind or self.content.lstrip()[:15].lower().startswith(
            (b"<!doctype html", b"<html")
        )


def decode_json(response: Answer, url: str) -> JsonObject:
    """The 2xx body as a JSON object; ``ModelProtocolError`` for anything else (E12), or for
    a shape no reply has (``depth.py``: too many values, nested too deep)."""
    check_values(response.content, f"the answer from {url}")
    try:
        data = json.loads(response.content)
    except (ValueError, RecursionError):
        kind = response.headers.get("content-type", "no content type")
        raise ModelProtocolError(
            f"{url} answered {response.status_code} with a body that is not JSON ({kind}): "
            f"{snippet(response.text)!r} — is --base-url a proxy or web page instead of the "
            "model API? (check HTTP_PROXY / NO_PROXY)",
            url=url,
        ) from None
    if not isinstance(data, dict):
        raise ModelProtocolError(
            f"{url} answered JSON that is not an object: {snippet(response.text)!r}", url=url
        )
    check_depth(data, f"the answer from {url}")
    return data


def unavailable(
    response: Answer, url: str, tries: int, wait: tuple[float, float] | None = None
) -> ModelHTTPError:
    """A retryable status that is not (or no longer) retried: 429 -> ``rate_limited``; after
    ``tries``, or at once when the server asks to ``wait`` (seconds asked, the most minipi
    waits) longer than minipi waits."""
    status = response.status_code
    code = "rate_limited" if status == 429 else "endpoint_unavailable"
    detail = server_message(response)
    facts: dict[str, SaidValue] = {"url": url, "status": status, "detail": detail}
    if wait is None:
        said = Said.of("rate_limited" if status == 429 else "unavailable", tries=tries, **facts)
    else:
        asked, most = (f"{seconds:g}" for seconds in wait)
        key = "rate_limited_wait" if status == 429 else "unavailable_wait"
        said = Said.of(key, wait=asked, most=most, **facts)
    return ModelHTTPError(said, status=status, url=url, code=code)


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asks us to wait (``Retry-After`` seconds or HTTP-date), if any;
    ``inf`` for a wait too long to express. ``nan`` and other nonsense ask nothing."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            seconds = _http_date(value) if scale == 1.0 else math.nan
        if not math.isnan(seconds):
            return max(seconds, 0.0)
    return None


def _http_date(value: str) -> float:
    """Seconds until the HTTP-date ``value``; nan if it is not one."""
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def server_message(response: Answer) -> str:
    """The error text the server gave (``error.message`` and kin), else a body snippet."""
    try:
        data: Any = json.loads(response.content)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        for candidate in (
            error.get("message") if isinstance(error, dict) else error,
            data.get("message"),
            data.get("detail"),
        ):
            if isinstance(candidate, str) and candidate:
                return snippet(candidate)
    if response.is_html:
        return "an HTML page (a proxy or web server, not the model API?)"
    return snippet(response.text) or f"HTTP {response.status_code} with an empty body"


def snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"


def reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
