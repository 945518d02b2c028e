"""The HTTP core of ``HttpModelClient``: one keep-alive ``httpx.Client``, retries, errors.

The retry of a failed HTTP exchange lives here and nowhere else (RELIABILITY default 7):
408, 409, 429, 5xx, connection errors and timeouts are retried up to ``max_retries`` times
with exponential backoff; a ``Retry-After`` up to ``max_retry_after`` seconds is honoured, a
longer one fails at once. Other 4xx are never retried, nor 501, 505 or an HTML page that is
not a gateway's (502/503/504): retrying cannot fix them. Three other layers ask again, each
for a reason this one cannot see, and none repeats what this one does:

- ``minipi.ai.chain.ChainedClient``: a chained request the server answers as not knowing
  the previous response is sent once more with the full history (another request, not the
  same one again);
- ``minipi.batch.gate.GatedClient``: a request that still ended ``rate_limited`` here is
  asked again, up to ``rate_limit_rounds`` times, once the batch-wide not-before time has
  come (one worker's 429 slows every worker, over minutes rather than seconds);
- ``minipi.agent.rules.ReplyRetry``: a reply that arrived but cannot be used (a broken
  stream, cut off, empty) is asked for again as a new turn, with a message to the model.

Every failure is a ``ModelError`` whose message
says what to do next; nothing else escapes (no httpx exception, no traceback-only
``KeyError``), and no message carries the endpoint's secrets.

What a server can make a request cost is bounded, whatever it sends:

- time: each exchange runs under a ``bounds.Budget``. The request's ``deadline`` (the run's
  ``--max-seconds``) bounds the whole request, retries and their waits included
  (``ModelDeadlineError``); its ``cancel``, once set, ends it within ``bounds.WATCH``
  seconds in any phase but connecting (code ``cancelled``); a plain exchange must be
  complete within ``read_timeout`` (a trickling body is cut at that total); a stream must
  progress within ``stream_idle_timeout`` (keep-alives and empty deltas are not progress);
  after a stream's end marker the rest of the body gets ``_GRACE`` seconds, then the
  connection is closed rather than read to its end.
- memory: bodies are read in bounded decoded pieces (``body.py``), at most
  ``max_response_bytes`` of a plain reply, of one SSE line or event, and of what a stream
  gathers (``ModelResponseTooLargeError``); an error page is read up to ``_ERROR_BODY``.

This module imports httpx (~0.1 s), so only ``client.py`` imports it, lazily via ``connect``.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from minipi.ai import failures
from minipi.ai.answers import Answer, decode_json, retry_after, unavailable
from minipi.ai.body import ACCEPT_ENCODING, decoded, read_body
from minipi.ai.bounds import Budget, active, bound_client
from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.secrets import Secrets, remember, sent
from minipi.ai.sse import LineTooLong, SSEParser
from minipi.ai.stream import StreamReader
from minipi.ai.types import JsonObject
from minipi.errors import ConfigError, ModelError, ModelProtocolError, ModelStreamError
from minipi.said import Said

__all__ = ["HttpCore"]

_JSON_HEADERS = {"content-type": "application/json"}
_RETRY_STATUSES = frozenset({408, 409, 429})
_ERROR_BODY = 64 * 1024  # an error answer is read this far: enough for its message
_GRACE = 0.1  # seconds the body gets after a stream's end marker (its last chunk is due)


@dataclass(frozen=True, slots=True)
class _Retry:
    """An attempt failed in a way worth retrying: wait ``delay``, or raise ``error`` if last."""

    delay: float
    error: ModelError


class HttpCore:
    """POSTs JSON to one endpoint over a single keep-alive connection pool.

    Thread-safe (httpx.Client is; each exchange's budget is per thread); ``close()``
    releases every connection.
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
        secrets = sent(endpoint.api_key, endpoint.basic_auth)
        remember(secrets)  # for the writers of traces and sessions
        self._secrets = Secrets.of(secrets)
        headers = {"accept": "application/json", "accept-encoding": ACCEPT_ENCODING}
        if endpoint.api_key:
            headers["authorization"] = f"Bearer {endpoint.api_key}"
        self._plain_timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.read_timeout,
            write=config.read_timeout,
            pool=config.connect_timeout,
        )
        # Streaming: the read timeout bounds every silence, the first byte included.
        self._stream_timeout = httpx.Timeout(
            connect=config.connect_timeout,
            read=config.stream_idle_timeout,
            write=config.read_timeout,
            pool=config.connect_timeout,
        )
        if transport is None and endpoint.base_url.startswith("http://"):
            # Plain HTTP never does TLS (redirects are not followed; with a transport given,
            # httpx mounts no env proxies), so skip loading the CA bundle: 40-70 ms per client.
            transport = httpx.HTTPTransport(verify=False)
        auth = None
        if endpoint.basic_auth is not None and not endpoint.api_key:
            auth = httpx.BasicAuth(*endpoint.basic_auth)
        self._client = httpx.Client(
            headers=headers, timeout=self._plain_timeout, transport=transport, auth=auth
        )
        bound_client(self._client)

    def close(self) -> None:
        self._client.close()

    def post_json(
        self,
        path: str,
        body: bytes,
        reader: StreamReader | None = None,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
    ) -> tuple[JsonObject, int]:
        """POST ``body`` (encoded JSON) to ``base_url + path``; the answer's JSON object and
        the number of bytes sent. Raises a ``ModelError`` subclass after the retry policy;
        ``ModelDeadlineError`` once ``deadline`` (``time.monotonic()``) passes, in any phase;
        a ``ModelError`` of code ``cancelled`` soon after ``cancel`` is set.

        With a ``reader`` the answer is read as a stream of server-sent events, fed to the
        reader as they arrive; its ``result()`` is the answer. A failure before the stream
        begins follows the retry policy; one after it has begun raises ``ModelStreamError``
        (the caller decides whether to ask again: deltas were already shown)."""
        url = self.endpoint.base_url + path
        attempt = 0
        try:
            while True:
                self._before_sending(url, deadline, cancel)
                outcome = self._attempt(url, body, attempt, reader, deadline, cancel)
                if not isinstance(outcome, _Retry):
                    return self._secrets.json(outcome), len(body)
                self._wait_to_retry(outcome, url, attempt, deadline, cancel)
                attempt += 1
        except ModelError as error:  # a server's words quoted in it may hold what it was sent
            self._secrets.error(error)
            raise

    def _before_sending(
        self, url: str, deadline: float | None, cancel: threading.Event | None
    ) -> None:
        """Wait for the pacer, if any; ``ModelDeadlineError`` once ``deadline`` has passed,
        the ``cancelled`` error once ``cancel`` is set."""
        if self.config.pacer is not None:
            self.config.pacer.wait()  # a 429 another client got holds this one too
        if cancel is not None and cancel.is_set():
            raise failures.cancelled_error(url)
        if deadline is not None and time.monotonic() >= deadline:
            raise failures.deadline_error(url, "before_sending")

    def _wait_to_retry(
        self,
        retry: _Retry,
        url: str,
        attempt: int,
        deadline: float | None,
        cancel: threading.Event | None,
    ) -> None:
        """Sleep the retry's delay (``cancel`` ends the sleep: the next attempt is then not
        sent); raise its error when no retry is left, and ``ModelDeadlineError`` when the
        deadline would pass first."""
        if attempt == self.config.max_retries:
            raise retry.error
        if deadline is not None and time.monotonic() + retry.delay >= deadline:
            raise failures.deadline_error(url, retry.error)
        if self.config.pacer is not None and retry.error.code == "rate_limited":
            self.config.pacer.defer(retry.delay)
        if cancel is not None:
            cancel.wait(retry.delay)
        else:
            time.sleep(retry.delay)

    def _attempt(
        self,
        url: str,
        body: bytes,
        attempt: int,
        reader: StreamReader | None,
        deadline: float | None,
        cancel: threading.Event | None,
    ) -> JsonObject | _Retry:
        budget = Budget(cancel=cancel)
        budget.limit("deadline", deadline)
        if reader is None:
            budget.limit("total", time.monotonic() + self.config.read_timeout)
        try:
            with active(budget):
                outcome = self._exchange(url, body, reader, budget)
        except httpx.HTTPError as exc:
            return self._transport_failure(exc, url, attempt, reader is not None, budget)
        except httpx.InvalidURL as exc:
            raise ConfigError(
                f"base URL {self.endpoint.base_url} is not valid ({self._reason(exc)}) — check "
                "--base-url / QWEN_BASE_URL"
            ) from None
        except ModelError as exc:  # from reading the body or the stream: say where
            if not exc.url:
                exc.url, exc.message = url, f"{exc.message} (from {url})"
                exc.said = exc.said and Said.of("from_url", said=exc.said, url=url)
            raise
        if not isinstance(outcome, Answer):
            return outcome
        if outcome.is_success:
            return decode_json(outcome, url)
        return self._failure(outcome, url, attempt)

    def _transport_failure(
        self, exc: httpx.HTTPError, url: str, attempt: int, streaming: bool, budget: Budget
    ) -> _Retry:
        """A timeout or connection failure: a ``_Retry``; the deadline or an unreadable
        answer (e.g. a malformed one: not transient) raise."""
        tries = attempt + 1
        if budget.cancelled:
            raise failures.cancelled_error(url) from None
        if isinstance(exc, httpx.TimeoutException):
            if budget.passed() == "deadline":
                raise failures.deadline_error(url, "waiting") from None
            error: ModelError = failures.timeout_error(
                url, exc, tries, self.config, streaming=streaming
            )
        elif isinstance(exc, httpx.TransportError):  # refused, reset, DNS...: maybe transient
            connected = not isinstance(exc, httpx.ConnectError)
            error = failures.connection_error(
                url, self.endpoint.base_url, self._reason(exc), tries, connected=connected
            )
        else:
            unreadable = Said.of("unreadable", url=url, reason=self._reason(exc))
            raise ModelProtocolError(unreadable, url=url) from None
        return _Retry(self._backoff(attempt), error)

    def _exchange(
        self, url: str, body: bytes, reader: StreamReader | None, budget: Budget
    ) -> JsonObject | Answer:
        """Send; a stream's result, or the answer as read (bounded)."""
        timeout = self._stream_timeout if reader is not None else self._plain_timeout
        request = self._client.build_request(
            "POST", url, content=body, headers=_JSON_HEADERS, timeout=budget.timeout(timeout)
        )
        started = time.monotonic()
        response = self._client.send(request, stream=True)
        try:
            kind = response.headers.get("content-type", "")
            if reader is not None and response.is_success and "event-stream" in kind:
                return self._read_stream(response, url, reader, budget)
            # A plain answer, also from a server that does not stream: bounded as a whole.
            budget.limit("total", started + self.config.read_timeout)
            return self._answer(response, budget, url)
        finally:
            response.close()

    def _answer(self, response: httpx.Response, budget: Budget, url: str) -> Answer:
        """The answer with its body: a 2xx up to ``max_response_bytes`` (else too large), an
        error up to ``_ERROR_BODY`` (the rest is not needed for its message)."""
        limit = self.config.max_response_bytes if response.is_success else _ERROR_BODY
        content, more = read_body(response, budget, limit)
        if more and response.is_success:
            raise failures.too_large(url, limit)
        headers = response.headers
        if self._secrets and not response.is_success:  # a Location may quote the key too
            headers = httpx.Headers([(k, self._secrets.text(v)) for k, v in headers.items()])
        # Cleaned before any message quotes it (a snippet cut at its length would keep
        # the start of a key that the final cleaning of the error could not match).
        return Answer(response.status_code, headers, self._secrets.data(content))

    def _read_stream(
        self, response: httpx.Response, url: str, reader: StreamReader, budget: Budget
    ) -> JsonObject:
        """Feed the events of a streamed answer to ``reader``; its result."""
        try:
            return self._feed(response, url, reader, budget)
        except httpx.TimeoutException:
            if reader.finished:  # the end marker came; only the body's end did not
                return reader.result()
            if budget.cancelled:
                raise failures.cancelled_error(url) from None
            if budget.passed() == "deadline":
                raise failures.deadline_error(url, "streaming") from None
            idle = f"{self.config.stream_idle_timeout:g}"
            stalled = Said.of("stream_stalled", url=url, seconds=idle)
            raise ModelStreamError(stalled, url=url, code="stream_stalled") from None
        except LineTooLong:
            raise failures.too_large(url, self.config.max_response_bytes, "stream_line") from None
        except httpx.HTTPError as exc:  # reset, closed mid-chunk, undecodable body
            if reader.finished:  # after the end marker: the reply is whole
                return reader.result()
            broke = Said.of("stream_broke", url=url, reason=self._reason(exc))
            raise ModelStreamError(broke, url=url) from None

    def _feed(
        self, response: httpx.Response, url: str, reader: StreamReader, budget: Budget
    ) -> JsonObject:
        """The SSE events of ``response`` into ``reader`` until its end marker; its result.
        Only progress (``reader.progress``) counts as activity for the idle timeout."""
        limit, idle = self.config.max_response_bytes, self.config.stream_idle_timeout
        parser = SSEParser(limit)
        pieces = decoded(response, budget)
        last, progress = time.monotonic(), reader.progress
        for chunk in pieces:
            for name, data in parser.feed(chunk):
                reader.event(name, self._secrets.text(data))
                if reader.finished:
                    break
            if reader.size > limit:
                raise failures.too_large(url, limit, "streamed_reply")
            if reader.finished:
                return self._after_end(pieces, reader, budget)
            now = time.monotonic()
            if reader.progress != progress:
                last, progress = now, reader.progress
            elif now - last > idle:
                raise httpx.ReadTimeout("no progress: keep-alive comments or empty deltas only")
        for name, data in parser.close():
            reader.event(name, self._secrets.text(data))
        return reader.result()

    @staticmethod
    def _after_end(pieces: Any, reader: StreamReader, budget: Budget) -> JsonObject:
        """The reply is complete at its end marker: the rest of the body (the last chunk,
        normally there already) gets ``_GRACE`` seconds and is not parsed; a server that
        keeps the body open (``: ping`` comments after ``[DONE]``) has its connection closed
        instead of holding the reply."""
        budget.limit("grace", time.monotonic() + _GRACE)
        try:
            for _ in pieces:
                pass
        except (httpx.HTTPError, ModelError):
            pass  # the connection is closed with the response; the reply is whole
        return reader.result()

    def _failure(self, answer: Answer, url: str, attempt: int) -> _Retry:
        """A non-2xx answer: a ``_Retry`` when the policy allows one, else raise."""
        status = answer.status_code
        if status not in _RETRY_STATUSES and status < 500:
            models = self._model_ids() if status == 404 and self._names_model(answer) else None
            raise failures.client_error(answer, url, self.endpoint, models)
        if failures.not_transient(answer):
            raise failures.server_error(answer, url)
        delay = retry_after(answer.headers)
        if delay is not None and delay > self.config.max_retry_after:
            raise unavailable(answer, url, attempt + 1, (delay, self.config.max_retry_after))
        return _Retry(
            self._backoff(attempt) if delay is None else delay,
            unavailable(answer, url, attempt + 1),
        )

    def _reason(self, exc: BaseException) -> str:
        """An exception's text (another library's), without the endpoint's secrets."""
        return self._secrets.text(str(exc) or type(exc).__name__)

    def _names_model(self, answer: Answer) -> bool:
        return bool(self.endpoint.model) and self.endpoint.model in answer.text

    def _backoff(self, attempt: int) -> float:
        # Jitter keeps many clients (batch runs) from retrying in lock-step.
        return self.config.backoff_base * 2.0**attempt * (1 + random.random() / 10)

    def _model_ids(self) -> list[str]:
        """The ids ``GET {base}/models`` lists, or ``[]``: only a hint, so failures are moot
        (bounded like any exchange: 2 s in all, 1 MiB)."""
        budget = Budget()
        budget.limit("total", time.monotonic() + 2.0)
        url = self.endpoint.base_url + "/models"
        try:
            with active(budget), self._client.stream("GET", url, timeout=2.0) as response:
                content, more = read_body(response, budget, 2**20)
            data: Any = json.loads(content) if response.is_success and not more else {}
        except (httpx.HTTPError, ModelError, ValueError, RecursionError):
            return []
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            return []
        ids = (e.get("id") for e in entries if isinstance(e, dict))
        return [i for i in ids if isinstance(i, str)][:20]
