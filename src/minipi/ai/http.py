"""The HTTP core of ``HttpModelClient``: one keep-alive ``httpx.Client``, retries, errors.

The retry policy lives here and nowhere else (RELIABILITY default 7): 408, 409, 429, 5xx,
connection errors and timeouts are retried up to ``max_retries`` times with exponential
backoff; a ``Retry-After`` up to ``max_retry_after`` seconds is honoured, a longer one fails at
once. Other 4xx are never retried. Every failure is a ``ModelError`` whose message says what
to do next; nothing else escapes (no httpx exception, no traceback-only ``KeyError``).

This module imports httpx (~0.1 s), so only ``client.py`` imports it, lazily via ``connect``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

from minipi.ai.answers import (
    decode_json,
    plural,
    reason,
    retry_after,
    server_message,
    unavailable,
)
from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.sse import SSEParser
from minipi.ai.stream import StreamReader
from minipi.ai.types import JsonObject
from minipi.errors import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelProtocolError,
    ModelStreamError,
    ModelTimeoutError,
)

__all__ = ["HttpCore"]

_JSON_HEADERS = {"content-type": "application/json"}
_RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True, slots=True)
class _Retry:
    """An attempt failed in a way worth retrying: wait ``delay``, or raise ``error`` if last."""

    delay: float
    error: ModelError


class HttpCore:
    """POSTs JSON to one endpoint over a single keep-alive connection pool.

    Thread-safe (httpx.Client is); ``close()`` releases every connection.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        config: ClientConfig,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.config = config
        headers = {"accept": "application/json"}
        if endpoint.api_key:
            headers["authorization"] = f"Bearer {endpoint.api_key}"
        timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.read_timeout,
            write=config.read_timeout,
            pool=config.connect_timeout,
        )
        self._plain_timeout = timeout
        # Streaming: the read timeout bounds every silence, the first byte included.
        self._stream_timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.stream_idle_timeout,
            write=config.read_timeout,
            pool=config.connect_timeout,
        )
        if transport is None and endpoint.base_url.startswith("http://"):
            # Plain HTTP never does TLS (redirects are not followed; env proxies get their own
            # transports), so skip loading the CA bundle: 40-70 ms per client.
            transport = httpx.HTTPTransport(verify=False)
        auth = None
        if endpoint.basic_auth is not None and not endpoint.api_key:
            auth = httpx.BasicAuth(*endpoint.basic_auth)
        self._client = httpx.Client(
            headers=headers, timeout=timeout, transport=transport, auth=auth
        )

    def close(self) -> None:
        self._client.close()

    def post_json(
        self, path: str, body: bytes, reader: StreamReader | None = None
    ) -> tuple[JsonObject, int]:
        """POST ``body`` (encoded JSON) to ``base_url + path``; the answer's JSON object and
        the number of bytes sent. Raises a ``ModelError`` subclass after the retry policy.

        With a ``reader`` the answer is read as a stream of server-sent events, fed to the
        reader as they arrive; its ``result()`` is the answer. A failure before the stream
        begins follows the retry policy; one after it has begun raises ``ModelStreamError``
        (the caller decides whether to ask again: deltas were already shown)."""
        url = self.endpoint.base_url + path
        attempt = 0
        while True:
            outcome = self._attempt(url, body, attempt, reader)
            if not isinstance(outcome, _Retry):
                return outcome, len(body)
            if attempt == self.config.max_retries:
                raise outcome.error
            time.sleep(outcome.delay)
            attempt += 1

    def _attempt(
        self, url: str, body: bytes, attempt: int, reader: StreamReader | None
    ) -> JsonObject | _Retry:
        tries = attempt + 1
        try:
            request = self._client.build_request(
                "POST", url, content=body, headers=_JSON_HEADERS, timeout=self._timeout(reader)
            )
            # Not streamed: httpx reads the whole body here and closes the response.
            response = self._client.send(request, stream=reader is not None)
        except httpx.TimeoutException as exc:
            error = self._timeout_error(url, exc, tries, streaming=reader is not None)
            return _Retry(self._backoff(attempt), error)
        except httpx.TransportError as exc:  # refused, reset, DNS...: maybe transient
            return _Retry(self._backoff(attempt), self._connection_error(url, exc, tries))
        except httpx.HTTPError as exc:  # e.g. a body that fails to decompress: not transient
            raise ModelProtocolError(
                f"{url} sent an unreadable answer: {reason(exc)}", url=url
            ) from None
        except httpx.InvalidURL as exc:
            raise ConfigError(
                f"base URL {self.endpoint.base_url} is not valid ({exc}) — check --base-url / "
                "QWEN_BASE_URL"
            ) from None
        if reader is None:
            if response.is_success:
                return decode_json(response, url)
            return self._failure(response, url, attempt)
        try:
            return self._read_stream(response, url, attempt, reader)
        finally:
            response.close()

    def _timeout(self, reader: StreamReader | None) -> httpx.Timeout:
        return self._stream_timeout if reader is not None else self._plain_timeout

    def _read_stream(
        self, response: httpx.Response, url: str, attempt: int, reader: StreamReader
    ) -> JsonObject | _Retry:
        """Feed the events of a streamed answer to ``reader``; a plain answer is decoded."""
        try:
            if not response.is_success or "event-stream" not in response.headers.get(
                "content-type", ""
            ):
                response.read()
                if not response.is_success:
                    return self._failure(response, url, attempt)
                return decode_json(response, url)  # a server that does not stream
            return self._feed(response, reader)
        except httpx.TimeoutException:
            if reader.finished:  # the end marker came; only the body's close did not
                return reader.result()
            raise ModelStreamError(
                f"the stream from {url} sent no event for {self.config.stream_idle_timeout:g} s "
                "(stream idle timeout): the partial reply was not used",
                url=url,
                code="stream_stalled",
            ) from None
        except ModelError as exc:  # from the reader (a bad frame, an in-band error): say where
            if not exc.url:
                exc.url, exc.message = url, f"{exc.message} (from {url})"
            raise
        except httpx.HTTPError as exc:  # reset, closed mid-chunk, undecodable body
            if reader.finished:  # after the end marker: the reply is whole
                return reader.result()
            raise ModelStreamError(
                f"the stream from {url} broke off: {reason(exc)}; the partial reply was not used",
                url=url,
            ) from None

    def _feed(self, response: httpx.Response, reader: StreamReader) -> JsonObject:
        """The SSE events of ``response`` into ``reader`` until its end marker; its result.
        Keep-alive comments do not count as activity for the idle timeout."""
        parser = SSEParser()
        last_event = time.monotonic()
        for chunk in response.iter_bytes():
            if reader.finished:
                continue  # read to the body's end, so the connection can serve the next request
            events = parser.feed(chunk)
            now = time.monotonic()
            if events:
                last_event = now
            elif now - last_event > self.config.stream_idle_timeout:
                raise httpx.ReadTimeout("keep-alive comments only")
            for name, data in events:
                reader.event(name, data)
                if reader.finished:
                    break
        if not reader.finished:
            for name, data in parser.close():
                reader.event(name, data)
        return reader.result()

    def _failure(self, response: httpx.Response, url: str, attempt: int) -> _Retry:
        """A non-2xx answer: a ``_Retry`` when the policy allows one, else raise."""
        status = response.status_code
        if status not in _RETRY_STATUSES and status < 500:
            raise self._client_error(response, url)
        tries = plural(attempt + 1, "attempt")
        delay = retry_after(response.headers)
        if delay is not None and delay > self.config.max_retry_after:
            raise unavailable(
                response,
                url,
                "",
                f"the server asks to wait {delay:g} s "
                f"(Retry-After), more than the {self.config.max_retry_after:g} s "
                "minipi waits; try again later",
            )
        return _Retry(
            self._backoff(attempt) if delay is None else delay,
            unavailable(response, url, f" ({tries})", "try again later or check the server"),
        )

    def _timeout_error(
        self, url: str, exc: httpx.TimeoutException, tries: int, *, streaming: bool = False
    ) -> ModelTimeoutError:
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            limit = f"{self.config.connect_timeout:g} s connect"
        elif streaming and isinstance(exc, httpx.ReadTimeout):
            limit = f"{self.config.stream_idle_timeout:g} s stream idle"
        else:
            limit = f"{self.config.read_timeout:g} s read"
        return ModelTimeoutError(
            f"no answer from {url} within the {limit} timeout ({plural(tries, 'attempt')}) — "
            "the server may be overloaded or the prompt too long; raise the timeout or use a "
            "smaller model",
            url=url,
        )

    def _connection_error(
        self, url: str, exc: httpx.TransportError, tries: int
    ) -> ModelConnectionError:
        if not isinstance(exc, httpx.ConnectError):  # connected, then the connection broke
            return ModelConnectionError(
                f"the connection to {self.endpoint.base_url} dropped before the answer was "
                f"complete ({plural(tries, 'attempt')}: {reason(exc)}) — the server may have "
                "crashed or restarted, or a proxy cut the connection",
                url=url,
            )
        return ModelConnectionError(
            f"cannot connect to {self.endpoint.base_url} — is the server running? (start one "
            "with `minipi serve`, or set --base-url / QWEN_BASE_URL) "
            f"[{plural(tries, 'attempt')}: {reason(exc)}]",
            url=url,
        )

    def _backoff(self, attempt: int) -> float:
        # Jitter keeps many clients (batch runs) from retrying in lock-step.
        return self.config.backoff_base * 2.0**attempt * (1 + random.random() / 10)

    def _client_error(self, response: httpx.Response, url: str) -> ModelHTTPError:
        """A 4xx that retrying cannot fix, with what to change."""
        status, detail = response.status_code, server_message(response)
        if 300 <= status < 400:  # redirects are not followed: a request must not change hosts
            target = response.headers.get("location") or "another address"
            return ModelHTTPError(
                f"{url} redirected ({status}) to {target} — set --base-url to the address the "
                "API really has (often https:// instead of http://)",
                status=status,
                url=url,
                code="redirected",
            )
        if status == 404:
            return self._not_found(response, url)
        if status in (401, 403):
            sent = "the API key was refused" if self.endpoint.api_key else "no API key was sent"
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

    def _not_found(self, response: httpx.Response, url: str) -> ModelHTTPError:
        model = self.endpoint.model
        if model and model in response.text:
            available = self._model_ids()
            listing = f" (available: {', '.join(available)})" if available else ""
            return ModelHTTPError(
                f"model '{model}' not found at {self.endpoint.base_url}{listing} — check "
                "--model / QWEN_MODEL",
                status=404,
                url=url,
                code="model_not_found",
            )
        hint = ""
        if self.endpoint.wire == "responses":
            hint = ", or this server does not speak the Responses API: try --wire chat"
        return ModelHTTPError(
            f"{url} not found (404) — check --base-url (it usually ends in /v1){hint}",
            status=404,
            url=url,
            code="not_found",
        )

    def _model_ids(self) -> list[str]:
        """The ids ``GET {base}/models`` lists, or ``[]``: only a hint, so failures are moot."""
        try:
            response = self._client.get(self.endpoint.base_url + "/models", timeout=2.0)
            data: Any = response.json() if response.is_success else {}
        except (httpx.HTTPError, ValueError):
            return []
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            return []
        ids = (e.get("id") for e in entries if isinstance(e, dict))
        return [i for i in ids if isinstance(i, str)][:20]
