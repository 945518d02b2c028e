"""The errors of a failed HTTP exchange, worded for ``http.py``: each says what happened and
what to do next, from ``minipi.said`` (so a run in Chinese says the same facts). Nothing here
touches the network; secrets never reach these messages (``http.py`` removes them from the
answer, and from exception texts, first: ``minipi.ai.secrets``)."""

from __future__ import annotations

from typing import Literal

import httpx

from minipi.ai.answers import Answer, server_message
from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.errors import (
    ModelConnectionError,
    ModelDeadlineError,
    ModelError,
    ModelHTTPError,
    ModelResponseTooLargeError,
    ModelTimeoutError,
)
from minipi.said import Said, SaidValue

__all__ = [
    "cancelled_error",
    "client_error",
    "connection_error",
    "deadline_error",
    "not_transient",
    "server_error",
    "timeout_error",
    "too_large",
]

_NOT_TRANSIENT = frozenset({501, 505})  # Not Implemented, HTTP Version Not Supported
_GATEWAY = frozenset({502, 503, 504})  # a proxy in front of a restarting server: transient
_NAMES = {501: "Not Implemented", 505: "HTTP Version Not Supported"}


def not_transient(answer: Answer) -> bool:
    """A 5xx that retrying cannot fix: 501, 505, or an HTML page that is not a gateway's."""
    status = answer.status_code
    return status in _NOT_TRANSIENT or (answer.is_html and status not in _GATEWAY)


def server_error(answer: Answer, url: str) -> ModelHTTPError:
    """The error of a ``not_transient`` answer, at once."""
    status = answer.status_code
    if answer.is_html:
        said = Said.of("server_html", url=url, status=status)
    else:
        name = _NAMES.get(status, "server error")
        detail = server_message(answer)
        said = Said.of("server_refuses", url=url, status=status, name=name, detail=detail)
    return ModelHTTPError(said, status=status, url=url, code="endpoint_unavailable")


def client_error(
    answer: Answer, url: str, endpoint: Endpoint, models: list[str] | None
) -> ModelHTTPError:
    """A 3xx or 4xx that retrying cannot fix, with what to change (``models``: for a 404
    that names the model, the ids the server lists; None for any other 404)."""
    status, detail = answer.status_code, server_message(answer)
    if 300 <= status < 400:  # redirects are not followed: a request must not change hosts
        location = answer.headers.get("location")
        target = location[:200] if location else Said.of("another_address")
        said = Said.of("redirected", url=url, status=status, target=target)
        return ModelHTTPError(said, status=status, url=url, code="redirected")
    if status == 404:
        return _not_found(url, endpoint, models)
    if status in (401, 403):
        sent = Said.of("key_refused" if endpoint.api_key else "no_key_sent")
        said = Said.of("unauthorized", url=url, status=status, sent=sent, detail=detail)
        return ModelHTTPError(said, status=status, url=url, code="unauthorized")
    if status == 400:
        key = "bad_request_context" if "context" in detail.lower() else "bad_request"
        said = Said.of(key, url=url, detail=detail)
        return ModelHTTPError(said, status=status, url=url, code="bad_request")
    said = Said.of("answered", url=url, status=status, detail=detail)
    return ModelHTTPError(said, status=status, url=url)


def _not_found(url: str, endpoint: Endpoint, models: list[str] | None) -> ModelHTTPError:
    if models is not None:
        facts: dict[str, SaidValue] = {"model": endpoint.model, "base_url": endpoint.base_url}
        if models:
            said = Said.of("model_not_found_listed", models=", ".join(models), **facts)
        else:
            said = Said.of("model_not_found", **facts)
        return ModelHTTPError(said, status=404, url=url, code="model_not_found")
    key = "not_found_responses" if endpoint.wire == "responses" else "not_found"
    return ModelHTTPError(Said.of(key, url=url), status=404, url=url, code="not_found")


def timeout_error(
    url: str, exc: httpx.TimeoutException, tries: int, config: ClientConfig, *, streaming: bool
) -> ModelTimeoutError:
    """The request's own timeouts (not the deadline): connect, stream idle, or the read
    timeout, which bounds a plain answer as a whole."""
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        limit = Said.of("limit_connect", seconds=f"{config.connect_timeout:g}")
    elif streaming and isinstance(exc, httpx.ReadTimeout):
        limit = Said.of("limit_stream_idle", seconds=f"{config.stream_idle_timeout:g}")
    else:
        limit = Said.of("limit_read", seconds=f"{config.read_timeout:g}")
    return ModelTimeoutError(Said.of("timeout", url=url, limit=limit, tries=tries), url=url)


def cancelled_error(url: str) -> ModelError:
    """The request was given up because its answer is no longer wanted (``cancel`` set)."""
    return ModelError(
        f"the request to {url} was given up: the run was cancelled", url=url, code="cancelled"
    )


def deadline_error(
    url: str, doing: Literal["before_sending", "waiting", "streaming"] | ModelError
) -> ModelDeadlineError:
    """The run's deadline passed while ``doing`` that, or before the request that failed with
    ``doing`` (an error) could be retried."""
    if isinstance(doing, ModelError):
        what = Said.of("doing_before_retry", after=doing.said or doing.message)
    else:
        what = Said.of(f"doing_{doing}")
    return ModelDeadlineError(Said.of("deadline", doing=what, url=url), url=url)


def connection_error(
    url: str, base_url: str, detail: str, tries: int, *, connected: bool
) -> ModelConnectionError:
    """Connected, then the connection broke; or no connection at all."""
    key = "connection_dropped" if connected else "cannot_connect"
    said = Said.of(key, base_url=base_url, tries=tries, detail=detail)
    return ModelConnectionError(said, url=url)


def too_large(
    url: str, limit: int, what: Literal["answer", "stream_line", "streamed_reply"] = "answer"
) -> ModelResponseTooLargeError:
    if limit >= 2**20:
        size = Said.of("size_mib", n=f"{limit / 2**20:g}")
    else:
        size = Said.of("size_bytes", n=limit)
    said = Said.of("too_large", what=Said.of(f"what_{what}"), url=url, size=size)
    return ModelResponseTooLargeError(said, limit=limit, url=url)
