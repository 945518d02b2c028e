"""Progress while a batch runs: a tqdm bar on a terminal, one plain line per task otherwise.

The bar shows done/total, its rate and ETA (tqdm's own), and succeeded/failed and tokens in
its postfix. It is redrawn at each task's end and once a second in between (a thread calls
``refresh``), so its clock runs while a slow model thinks; and nothing breaks it: while it
shows, ``sys.stderr`` is a stand-in that writes each complete line through ``tqdm.write``
(the bar cleared, the line, the bar again), whoever prints it (a notice of the local engine,
Ray, a warning). tqdm is imported only when stderr is a terminal (and is not required:
without it the plain lines are shown there too). Plain lines carry the same counts and an
ETA from the rate so far, so a log file of a nightly batch reads the same way.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from typing import Any, Protocol, TextIO

from minipi.batch.records import Record

__all__ = ["Progress", "open_progress"]


class Progress(Protocol):
    def update(self, record: Record) -> None: ...

    def close(self) -> None: ...


class _Counts:
    def __init__(self, total: int, done: int) -> None:
        self.total, self.done, self.start_done = total, done, done
        self.succeeded = self.failed = self.tokens = 0
        self.first: float | None = None
        """When the first task of this run ended: the rate is measured from there, past
        the start-up (a local engine, Ray) that no later task pays."""

    def add(self, record: Record) -> None:
        if self.first is None:
            self.first = time.monotonic()
        self.done += 1
        if record.status == "succeeded":
            self.succeeded += 1
        else:
            self.failed += 1
        self.tokens += record.tokens.get("input", 0) + record.tokens.get("output", 0)

    def eta(self) -> str:
        ran = self.done - self.start_done
        left = self.total - self.done
        if ran < 2 or left <= 0 or self.first is None:
            return "-"
        seconds = (time.monotonic() - self.first) / (ran - 1) * left
        return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class PlainProgress:
    """One line per finished task on ``out``."""

    def __init__(self, total: int, done: int, out: TextIO) -> None:
        self.counts = _Counts(total, done)
        self.out = out

    def update(self, record: Record) -> None:
        c = self.counts
        c.add(record)
        end = record.status if record.code is None else f"{record.status}/{record.code}"
        print(
            f"minipi batch: {c.done}/{c.total} done ({c.succeeded} succeeded, {c.failed} "
            f"failed, {c.tokens} tokens, ETA {c.eta()}): {record.id} {end} "
            f"({record.turns} requests, {record.seconds:.2f} s)",
            file=self.out,
            flush=True,
        )

    def close(self) -> None:
        """Nothing to tidy: every line is complete."""


class _LinesAboveBar:
    """``sys.stderr`` while the bar shows: each complete line written through ``tqdm.write``
    on ``out`` (above the bar, which is drawn again under it); a line without its end yet
    waits for it. Everything else is ``out``'s (``isatty``, ``encoding``, ``fileno``)."""

    def __init__(self, out: TextIO, tqdm: Any) -> None:
        self._out, self._tqdm = out, tqdm
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            self._tqdm.write(line, file=self._out)
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def finish(self) -> None:
        """The last line, should it have no end."""
        with self._lock:
            rest, self._partial = self._partial, ""
        if rest:
            self._tqdm.write(rest, file=self._out)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


class BarProgress:
    """A tqdm bar on the terminal ``out``, redrawn every ``tick`` seconds; other lines are
    written above it (``_LinesAboveBar``)."""

    def __init__(self, total: int, done: int, out: TextIO, tqdm: Any, tick: float = 1.0) -> None:
        self.counts = _Counts(total, done)
        self.bar = tqdm(
            total=total,
            initial=done,
            file=out,
            unit="task",
            dynamic_ncols=True,
            miniters=1,  # every task's end is drawn: no count held back
            mininterval=0,
            postfix=self._postfix(),
        )
        self.above = _LinesAboveBar(out, tqdm)
        self.stderr = sys.stderr
        if out is sys.stderr:
            sys.stderr = self.above
        self.stopped = threading.Event()
        self.ticker = threading.Thread(
            target=self._tick, args=(tick,), name="minipi-batch-bar", daemon=True
        )
        self.ticker.start()

    def _postfix(self) -> str:
        c = self.counts
        return f"ok {c.succeeded} failed {c.failed} tokens {c.tokens}"

    def _tick(self, seconds: float) -> None:
        """Redraw the bar while no task ends: its elapsed time and rate keep moving."""
        while not self.stopped.wait(seconds):
            self.bar.refresh()

    def update(self, record: Record) -> None:
        self.counts.add(record)
        self.bar.set_postfix_str(self._postfix(), refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.stopped.set()
        self.ticker.join()
        self.above.finish()
        if sys.stderr is self.above:
            sys.stderr = self.stderr
        self.bar.close()


def open_progress(total: int, done: int, out: TextIO | None = None) -> Progress:
    """The bar when ``out`` (stderr) is a terminal and tqdm is installed, else plain lines."""
    out = out or sys.stderr
    if out.isatty():
        try:
            tqdm = importlib.import_module("tqdm").tqdm
        except ImportError:
            return PlainProgress(total, done, out)
        return BarProgress(total, done, out, tqdm)
    return PlainProgress(total, done, out)
