"""Progress while a batch runs: a tqdm bar on a terminal, one plain line per task otherwise.

The bar shows done/total, its rate and ETA (tqdm's own), and succeeded/failed and tokens in
its postfix. tqdm is imported only when stderr is a terminal (and is not required: without
it the plain lines are shown there too). Plain lines carry the same counts and an ETA from
the rate so far, so a log file of a nightly batch reads the same way.
"""

from __future__ import annotations

import importlib
import sys
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


class BarProgress:
    """A tqdm bar on the terminal ``out``."""

    def __init__(self, total: int, done: int, out: TextIO, tqdm: Any) -> None:
        self.counts = _Counts(total, done)
        self.bar = tqdm(total=total, initial=done, file=out, unit="task", dynamic_ncols=True)

    def update(self, record: Record) -> None:
        c = self.counts
        c.add(record)
        self.bar.set_postfix_str(f"ok {c.succeeded} failed {c.failed} tokens {c.tokens}")
        self.bar.update(1)

    def close(self) -> None:
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
