"""Checking what ``Endpoint`` will put on the wire: the base URL and the secrets it sends.

Everything here runs before a request exists, so a value that cannot be sent is a usage error
(``ConfigError``, CLI exit 2) that says what is wrong and where to fix it, never a dropped
connection retried three times, a traceback, or a message that repeats the value. A secret
(an API key, a password in the URL) is never shown: a message names the kind of character
and its position, nothing of the secret itself.

Not ``urllib.parse``: importing it costs start-up time, and the parts a base URL may have
(scheme, optional ``user:password@``, host, optional port, path) are few.
"""

from __future__ import annotations

__all__ = ["check_secret", "split_base_url"]

_URL_HINT = "check --base-url / QWEN_BASE_URL (like http://127.0.0.1:8021/v1)"


def _error(message: str) -> Exception:
    from minipi.errors import ConfigError

    return ConfigError(message)


def _flaw(char: str, ascii_only: bool) -> tuple[str, str] | None:
    """What is wrong with ``char`` in a header value, and a hint; None if it can be sent."""
    if char in "\r\n":
        return "a line end", " (a file saved with CRLF line ends?)"
    if char in " \t":
        return "a space or tab", ""
    if char < " " or char == "\x7f":
        return "a control character", ""
    if "\ud800" <= char <= "\udfff":
        return "a broken character", " (a lone surrogate: the text was not valid Unicode)"
    if ascii_only and char > "\x7e":
        return "a non-ASCII character", " (a curly quote or non-breaking space pasted with it?)"
    return None


def check_secret(value: str, what: str, where: str, *, ascii_only: bool = True) -> None:
    """``ConfigError`` if ``value`` (a secret sent in a header) holds a character that cannot
    be sent: a line end, space, control character, or (``ascii_only``) any non-ASCII one.

    The message says ``what`` holds which kind of character at which position (1-based) and
    ``where`` to fix it; the value itself never appears in it."""
    for position, char in enumerate(value, start=1):
        flaw = _flaw(char, ascii_only)
        if flaw is not None:
            kind, tip = flaw
            last = ", its last character" if position == len(value) > 1 else ""
            raise _error(
                f"{what} holds {kind} at position {position} of {len(value)}{last}{tip}; it "
                f"cannot be sent in an HTTP header, so nothing was sent — check {where}"
            )


def split_base_url(base_url: str) -> tuple[str, tuple[str, str] | None]:
    """The base URL without trailing slashes (``/v1`` added to a bare host) and without
    credentials, and the credentials it had. ``ConfigError`` for a URL that would not reach
    the API: not http(s), no host, a bad port, a ``?query`` or ``#fragment`` (the request
    path is appended to the base URL, so they would end up in the middle of it), or
    whitespace or control characters inside it."""
    url = base_url.strip().rstrip("/")
    scheme, _, rest = url.partition("://")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    credentials = None
    if "@" in authority:
        credentials, authority = _credentials(authority)
    shown = f"{scheme}://{authority}"  # for messages: never the credentials or the query
    if scheme.lower() not in ("http", "https") or not authority:
        display = url if "://" not in url else shown + tail
        display = display.rpartition("@")[2].partition("?")[0].partition("#")[0]
        raise _error(f"base URL {display!r} is not an http(s) URL — {_URL_HINT}")
    _check_authority(authority, shown)
    path = _checked_path(tail, shown)
    url = f"{scheme}://{authority}{path}"
    return (url if path else url + "/v1"), credentials


def _credentials(authority: str) -> tuple[tuple[str, str], str]:
    from urllib.parse import unquote  # only for a URL with credentials

    userinfo, _, host = authority.rpartition("@")
    user, _, password = userinfo.partition(":")
    pair = (unquote(user), unquote(password))
    where = "--base-url / QWEN_BASE_URL"
    check_secret(pair[0], "the user name in the base URL", where, ascii_only=False)
    check_secret(pair[1], "the password in the base URL", where, ascii_only=False)
    return pair, host


def _check_authority(authority: str, shown: str) -> None:
    """The host (a name, IPv4 or ``[IPv6]``) and an optional port in 1-65535."""
    host, port = _host_and_port(authority, shown)
    if not host or any(c <= " " or c > "~" or c in "\\<>\"'`{}|^" for c in host.strip("[]")):
        raise _error(
            f"base URL {shown!r} has no usable host name (only ASCII letters, digits, '.', "
            f"'-' and '_'; write an international name in its xn-- form) — {_URL_HINT}"
        )
    if port is not None:
        _check_port(port, shown)


def _check_port(port: str, shown: str) -> None:
    digits = port.isascii() and port.isdigit()
    if not (digits and 0 < int(port) < 65536):
        what = "is out of range" if digits else "is not a number"
        raise _error(
            f"base URL {shown!r}: the port {port[:12]!r} {what} (use 1-65535) — {_URL_HINT}"
        )


def _host_and_port(authority: str, shown: str) -> tuple[str, str | None]:
    """``authority`` split at its port's ``:`` (None: no port)."""
    if not authority.startswith("["):
        host, colon, port = authority.rpartition(":")
        return (host, port) if colon else (authority, None)
    close = authority.find("]")
    host, after = authority[: close + 1], authority[close + 1 :]
    if close < 0 or (after and not after.startswith(":")):
        raise _error(f"base URL {shown!r} has a malformed [IPv6] host — {_URL_HINT}")
    return host, (after[1:] if after else None)


def _checked_path(tail: str, shown: str) -> str:
    """The path of ``tail`` (what follows the authority), without trailing slashes;
    ``ConfigError`` for a query, a fragment, whitespace or a control character."""
    path, hash_, fragment = tail.partition("#")
    path, mark, query = path.partition("?")
    path = path.rstrip("/")
    if query or mark or fragment or hash_:
        part = "a ?query" if mark else "a #fragment"
        raise _error(
            f"base URL {shown + path!r} has {part}: minipi appends the request path "
            "(/chat/completions, /responses) to the base URL, so it would end up in the "
            "middle of the path; remove it (query parameters are not supported) — "
            f"{_URL_HINT}"
        )
    _check_text(path, f"the path of the base URL {shown!r}")
    return path


def _check_text(text: str, what: str) -> None:
    for position, char in enumerate(text, start=1):
        if char <= " " or char == "\x7f":
            kind = "a line end" if char in "\r\n" else "a space or control character"
            raise _error(
                f"{what} holds {kind} at position {position}: write a space as %20 — {_URL_HINT}"
            )
