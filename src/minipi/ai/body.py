"""An HTTP answer's body, decoded in bounded pieces: whatever the server sends, minipi holds at
most one piece of it at a time plus what the caller keeps.

Why our own decoding instead of httpx's ``iter_bytes``: httpx inflates each raw chunk whole
(measured: one 64 KiB read of a gzip bomb became 64 MB in one call, and a 2 MB gzip body
2 GB), so no count after the fact bounds memory. ``zlib``'s ``max_length`` yields at most
``PIECE`` bytes per call instead. minipi asks for ``gzip, deflate`` only (``ACCEPT_ENCODING``)
and reads those and identity; a body in another encoding is refused, not guessed at.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import httpx

from minipi.ai.bounds import Budget
from minipi.errors import ModelProtocolError

__all__ = ["ACCEPT_ENCODING", "PIECE", "decoded", "read_body"]

ACCEPT_ENCODING = "gzip, deflate"
PIECE = 256 * 1024
"""The most decoded bytes one step yields (a raw read is at most 64 KiB)."""

_GZIP = 16 + zlib.MAX_WBITS


def decoded(response: httpx.Response, budget: Budget) -> Iterator[bytes]:
    """The body of ``response`` (opened with ``stream=True``), decoded, in pieces of at most
    ``PIECE`` bytes; ``budget.check()`` after each raw chunk (any transport is bounded)."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    raw = response.iter_raw()
    if encoding in ("", "identity"):
        for chunk in raw:
            budget.check()
            yield chunk
        return
    if encoding in ("gzip", "x-gzip"):
        yield from _inflate(raw, _GZIP, budget, encoding)
    elif encoding == "deflate":
        yield from _inflate(raw, zlib.MAX_WBITS, budget, encoding)
    else:
        raise ModelProtocolError(
            f"the answer is compressed as {encoding[:40]!r}, which minipi did not ask for "
            f"(it accepts {ACCEPT_ENCODING}); it was not read",
            code="protocol_error",
        )


def _inflate(raw: Iterator[bytes], wbits: int, budget: Budget, name: str) -> Iterator[bytes]:
    """``raw`` inflated, ``PIECE`` bytes at most per step. ``deflate`` is meant to be zlib
    data but some servers send raw deflate: tried as such when the header does not parse."""
    inflater = zlib.decompressobj(wbits)
    may_be_raw = wbits == zlib.MAX_WBITS  # until the first step has read the header
    for chunk in raw:
        budget.check()
        data = chunk
        while True:
            inflater, out = _step(inflater, data, name, may_be_raw=may_be_raw)
            may_be_raw = False
            data = inflater.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < PIECE:
                break
    try:
        rest = inflater.flush()
    except zlib.error:
        raise _corrupt(name) from None
    if rest:
        yield rest


def _step(
    inflater: zlib._Decompress, data: bytes, name: str, *, may_be_raw: bool
) -> tuple[zlib._Decompress, bytes]:
    """The inflater used and at most ``PIECE`` bytes it inflated from ``data``: a raw deflate
    one, from the start of ``data``, when ``may_be_raw`` and the zlib header does not parse."""
    try:
        return inflater, inflater.decompress(data, PIECE)
    except zlib.error:
        if not may_be_raw:
            raise _corrupt(name) from None
    raw_inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    return _step(raw_inflater, data, name, may_be_raw=False)


def _corrupt(name: str) -> ModelProtocolError:
    return ModelProtocolError(
        f"an unreadable answer: its {name} body is corrupt and cannot be decompressed",
        code="protocol_error",
    )


def read_body(response: httpx.Response, budget: Budget, limit: int) -> tuple[bytes, bool]:
    """The decoded body, at most ``limit`` bytes, and whether there was more (reading stops
    at the first piece past the limit: the rest is never read)."""
    body = bytearray()
    for piece in decoded(response, budget):
        body += piece
        if len(body) > limit:
            del body[limit:]
            return bytes(body), True
    return bytes(body), False
