"""The batch on a Ray cluster (``--ray [ADDRESS]``; the optional extra ``minipi[ray]``).

Each worker is a Ray actor that opens its own model once (``open_model``: the endpoint, or
its own embedded engine when no endpoint is given) and runs one task at a time, so the
cluster makes at most ``workers`` model requests at once (``--max-connections`` lowers the
number of actors). The driver hands tasks to actors as they become free, writes every
record and trace itself (the same ``BatchDir.append``), and so resumes and sums up exactly
like a batch run on threads. An actor asks for one CPU when it runs an engine, none when it
only waits on an endpoint. The rate-limit backoff is shared by the tasks of one actor only.
Each node must see the task projects at the same paths (one machine, or a shared file
system) and have minipi installed; an actor reads its own node's environment to find a
model file, never the driver's.

Ctrl-C: no task is handed out any more, each actor is told to stop (its running task's
request in flight is given up, and the task ends ``cancelled``), and the driver waits for
them; Ctrl-C again leaves at once. ``ray`` is imported only here, only when ``--ray`` is given.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minipi.assemble import ModelHandle, open_model
from minipi.batch.backend import Job
from minipi.batch.gate import Gate
from minipi.batch.records import Record
from minipi.batch.run import Plan, crashed, flush_spans, run_task
from minipi.batch.store import write_atomically
from minipi.batch.tasks import Task
from minipi.errors import ConfigError

if TYPE_CHECKING:
    from minipi.batch.runner import Report

__all__ = ["RayWorker", "run_on_ray"]

_LOCAL_OBJECT_STORE = 200 * 1024 * 1024
"""Bytes of shared memory for a local instance's object store (records are a few KB; Ray's
default takes 30 % of the machine's memory)."""


class RayWorker:
    """One Ray actor: a model opened once, tasks run one at a time (``max_concurrency=2``
    only so that ``stop`` can arrive while a task runs)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.notes: list[str] = []
        self.stop_event = threading.Event()
        settings = plan.settings
        # This node's own environment finds its model file (the driver's paths may not exist)
        self.model: ModelHandle = open_model(
            settings, os.environ, can_approve=settings.approve == "all", report=self.notes.append
        )
        self.gate = Gate(1, self.stop_event)
        self.traces = Path(tempfile.mkdtemp(prefix="minipi-batch-"))

    def ready(self) -> list[str]:
        """What opening the model said (which engine, which model)."""
        return self.notes

    def run(self, task: Task) -> tuple[Record, str | None]:
        """The task's record and its trace document (the driver writes both)."""
        trace = self.traces / f"{task.id}.json"
        record = run_task(task, self.plan, self.model, self.gate, trace)
        if self.plan.spans:
            flush_spans()
        text = None
        if trace.exists():
            text = trace.read_text(encoding="utf-8")
            trace.unlink()
        return record, text

    def stop(self) -> None:
        self.stop_event.set()

    def close(self) -> None:
        self.model.close()


def run_on_ray(job: Job) -> bool:
    """Run ``job.pending`` on Ray actors; True when Ctrl-C stopped it (a ``Backend``)."""
    options, plan, report = job.options, job.plan, job.report
    ray = _import_ray()
    local = options.ray == "local"
    extra: dict[str, Any] = {"object_store_memory": _LOCAL_OBJECT_STORE} if local else {}
    try:
        ray.init(address=options.ray, include_dashboard=False, log_to_driver=False, **extra)
    except Exception as error:  # Ray's own errors (no cluster there, a version mismatch)
        raise ConfigError(
            f"cannot start or reach Ray at {options.ray!r}: {_reason(error)} — give --ray "
            "alone for a local instance, or the address of a running cluster"
        ) from None
    try:
        count = min(options.workers, options.max_connections or options.workers, len(job.pending))
        embedded = plan.settings.base_url is None or plan.settings.model_file is not None
        actor = ray.remote(max_concurrency=2, num_cpus=1 if embedded else 0)(RayWorker)
        shipped = replace(plan, env={})  # never the driver's whole environment
        actors = [actor.remote(shipped) for _ in range(count)]
        where = "a new local Ray instance" if local else f"the Ray cluster at {options.ray}"
        report(f"running on {where} with {count} workers")
        dispatch = _Dispatch(ray, actors, job)
        return _run_dispatch(dispatch, job.stop, report)
    finally:
        ray.shutdown()


def _import_ray() -> Any:
    try:
        ray = importlib.import_module("ray")  # not a static import: mypy runs without Ray
    except ImportError:
        raise ConfigError(
            "--ray needs Ray: pip install 'minipi[ray]' (or pip install ray)"
        ) from None
    return ray


def _run_dispatch(dispatch: _Dispatch, stop: threading.Event, report: Report) -> bool:
    try:
        dispatch.loop()
        dispatch.close_all()
        return stop.is_set()
    except KeyboardInterrupt:
        stop.set()
        report(
            "stopping: no new task starts, running ones are cancelled (Ctrl-C again to "
            "leave at once; the directory resumes either way)"
        )
    dispatch.stop_all()
    dispatch.loop()
    dispatch.close_all()
    return True


class _Dispatch:
    """The driver's loop: tasks to free actors, results to the book, in completion order."""

    def __init__(self, ray: Any, actors: list[Any], job: Job) -> None:
        self.ray, self.store, self.done, self.stop = ray, job.store, job.done, job.stop
        self.report = job.report
        self.actors = actors
        self.queue = list(reversed(job.pending))
        self.starting = {a.ready.remote(): a for a in actors}
        self.running: dict[Any, tuple[Any, Task, float]] = {}
        self.idle: list[Any] = []
        self.noted = False

    def loop(self) -> None:
        """Until every task is handed out and back (or, once stopping, every running one)."""
        while True:
            self._hand_out()
            if not self.running and (self.stop.is_set() or not self.queue or not self.starting):
                break
            ready, _ = self.ray.wait([*self.starting, *self.running], num_returns=1, timeout=0.5)
            for ref in ready:
                self._finished(ref)
        if self.queue and not self.stop.is_set():
            raise ConfigError("no Ray worker could start its model; see the messages above")

    def _hand_out(self) -> None:
        while self.idle and self.queue and not self.stop.is_set():
            actor, task = self.idle.pop(), self.queue.pop()
            self.running[actor.run.remote(task)] = (actor, task, time.perf_counter())

    def _finished(self, ref: Any) -> None:
        if ref in self.starting:
            self._started(ref, self.starting.pop(ref))
            return
        actor, task, started = self.running.pop(ref)
        try:
            record, trace = self.ray.get(ref)
        except Exception as error:  # the actor died, or the task raised: that task failed
            record = crashed(task, error, time.perf_counter() - started)
            if self.stop.is_set():  # Ctrl-C reached the Ray processes too: not its failure
                record = replace(record, status="cancelled", code="cancelled")
            self.done(task, record)
            return
        if trace is not None:
            write_atomically(self.store.trace_path(task.id), trace)
        self.done(task, record)
        self.idle.append(actor)

    def _started(self, ref: Any, actor: Any) -> None:
        try:
            notes: list[str] = self.ray.get(ref)
        except Exception as error:  # its model could not open (a bad endpoint, no engine)
            self.report(f"a Ray worker could not start: {_reason(error)}")
            return
        if not self.noted:  # every worker opens the same model: say it once
            self.noted = True
            for note in notes:
                self.report(note)
        self.idle.append(actor)

    def stop_all(self) -> None:
        """Tell every actor with a running task to stop it."""
        for actor, _task, _started in self.running.values():
            actor.stop.remote()

    def close_all(self, timeout: float = 10.0) -> None:
        """Close each started actor's model (its engine stops) before Ray shuts down."""
        refs = [actor.close.remote() for actor in self.idle]
        if refs:
            self.ray.wait(refs, num_returns=len(refs), timeout=timeout)


def _reason(error: BaseException) -> str:
    cause = getattr(error, "cause", None)
    lines = str(cause if cause is not None else error).strip().splitlines()
    return lines[-1] if lines else type(error).__name__
