"""A status line at the bottom of a terminal: what minipi is waiting for, and for how long.

    ⠹ waiting for the model (turn 2)… 3 s

Shown only when stderr is a terminal and the output is not ``--json``. The line is erased
before anything else is written (``writing()``), so the round-by-round log and the approval
prompt never mix with it; streamed text is progress of its own, so the line is hidden while
a reply streams. Our own code (a ticker thread, about 60 lines) rather than ``rich.Live``:
Live captures stderr line by line, which would hold a streamed reply's text until its line
ends, and the approval prompt (a line without its end) would not show at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from minipi.threads import sigint_held

__all__ = ["Ticker"]

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ERASE = "\r\x1b[K"


class Ticker:
    """The status line of one command; ``show(text)`` and ``hide()`` from any thread."""

    def __init__(self, out: TextIO, every: float = 0.1) -> None:
        self.out = out
        self.every = every
        self.lock = threading.RLock()
        self.text: str | None = None
        self.since = 0.0
        self.drawn = False
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def show(self, text: str) -> None:
        """Say that minipi now waits for ``text`` (the clock starts now)."""
        with self.lock:
            if text != self.text:
                self.text, self.since = text, time.monotonic()
            if self.thread is None:
                self.thread = threading.Thread(target=self._tick, daemon=True, name="ticker")
                with sigint_held():  # Ctrl-C must wake the main thread at the approval prompt
                    self.thread.start()

    def hide(self) -> None:
        with self.lock:
            self.text = None
            self._erase()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Write something else: the line is erased first and not drawn meanwhile."""
        with self.lock:
            self._erase()
            yield

    def close(self) -> None:
        self.stopped.set()
        self.hide()

    def _erase(self) -> None:
        if self.drawn:
            self.out.write(_ERASE)
            self.out.flush()
            self.drawn = False

    def _tick(self) -> None:
        frame = 0
        while not self.stopped.wait(self.every):
            with self.lock:
                if self.text is None:
                    continue
                seconds = time.monotonic() - self.since
                self.out.write(
                    f"{_ERASE}{_FRAMES[frame % len(_FRAMES)]} {self.text}… {seconds:.0f} s"
                )
                self.out.flush()
                self.drawn = True
            frame += 1
