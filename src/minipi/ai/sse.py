"""Server-sent events, parsed incrementally: bytes in (split anywhere), ``(event, data)`` out.

The parts of the SSE format model servers use: ``data:`` lines (several join with ``\\n``),
``event:`` names, ``:`` comments (keep-alives), any of ``\\r\\n``, ``\\n``, ``\\r`` as line
ends, a blank line ending an event. ``id:`` and ``retry:`` are read and ignored (a model
request is never resumed from an event id). A chunk may end anywhere, even inside a UTF-8
sequence or between ``\\r`` and ``\\n``: only whole lines are decoded.
"""

from __future__ import annotations

__all__ = ["LineTooLong", "SSEParser"]

Event = tuple[str, str]


class LineTooLong(ValueError):
    """A line, or one event's data, grew past the parser's ``max_bytes``."""


class SSEParser:
    """Feed bytes with ``feed``; each call returns the events completed so far.

    Linear in what it is fed: a chunk without a line end is only appended (the buffer is
    never scanned again), and a line, or one event's ``data`` lines together, longer than
    ``max_bytes`` raises ``LineTooLong`` (the stream is not a reply minipi can use)."""

    __slots__ = ("_buffer", "_data", "_event", "_max", "_pending_cr", "_size")

    def __init__(self, max_bytes: int | None = None) -> None:
        self._buffer = bytearray()
        self._event = ""
        self._data: list[str] = []
        self._size = 0  # characters in _data
        self._max = max_bytes
        self._pending_cr = False  # the last chunk ended in "\r": a "\n" next is the same end

    def feed(self, chunk: bytes) -> list[Event]:
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith(b"\r")
        if not chunk:
            return []
        if b"\n" not in chunk and b"\r" not in chunk:  # only the new bytes are looked at
            self._buffer += chunk
            self._check(len(self._buffer))
            return []
        self._buffer += chunk
        lines = self._buffer.splitlines(keepends=True)  # bytes: only \r\n, \n, \r end lines
        rest = lines.pop() if not lines[-1].endswith((b"\n", b"\r")) else b""
        self._buffer = bytearray(rest)
        self._check(len(rest))
        events: list[Event] = []
        for line in lines:
            end = 2 if line.endswith(b"\r\n") else 1
            event = self._line(line[:-end].decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[Event]:
        """The event a stream left unterminated (no blank line after it), if any."""
        events = self.feed(b"\n") if self._buffer else []
        event = self._line("")
        return [*events, event] if event is not None else events

    def _check(self, size: int) -> None:
        if self._max is not None and size > self._max:
            raise LineTooLong(f"a line or event of the stream is over {self._max} bytes")

    def _line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
            self._check(self._size)
        elif name == "event":
            self._event = value
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._event = ""
            return None
        event = (self._event or "message", "\n".join(self._data))
        self._event, self._data, self._size = "", [], 0
        return event
