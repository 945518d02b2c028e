"""The batch on this machine: one model (endpoint or engine) shared by a pool of threads.

One engine serves every worker when no endpoint is configured. llama-cpp-python's server
(the embedded engine and ``minipi serve``) answers one request at a time, so its requests
are serialised (``--max-connections 1``); the workers still overlap their tool calls and
project work, which is small next to a local model's seconds per reply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from minipi.assemble import ModelHandle, open_model
from minipi.batch.backend import Job
from minipi.batch.gate import Gate
from minipi.batch.pool import Pool
from minipi.batch.records import Record
from minipi.batch.run import run_task
from minipi.batch.tasks import Task

if TYPE_CHECKING:
    from minipi.batch.runner import Report

__all__ = ["connections_for", "run_here", "stop_on_interrupt"]

ENGINE_SLOTS = 1
"""Requests llama-cpp-python's OpenAI server handles at once (it has one slot)."""


def connections_for(wanted: int, model: ModelHandle, report: Callable[[str], None]) -> int:
    """``wanted`` concurrent requests, or what the local engine can take."""
    if model.embedded and wanted > ENGINE_SLOTS:
        report(
            "the local engine answers one request at a time (llama-cpp-python's server): "
            "model requests are serialised (--max-connections 1); use an endpoint such as "
            "vLLM or llama.cpp's llama-server with --parallel for concurrent requests"
        )
        return ENGINE_SLOTS
    return wanted


def run_here(job: Job) -> bool:
    """Run ``job.pending`` in ``options.workers`` threads; True when Ctrl-C stopped it (a
    ``Backend``)."""
    options, plan, stop, report = job.options, job.plan, job.stop, job.report
    settings = plan.settings
    wanted = min(options.max_connections or options.workers, options.workers)
    gate = Gate(wanted, stop)  # also the pacer of every attempt: a 429 slows every worker
    allowed = settings.approve == "all"
    model = open_model(settings, plan.env, can_approve=allowed, report=report, pacer=gate)
    try:
        gate.limit(connections_for(wanted, model, report))

        def run(task: Task) -> Record:
            trace = job.store.trace_path(task.id)
            return run_task(task, plan, model, gate, trace, journal=job.store.journal)

        pool = Pool(run, options.workers, stop, job.done)
        pool.start(job.pending)
        return stop_on_interrupt(pool.wait, stop, report)
    finally:
        model.close()


def stop_on_interrupt(wait: Callable[[], None], stop: threading.Event, report: Report) -> bool:
    """``wait()``; at Ctrl-C, set ``stop`` and wait for the running tasks to end
    (``cancelled``). A second Ctrl-C leaves at once (KeyboardInterrupt). True if stopped."""
    try:
        wait()
        return stop.is_set()
    except KeyboardInterrupt:
        stop.set()
        report(
            "stopping: no new task starts, running ones are cancelled (Ctrl-C again to "
            "leave at once; the directory resumes either way)"
        )
    wait()
    return True
