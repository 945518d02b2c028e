"""The errors of a failed HTTP exchange, worded for ``http.py``: each says what happened and
what to do next. Nothing here touches the network; secrets never reach these messages
(``http.py`` passes exception texts through ``Redactor`` first)."""

from __future__ import annotations

import httpx

from minipi.ai.answers import Answer, plural, server_message
from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.errors import (
    ModelConnectionError,
    ModelDeadlineError,
    ModelHTTPError,
    ModelResponseTooLargeError,
    ModelTimeoutError,
)

__all__ = [
    "Redactor",
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


class Redactor:
    """Removes an endpoint's secrets (key, URL credentials) from texts of other libraries'
    exceptions before they go into a message (defence in depth: ``Endpoint`` already
    refuses what httpx would quote back)."""

    def __init__(self, endpoint: Endpoint) -> None:
        secrets = [endpoint.api_key or ""]
        secrets += list(endpoint.basic_auth or ())
        shown = [repr(s)[1:-1] for s in secrets]
        self._secrets = sorted({s for s in secrets + shown if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, exc: BaseException) -> str:
        text = str(exc) or type(exc).__name__
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def not_transient(answer: Answer) -> bool:
    """A 5xx that retrying cannot fix: 501, 505, or an HTML page that is not a gateway's."""
    status = answer.status_code
    return status in _NOT_TRANSIENT or (answer.is_html and status not in _GATEWAY)


def server_error(answer: Answer, url: str) -> ModelHTTPError:
    """The error of a ``not_transient`` answer, at once."""
    status = answer.status_code
    if answer.is_html:
        message = (
            f"{url} answered {status} with an HTML page, not the model API's JSON — is "
            "--base-url a web page or proxy? (check --base-url / QWEN_BASE_URL, and "
            "HTTP_PROXY / NO_PROXY)"
        )
    else:
        message = (
            f"{url} answered {status} ({_NAMES.get(status, 'server error')}): "
            f"{server_message(answer)} — this server does not handle this request and retrying "
            "will not help; check --base-url and --wire"
        )
    return ModelHTTPError(message, status=status, url=url, code="endpoint_unavailable")


def client_error(
    answer: Answer, url: str, endpoint: Endpoint, models: list[str] | None
) -> ModelHTTPError:
    """A 3xx or 4xx that retrying cannot fix, with what to change (``models``: for a 404
    that names the model, the ids the server lists; None for any other 404)."""
    status, detail = answer.status_code, server_message(answer)
    if 300 <= status < 400:  # redirects are not followed: a request must not change hosts
        target = answer.headers.get("location") or "another address"
        return ModelHTTPError(
            f"{url} redirected ({status}) to {target[:200]} — set --base-url to the address "
            "the API really has (often https:// instead of http://)",
            status=status,
            url=url,
            code="redirected",
        )
    if status == 404:
        return _not_found(url, endpoint, models)
    if status in (401, 403):
        sent = "the API key was refused" if endpoint.api_key else "no API key was sent"
        return ModelHTTPError(
            f"{url} answered {status} ({sent}): {detail} — check --api-key / OPENAI_API_KEY",
            status=status,
            url=url,
            code="unauthorized",
        )
    if status == 400:
        hint = ""
        if "context" in detail.lower():
            hint = " — the conversation may be longer than the model's context window"
        return ModelHTTPError(
            f"{url} rejected the request (400): {detail}{hint}",
            status=status,
            url=url,
            code="bad_request",
        )
    return ModelHTTPError(f"{url} answered {status}: {detail}", status=status, url=url)


def _not_found(url: str, endpoint: Endpoint, models: list[str] | None) -> ModelHTTPError:
    if models is not None:
        listing = f" (available: {', '.join(models)})" if models else ""
        return ModelHTTPError(
            f"model '{endpoint.model}' not found at {endpoint.base_url}{listing} — check "
            "--model / QWEN_MODEL",
            status=404,
            url=url,
            code="model_not_found",
        )
    hint = ""
    if endpoint.wire == "responses":
        hint = ", or this server does not speak the Responses API: try --wire chat"
    return ModelHTTPError(
        f"{url} not found (404) — check --base-url (it usually ends in /v1){hint}",
        status=404,
        url=url,
        code="not_found",
    )


def timeout_error(
    url: str, exc: httpx.TimeoutException, tries: int, config: ClientConfig, *, streaming: bool
) -> ModelTimeoutError:
    """The request's own timeouts (not the deadline): connect, stream idle, or the read
    timeout, which bounds a plain answer as a whole."""
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        limit = f"{config.connect_timeout:g} s connect"
    elif streaming and isinstance(exc, httpx.ReadTimeout):
        limit = f"{config.stream_idle_timeout:g} s stream idle"
    else:
        limit = f"{config.read_timeout:g} s read"
    return ModelTimeoutError(
        f"no answer from {url} within the {limit} timeout ({plural(tries, 'attempt')}) — "
        "the server may be overloaded or the prompt too long; raise the timeout or use a "
        "smaller model",
        url=url,
    )


def deadline_error(url: str, doing: str) -> ModelDeadlineError:
    return ModelDeadlineError(
        f"the run's time limit (--max-seconds) ran out {doing} ({url}); nothing of this "
        "reply was used — raise --max-seconds if the model needs longer",
        url=url,
    )


def connection_error(
    url: str, base_url: str, detail: str, tries: int, *, connected: bool
) -> ModelConnectionError:
    if connected:  # connected, then the connection broke
        return ModelConnectionError(
            f"the connection to {base_url} dropped before the answer was complete "
            f"({plural(tries, 'attempt')}: {detail}) — the server may have crashed or "
            "restarted, or a proxy cut the connection",
            url=url,
        )
    return ModelConnectionError(
        f"cannot connect to {base_url} — is the server running? (start one with `minipi "
        f"serve`, or set --base-url / QWEN_BASE_URL) [{plural(tries, 'attempt')}: {detail}]",
        url=url,
    )


def too_large(url: str, limit: int, what: str = "answer") -> ModelResponseTooLargeError:
    size = f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit} bytes"
    return ModelResponseTooLargeError(
        f"the {what} from {url} is larger than {size} (decoded), the most minipi reads of one "
        "reply; reading stopped and nothing of it was used. If a reply this large is "
        "expected, raise the limit with --max-response-mb (ClientConfig.max_response_bytes)",
        limit=limit,
        url=url,
    )
