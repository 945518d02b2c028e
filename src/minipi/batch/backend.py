"""What a batch back-end is given, and what it must do: one ``Job``, one call.

    def run_here(job: Job) -> bool: ...      # minipi.batch.local: a pool of threads
    def run_on_ray(job: Job) -> bool: ...    # minipi.batch.ray_backend: Ray actors

A ``Backend`` runs ``job.pending``, hands each task's record to ``job.done`` (which writes it;
a trace goes to ``job.store.trace_path``), stops handing out tasks once ``job.stop`` is set,
and returns True when Ctrl-C stopped it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minipi.batch.records import Record
from minipi.batch.run import Plan
from minipi.batch.store import BatchDir
from minipi.batch.tasks import Task

if TYPE_CHECKING:
    from minipi.batch.runner import BatchOptions, Report

__all__ = ["Backend", "Job"]


@dataclass(frozen=True)
class Job:
    """The tasks still to run in a batch directory, and how."""

    pending: Sequence[Task]
    options: BatchOptions
    plan: Plan
    store: BatchDir
    done: Callable[[Task, Record], None]
    """Called once per task with its record, from any thread (it locks)."""
    stop: threading.Event
    """Set at Ctrl-C, or by a back-end that cannot go on."""
    report: Report
    """A line for the person running the batch (stderr)."""


class Backend(Protocol):
    """Runs a ``Job``; True when Ctrl-C stopped it."""

    def __call__(self, job: Job) -> bool: ...
