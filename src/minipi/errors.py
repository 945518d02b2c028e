"""Exceptions raised by minipi.

Only infrastructure raises; a tool that fails returns a ``ToolResult`` with ``is_error=True``
instead (see ``minipi.agent.tools``). Every exception derives from one base::

    MiniPiError                    anything minipi raises on purpose
    ├── ConfigError                bad configuration or usage (CLI exit 2)
    ├── ModelError                 the model endpoint could not give a usable response
    │   ├── ModelConnectionError   cannot connect / connection dropped (after retries)
    │   ├── ModelTimeoutError      connect, read or stream-idle timeout (after retries)
    │   │   └── ModelDeadlineError the request's deadline (the run's --max-seconds) passed
    │   ├── ModelHTTPError         non-2xx status; ``status`` and ``url`` attributes
    │   ├── ModelProtocolError     2xx but unusable: not JSON, no choices, a call without a name
    │   │   └── ModelResponseTooLargeError  larger than ``max_response_bytes``; ``limit``
    │   └── ModelStreamError       a stream that stalled or ended before it finished (retried once)
    ├── ToolError                  a tool refused or failed; ``code`` is stable (fed back as data)
    │   └── FileAccessError        a ProjectFiles refusal (path, file type, size, encoding, ...)
    ├── AgentError                 the loop itself cannot go on (reserved keys, bad policy)
    └── SessionError               a saved session cannot be used or saved (disk full...)
        ├── SessionBusyError       another process has the session open; ``pid`` attribute
        └── SessionStoreError      the store is unreadable: not a database, an unknown schema
                                   version, malformed rows (left as is, never reset)

Context lives in keyword-only attributes so that callers never parse messages. A message
made from ``minipi.said`` keeps its key and facts in ``said`` (its English text is
``message``), so that a run in another language says the same facts.
"""

from __future__ import annotations

from minipi.said import Said

__all__ = [
    "AgentError",
    "ConfigError",
    "FileAccessError",
    "MiniPiError",
    "ModelConnectionError",
    "ModelDeadlineError",
    "ModelError",
    "ModelHTTPError",
    "ModelProtocolError",
    "ModelResponseTooLargeError",
    "ModelStreamError",
    "ModelTimeoutError",
    "SessionBusyError",
    "SessionError",
    "SessionStoreError",
    "ToolError",
]


class MiniPiError(Exception):
    """Base class of every error minipi raises on purpose."""

    def __init__(self, message: str | Said, *, code: str = "error") -> None:
        text = str(message)
        super().__init__(text)
        self.message = text
        self.code = code
        self.said = message if isinstance(message, Said) else None

    def __str__(self) -> str:
        return self.message


class ConfigError(MiniPiError):
    """Invalid configuration or usage; the CLI exits 2."""

    def __init__(self, message: str, *, code: str = "config_error") -> None:
        super().__init__(message, code=code)


class ModelError(MiniPiError):
    """The model endpoint did not give a usable response (after retries where they apply)."""

    def __init__(self, message: str | Said, *, code: str = "model_error", url: str = "") -> None:
        super().__init__(message, code=code)
        self.url = url


class ModelConnectionError(ModelError):
    """Could not connect to the endpoint, or the connection dropped."""

    def __init__(self, message: str | Said, *, url: str = "") -> None:
        super().__init__(message, code="endpoint_unreachable", url=url)


class ModelTimeoutError(ModelError):
    """The endpoint did not answer (or stopped streaming) within the configured time."""

    def __init__(self, message: str | Said, *, url: str = "") -> None:
        super().__init__(message, code="timeout", url=url)


class ModelDeadlineError(ModelTimeoutError):
    """The request was not done by its ``deadline`` (the run's wall-clock budget): code
    ``max_seconds``, so the run ends ``budget_exhausted``, whatever the server was doing."""

    def __init__(self, message: str | Said, *, url: str = "") -> None:
        super().__init__(message, url=url)
        self.code = "max_seconds"


class ModelHTTPError(ModelError):
    """The endpoint answered with a non-2xx status."""

    def __init__(self, message: str | Said, *, status: int, url: str = "", code: str = "") -> None:
        super().__init__(message, code=code or f"http_{status}", url=url)
        self.status = status


class ModelProtocolError(ModelError):
    """A 2xx answer that cannot be used: not JSON, no output, a malformed call structure."""

    def __init__(self, message: str | Said, *, url: str = "", code: str = "protocol_error") -> None:
        super().__init__(message, code=code, url=url)


class ModelResponseTooLargeError(ModelProtocolError):
    """The reply (decoded), one line of its stream, or what its stream gathered, grew past
    ``ClientConfig.max_response_bytes`` (``limit``): code ``response_too_large``; reading
    stopped there and nothing of it is used. Not retried: the same server would send it
    again."""

    def __init__(self, message: str | Said, *, limit: int, url: str = "") -> None:
        super().__init__(message, url=url, code="response_too_large")
        self.limit = limit


class ModelStreamError(ModelError):
    """A streamed reply that went silent (``stream_stalled``) or ended before its finish
    (``stream_incomplete``): nothing of it may be used; the loop asks once more."""

    def __init__(
        self, message: str | Said, *, url: str = "", code: str = "stream_incomplete"
    ) -> None:
        super().__init__(message, code=code, url=url)


class ToolError(MiniPiError):
    """A tool refused or failed. Raised inside handlers; the loop turns it into a tool result."""

    def __init__(self, message: str, *, code: str = "tool_failure") -> None:
        super().__init__(message, code=code)


class FileAccessError(ToolError):
    """ProjectFiles refused an access; ``code`` says why (``symlink``, ``too_large``, ...)."""

    def __init__(self, message: str, *, code: str, path: str = "") -> None:
        super().__init__(message, code=code)
        self.path = path


class AgentError(MiniPiError):
    """The loop cannot run as configured (reserved request keys, unknown required tool...)."""

    def __init__(self, message: str, *, code: str = "agent_error") -> None:
        super().__init__(message, code=code)


class SessionError(MiniPiError):
    """A saved session cannot be opened, found or written (``session_write_failed``, ...)."""

    def __init__(
        self, message: str | Said, *, code: str = "session_error", session: str = ""
    ) -> None:
        super().__init__(message, code=code)
        self.session = session


class SessionBusyError(SessionError):
    """Another process holds the session's lock; ``pid`` is that process (0 when unknown)."""

    def __init__(self, message: str, *, session: str, pid: int) -> None:
        super().__init__(message, code="session_busy", session=session)
        self.pid = pid


class SessionStoreError(SessionError):
    """The session store cannot be read as ours: not a database, an unknown schema version,
    or malformed rows. It is left as is: nothing is reset or rewritten."""

    def __init__(self, message: str, *, code: str = "session_store_unreadable") -> None:
        super().__init__(message, code=code)
