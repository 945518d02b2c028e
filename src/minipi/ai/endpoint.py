"""Where the model lives (``Endpoint``) and how patiently we talk to it (``ClientConfig``).

Both are frozen values built by the caller; environment variables are read only in the CLI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Protocol

from minipi.ai.baseurl import check_secret, split_base_url
from minipi.errors import ConfigError

__all__ = ["MAX_SECONDS", "ClientConfig", "Endpoint", "Pacer"]


class Pacer(Protocol):
    """Shared by the clients of many concurrent runs (a batch): a 429 slows them all."""

    def wait(self) -> None:
        """Return when a request may start (raise to give up, e.g. on Ctrl-C)."""

    def defer(self, seconds: float) -> None:
        """No request of any client starts for ``seconds`` from now."""


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible model endpoint.

    ``base_url`` is normalised: surrounding whitespace and trailing slashes are removed, and a
    URL without a path gets ``/v1``, so ``http://127.0.0.1:8021`` and
    ``http://127.0.0.1:8021/v1/`` name the same endpoint. The repr never shows the key.

    What cannot be sent is refused here, before any request (``ConfigError``, without the
    secret in the message): a key with a line end, space, control or non-ASCII character; a
    URL that is not http(s), has a bad port, a ``?query`` or ``#fragment``, or credentials
    with control characters (``baseurl.py``).
    """

    base_url: str
    """Root of the API, e.g. ``http://127.0.0.1:8021/v1``; request paths are appended to it."""
    model: str
    """Model name sent with every request (``my-model``)."""
    api_key: str | None = None
    """Sent as ``Authorization: Bearer KEY`` when set; never printed."""
    wire: Literal["responses", "chat"] = "chat"
    """``chat`` for ``/chat/completions`` (most local servers), ``responses`` for ``/responses``."""
    basic_auth: tuple[str, str] | None = field(default=None, repr=False, compare=False)
    """Credentials given in the URL (``http://user:pw@host/v1``): taken out of ``base_url`` so
    that no message, trace or session ever shows them, and sent as HTTP Basic auth unless
    ``api_key`` is set (the key wins)."""

    def __post_init__(self) -> None:
        url, credentials = split_base_url(self.base_url)
        object.__setattr__(self, "base_url", url)
        if credentials is not None:
            object.__setattr__(self, "basic_auth", credentials)
        if self.wire not in ("responses", "chat"):
            raise ConfigError(f"unknown wire {self.wire!r}: use 'chat' or 'responses'")
        if self.api_key:
            check_secret(self.api_key, "the API key", "--api-key / OPENAI_API_KEY")

    def __repr__(self) -> str:
        key = "None" if self.api_key is None else "'***'"
        return (
            f"Endpoint(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key={key}, wire={self.wire!r})"
        )


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """Timeouts and the retry policy of the HTTP model clients (RELIABILITY default 7), and
    the Responses wire's opt-in chaining (``previous_response_id``)."""

    connect_timeout: float = 5.0
    """Seconds to establish a connection."""
    read_timeout: float = 120.0
    """Seconds a plain (not streamed) exchange may take in all, from connecting to the
    answer's last byte: a body that trickles in byte by byte is cut at this total, not
    restarted by each byte. Also bounds sending the request, and waiting for a stream's
    headers."""
    max_retries: int = 2
    """Retries after the first attempt, for 408/409/429/5xx, connection errors and timeouts."""
    backoff_base: float = 0.5
    """Retry ``n`` (from 0) waits ``backoff_base * 2**n`` seconds, plus a little jitter."""
    max_retry_after: float = 20.0
    """A ``Retry-After`` longer than this is not waited for: the request fails at once."""
    stream: bool = False
    """Ask for the reply as a stream (``"stream": true``, server-sent events): the request's
    ``on_delta`` sees text and tool-call pieces as they arrive. The reply only counts once the
    stream has ended properly (a finish reason and ``[DONE]`` / ``response.completed``);
    otherwise the request fails with ``stream_stalled`` or ``stream_incomplete`` and nothing
    of it is used. A server that answers a stream request with plain JSON is understood too."""
    stream_idle_timeout: float = 120.0
    """Streaming: the longest time without progress, before the first event or between two.
    Only an event that adds to the reply counts (text, reasoning, a call's piece, the finish):
    keep-alive comments and empty deltas do not. A stream that keeps progressing has no total
    bound here; the request's ``deadline`` (the run's ``max_seconds``) and
    ``max_response_bytes`` bound it."""
    previous_response_id: bool = False
    """Responses wire only (the chat wire ignores it). Off, every request re-sends the whole
    history (bytes O(N²) over an N-turn run). On, a request whose history extends the previous
    request's history plus that response's output carries ``previous_response_id`` and only
    the items added since (the tool results, a new user message): bytes O(N). Instructions,
    tools and options are still sent every time (the server does not carry them over).

    The server must keep responses to chain from them, so every request then says
    ``store: true``: the server stores the whole conversation (OpenAI keeps it for its
    retention period; local servers usually in memory). Anything else (an edited or shortened
    history, another conversation, a response without an id, an answer minipi rewrote, such
    as ``<tool_call>`` text or a call without a usable id) sends the full history instead;
    and when the server answers a chained request that it no longer knows the previous
    response (400 naming it, or 404), the request is retried once, silently, with the full
    history. State is per thread: one conversation per thread chains."""
    pacer: Pacer | None = field(default=None, compare=False, repr=False)
    """Called before every attempt (``wait``) and told of every 429 that will be retried
    (``defer`` its delay), so that concurrent clients back off together."""
    max_response_bytes: int = 16 * 1024 * 1024
    """The largest reply read, counted after decompression as it arrives: a plain body, one
    line or event of a stream, and the text, reasoning and call arguments a stream gathers.
    A larger reply fails ``response_too_large`` (not retried) and is never used; reading
    stops there, so a server cannot make minipi hold more than about this much of its
    answer, whatever it sends (a gzip bomb included). 16 MiB is far above a real reply (a
    100k-token answer is about 0.5 MB)."""

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "read_timeout", "stream_idle_timeout"):
            _check_number(self, name, 0.0, MAX_SECONDS, low_open=True)
        for name in ("backoff_base", "max_retry_after"):
            _check_number(self, name, 0.0, MAX_SECONDS)
        _check_number(self, "max_retries", 0, 100, integer=True)
        _check_number(self, "max_response_bytes", 1024, 2**40, integer=True)


def _finite(value: object, integer: bool) -> bool:
    """An int, or (unless ``integer``) a finite float; never a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or (not integer and math.isfinite(value))


MAX_SECONDS = 86_400.0
"""The longest timeout ``ClientConfig`` takes (a day): a larger one is no bound at all, and
past ~9e9 s the sockets below cannot even express it."""


def _check_number(
    config: ClientConfig,
    name: str,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    integer: bool = False,
) -> None:
    """``ConfigError`` unless ``config.name`` is a finite number in its range (an int when
    ``integer``): nan, inf, 1e300 and strings are refused here, not deep inside a request."""
    value = getattr(config, name)
    if _finite(value, integer) and (low < value if low_open else low <= value) and value <= high:
        return
    bound = f"> {low:g}" if low_open else f">= {low:g}"
    kind = "a whole number" if integer else "a finite number"
    raise ConfigError(
        f"ClientConfig.{name} must be {kind} {bound} and <= {high:g}, not {value!r:.40}"
    )
