"""``run_batch``: the task file -> the batch directory (resumed) -> the workers -> summary.

    outcome = run_batch(BatchOptions(Path("tasks.jsonl"), Path("out"), workers=8), plan)

The order matters for "killed at any moment, nothing lost, nothing run twice": the directory
is locked, its configuration checked and rewritten, its records read (a torn last line cut
off), and only tasks without a record are handed to the workers; each record is durable
before the next step counts it (``BatchDir.append``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minipi.batch.backend import Backend, Job
from minipi.batch.fingerprint import changes, describe, fingerprint, scrub
from minipi.batch.progress import open_progress
from minipi.batch.records import Record
from minipi.batch.run import Plan
from minipi.batch.store import BatchDir, Resumed, now
from minipi.batch.summary import Counts, summarize
from minipi.batch.tasks import LineProblem, Task, counted, load_tasks
from minipi.errors import ConfigError

__all__ = ["BatchOptions", "BatchOutcome", "Report", "run_batch"]

Report = Callable[[str], None]


def _say(message: str) -> None:
    print(f"minipi batch: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class BatchOptions:
    """What the ``minipi batch`` command line says beyond the run settings."""

    tasks_file: Path
    out: Path
    workers: int = 4
    max_connections: int | None = None
    """Concurrent model requests, all workers together (None: ``workers``)."""
    force: bool = False
    """Go on in a directory made with another configuration."""
    ray: str | None = None
    """Run on Ray: ``local`` (a new local instance) or a cluster address."""


@dataclass(frozen=True)
class BatchOutcome:
    summary: dict[str, Any]
    problems: list[LineProblem] = field(default_factory=list)
    stopped: bool = False
    """Ctrl-C stopped it: the directory resumes where it ended."""

    @property
    def complete(self) -> bool:
        """Every task of the file has a record, and every line was a task."""
        return not self.problems and self.summary["pending"] == 0

    @property
    def all_succeeded(self) -> bool:
        return self.complete and self.summary["succeeded"] == self.summary["finished"]


class _Book:
    """The records of the directory, and what this invocation adds (thread-safe)."""

    def __init__(self, store: BatchDir, resumed: Resumed, total: int) -> None:
        self.store = store
        self.records: dict[str, Record] = dict(resumed.records)
        self.ran = self.cancelled = 0
        self.progress = open_progress(total, len(self.records))
        self._lock = threading.Lock()

    def done(self, task: Task, record: Record) -> None:
        """A task ended: durable first, then counted and shown (a cancelled one is not
        kept: it runs again when the batch resumes)."""
        with self._lock:
            if record.status == "cancelled":
                self.cancelled += 1
                return
            self.store.append(record)
            self.records[task.id] = record
            self.ran += 1
            self.progress.update(record)


def run_batch(options: BatchOptions, plan: Plan, report: Report = _say) -> BatchOutcome:
    """Run every task of ``options.tasks_file`` without a record in ``options.out``."""
    started = time.monotonic()
    tasks, problems = _load(options.tasks_file)
    for line in counted(problems, "skipped "):
        report(line)
    store = BatchDir.open(options.out)
    try:
        resumed = store.resume()
        _settle_config(store, options, plan, tasks, resumed, report)
        known = {t.id for t in tasks}
        kept = Resumed({k: v for k, v in resumed.records.items() if k in known})
        book = _Book(store, kept, len(tasks))
        pending = [t for t in tasks if t.id not in book.records]
        if len(pending) < len(tasks):
            report(f"resuming: {len(tasks) - len(pending)} of {len(tasks)} tasks already finished")
        try:
            stopped = _execute(pending, options, plan, book, report)
        finally:
            book.progress.close()
        wall = time.monotonic() - started
        counts = Counts(len(tasks), len(problems), book.cancelled, book.ran, wall)
        summary = summarize([book.records[t.id] for t in tasks if t.id in book.records], counts)
        store.write_json("summary.json", summary)
    finally:
        store.close()
    return BatchOutcome(summary, problems, stopped)


def _load(path: Path) -> tuple[list[Task], list[LineProblem]]:
    try:
        tasks, problems = load_tasks(path)
    except OSError as error:
        raise ConfigError(f"cannot read the task file {path}: {error.strerror}") from None
    if not tasks and not problems:
        raise ConfigError(
            f"{path} holds no task: write one JSON object per line, "
            '{"id": "t1", "question": "...", "project": "DIR"}'
        )
    return tasks, problems


def _settle_config(
    store: BatchDir,
    options: BatchOptions,
    plan: Plan,
    tasks: list[Task],
    resumed: Resumed,
    report: Report,
) -> None:
    """Refuse results made another way (unless ``--force``), then record this way."""
    config = describe(plan.settings, plan.env, plan.task_timeout)
    stored = _scrubbed(store.read_config())
    if stored is None and resumed.records:
        raise ConfigError(
            f"{options.out} has results but no batch.json: it was not made by minipi batch, "
            "or was edited; use another --out directory"
        )
    differ = _differences(stored, config, tasks, resumed)
    if resumed.records and differ:
        if not options.force:
            raise ConfigError(
                f"{options.out} holds {len(resumed.records)} results made another way:\n  "
                + "\n  ".join(differ)
                + "\nrun the same command as before to resume, or add --force to go on this "
                "way (the results so far stay; remove a task's line from results.jsonl to "
                "run it again)",
                code="batch_config_changed",
            )
        report("--force: going on with a changed configuration: " + "; ".join(differ))
    store.write_config(_document(stored, config, options, changed=bool(differ)))


def _scrubbed(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """``batch.json`` as read, without base-URL credentials an older minipi wrote there."""
    if stored is None:
        return None
    history = stored.get("history")
    if isinstance(history, list):
        history = [
            {**h, "config": scrub(h.get("config"))} if isinstance(h, dict) else h for h in history
        ]
        stored = {**stored, "history": history}
    return {**stored, "config": scrub(stored.get("config", {}))}


def _differences(
    stored: dict[str, Any] | None, config: dict[str, Any], tasks: list[Task], resumed: Resumed
) -> list[str]:
    """How this run differs from the recorded one: its settings, and tasks changed since."""
    differ = changes(stored.get("config", {}), config) if stored is not None else []
    altered = [
        t.id for t in tasks if t.id in resumed.records and resumed.records[t.id].task != t.digest
    ]
    if altered:
        differ.append(f"tasks changed since they ran: {', '.join(altered[:10])}")
    return differ


def _document(
    stored: dict[str, Any] | None, config: dict[str, Any], options: BatchOptions, *, changed: bool
) -> dict[str, Any]:
    """``batch.json``: this configuration, and the earlier ones when it changed."""
    document: dict[str, Any] = {
        "created": stored.get("created", now()) if stored else now(),
        "updated": now(),
        "tasks_file": str(options.tasks_file.resolve()),
        "config": config,
        "fingerprint": fingerprint(config),
    }
    history = list(stored.get("history", [])) if stored else []
    if stored is not None and changed:
        history.append({"fingerprint": stored.get("fingerprint"), "config": stored.get("config")})
    if history:
        document["history"] = history
    return document


def _execute(
    pending: list[Task], options: BatchOptions, plan: Plan, book: _Book, report: Report
) -> bool:
    """Run ``pending`` on the chosen backend; True when Ctrl-C stopped it."""
    if not pending:
        return False
    backend: Backend
    if options.ray is not None:
        from minipi.batch.ray_backend import run_on_ray as backend
    else:
        from minipi.batch.local import run_here as backend
    return backend(Job(pending, options, plan, book.store, book.done, threading.Event(), report))
