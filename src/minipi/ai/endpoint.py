"""Where the model lives (``Endpoint``) and how patiently we talk to it (``ClientConfig``).

Both are frozen values built by the caller; environment variables are read only in the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from minipi.errors import ConfigError

__all__ = ["ClientConfig", "Endpoint"]


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible model endpoint.

    ``base_url`` is normalised: surrounding whitespace and trailing slashes are removed, and a
    URL without a path gets ``/v1``, so ``http://127.0.0.1:8021`` and
    ``http://127.0.0.1:8021/v1/`` name the same endpoint. The repr never shows the key.
    """

    base_url: str
    """Root of the API, e.g. ``http://127.0.0.1:8021/v1``; request paths are appended to it."""
    model: str
    """Model name sent with every request (``qwen3-0.6b``)."""
    api_key: str | None = None
    """Sent as ``Authorization: Bearer KEY`` when set; never printed."""
    wire: Literal["responses", "chat"] = "chat"
    """``chat`` for ``/chat/completions`` (most local servers), ``responses`` for ``/responses``."""
    basic_auth: tuple[str, str] | None = field(default=None, repr=False, compare=False)
    """Credentials given in the URL (``http://user:pw@host/v1``): taken out of ``base_url`` so
    that no message, trace or session ever shows them, and sent as HTTP Basic auth unless
    ``api_key`` is set (the key wins)."""

    def __post_init__(self) -> None:
        url, credentials = _normalise(self.base_url)
        object.__setattr__(self, "base_url", url)
        if credentials is not None:
            object.__setattr__(self, "basic_auth", credentials)
        if self.wire not in ("responses", "chat"):
            raise ConfigError(f"unknown wire {self.wire!r}: use 'chat' or 'responses'")

    def __repr__(self) -> str:
        key = "None" if self.api_key is None else "'***'"
        return (
            f"Endpoint(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key={key}, wire={self.wire!r})"
        )


def _normalise(base_url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without trailing slashes (``/v1`` added to a bare host) and without
    credentials, and the credentials it had."""
    url = base_url.strip().rstrip("/")
    scheme, _, rest = url.partition("://")  # not urllib.parse: it costs start-up time
    host, slash, path = rest.partition("/")
    credentials = None
    if "@" in host:
        from urllib.parse import unquote

        userinfo, _, host = host.rpartition("@")
        user, _, password = userinfo.partition(":")
        credentials = (unquote(user), unquote(password))
        url = f"{scheme}://{host}{slash}{path}"
    if scheme.lower() not in ("http", "https") or not host:
        raise ConfigError(
            f"base URL {url!r} is not an http(s) URL — set --base-url / QWEN_BASE_URL "
            "like http://127.0.0.1:8021/v1"
        )
    return (url if slash else url + "/v1"), credentials


@dataclass(frozen=True)
class ClientConfig:
    """Timeouts and the retry policy of the HTTP model clients (RELIABILITY default 7), and
    the Responses wire's opt-in chaining (``previous_response_id``)."""

    connect_timeout: float = 5.0
    """Seconds to establish a connection."""
    read_timeout: float = 120.0
    """Seconds to wait for the answer (also bounds each write)."""
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
    """Streaming: the longest silence allowed, before the first event or between two."""
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

    def __post_init__(self) -> None:
        if self.connect_timeout <= 0 or self.read_timeout <= 0 or self.stream_idle_timeout <= 0:
            raise ConfigError("timeouts must be positive seconds")
        if self.max_retries < 0 or self.backoff_base < 0 or self.max_retry_after < 0:
            raise ConfigError("max_retries, backoff_base and max_retry_after must be >= 0")
