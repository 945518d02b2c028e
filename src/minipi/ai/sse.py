"""Server-sent events, parsed incrementally: bytes in (split anywhere), ``(event, data)`` out.

The parts of the SSE format model servers use: ``data:`` lines (several join with ``\\n``),
``event:`` names, ``:`` comments (keep-alives), any of ``\\r\\n``, ``\\n``, ``\\r`` as line
ends, a blank line ending an event. ``id:`` and ``retry:`` are read and ignored (a model
request is never resumed from an event id). A chunk may end anywhere, even inside a UTF-8
sequence or between ``\\r`` and ``\\n``: only whole lines are decoded.
"""

from __future__ import annotations

__all__ = ["SSEParser"]

Event = tuple[str, str]


class SSEParser:
    """Feed bytes with ``feed``; each call returns the events completed so far."""

    __slots__ = ("_buffer", "_data", "_event", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._event = ""
        self._data: list[str] = []
        self._pending_cr = False  # the last chunk ended in "\r": a "\n" next is the same end

    def feed(self, chunk: bytes) -> list[Event]:
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith(b"\r")
        self._buffer += chunk
        events: list[Event] = []
        if b"\r" not in self._buffer:  # the usual case: "\n" line ends only
            *lines, rest = self._buffer.split(b"\n")
            self._buffer = bytearray(rest)
            for line in lines:
                event = self._line(line.decode("utf-8", "replace"))
                if event is not None:
                    events.append(event)
            return events
        while True:
            end = _line_end(self._buffer)
            if end < 0:
                return events
            line = self._buffer[:end]
            width = 2 if self._buffer[end : end + 2] == b"\r\n" else 1
            del self._buffer[: end + width]
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)

    def close(self) -> list[Event]:
        """The event a stream left unterminated (no blank line after it), if any."""
        events = self.feed(b"\n") if self._buffer else []
        event = self._line("")
        return [*events, event] if event is not None else events

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
        elif name == "event":
            self._event = value
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._event = ""
            return None
        event = (self._event or "message", "\n".join(self._data))
        self._event, self._data = "", []
        return event


def _line_end(buffer: bytearray) -> int:
    """Index of the first line end in ``buffer``; -1 if none is certain yet."""
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r", 0, lf if lf >= 0 else len(buffer))
    if cr >= 0 and cr == len(buffer) - 1:
        return cr  # "\r" at the end: a line end either way ("\r" or the start of "\r\n")
    return cr if cr >= 0 else lf
