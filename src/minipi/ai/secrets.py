"""The secrets minipi sends (an API key, a base URL's credentials), kept out of what it shows.

A server may quote what it was sent: an error that repeats the ``Authorization`` header, a
reply that echoes the key. ``HttpCore`` removes its endpoint's ``Secrets`` at the root, from
everything it hands on (an answer's body and headers before any message is made of them,
each streamed event, the reply, every error it raises), so no message, trace or session gets
one from there. It also hands them to ``remember``, and the writers of records (``--trace``,
the session store) pass their text through ``redact``: what reached them by any other way is
removed too.

A secret is replaced by ``***`` as sent and in the forms a JSON or Python text quotes it;
URL credentials also as the ``Basic`` header carries them (base64). Texts the server sent
are cleaned of secrets of 4 characters or more; records, which also hold the project's
files, of those of 8 or more (a short password would mask ordinary words and figures).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from minipi.errors import MiniPiError
from minipi.said import Said, SaidValue

__all__ = ["MASK", "Secrets", "redact", "remember", "sent"]

MASK = "***"
_SHORTEST = 4
"""Shorter secrets are not looked for in what a server sends (they would match anything)."""
_SHORTEST_RECORDED = 8
"""Shorter secrets are not looked for in records (see the module docstring)."""


@dataclass(frozen=True)
class Secrets:
    """Some secrets, with the forms a text may quote them in, longest first."""

    forms: tuple[str, ...] = field(default=(), repr=False)
    encoded: tuple[bytes, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, secrets: Iterable[str], shortest: int = _SHORTEST) -> Secrets:
        """The secrets of ``secrets`` that are at least ``shortest`` characters long."""
        found = {form for s in secrets if len(s) >= shortest for form in _quoted(s)}
        forms = tuple(sorted(found, key=len, reverse=True))
        return cls(forms, tuple(f.encode("utf-8", "surrogatepass") for f in forms))

    def __bool__(self) -> bool:
        return bool(self.forms)

    def text(self, text: str) -> str:
        for form in self.forms:
            text = text.replace(form, MASK)
        return text

    def data(self, data: bytes) -> bytes:
        for form in self.encoded:
            data = data.replace(form, MASK.encode())
        return data

    def json(self, value: Any) -> Any:
        """``value`` (decoded JSON) with every string cleaned (the keys of objects too)."""
        if not self.forms:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(item) for item in value]
        if isinstance(value, dict):
            return {self.text(k): self.json(v) for k, v in value.items()}
        return value

    def said(self, said: Said) -> Said:
        """``said`` with the facts filled into it cleaned."""
        return Said(said.key, tuple((name, self._fact(value)) for name, value in said.values))

    def error(self, error: MiniPiError) -> MiniPiError:
        """``error``, its message and facts cleaned (in place: its type and context stay)."""
        if self.forms:
            error.message = self.text(error.message)
            error.args = (error.message,)
            error.said = error.said and self.said(error.said)
        return error

    def _fact(self, value: SaidValue) -> SaidValue:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Said):
            return self.said(value)
        if isinstance(value, tuple):
            return tuple(self.said(one) for one in value)
        return value


def sent(api_key: str | None, basic_auth: tuple[str, str] | None) -> list[str]:
    """The secrets an endpoint sends: its key, and its URL's user, password and their
    ``Basic`` header value."""
    secrets = [api_key] if api_key else []
    if basic_auth is not None:
        pair = ":".join(basic_auth).encode("utf-8", "surrogatepass")
        secrets += [*basic_auth, base64.b64encode(pair).decode("ascii")]
    return secrets


def _quoted(secret: str) -> set[str]:
    """``secret`` as sent, inside a JSON string (both escapings) and inside a Python repr."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
    }


_lock = threading.Lock()
_remembered: set[str] = set()
_recorded = Secrets()


def remember(secrets: Iterable[str]) -> None:
    """Keep ``secrets`` out of every record this process writes from now on (``redact``)."""
    global _recorded
    with _lock:
        fresh = {s for s in secrets if len(s) >= _SHORTEST_RECORDED} - _remembered
        if fresh:
            _remembered.update(fresh)
            _recorded = Secrets.of(_remembered, _SHORTEST_RECORDED)


def redact(text: str) -> str:
    """``text`` without any secret ``remember`` was told of (for the writers of records)."""
    return _recorded.text(text)
