"""A bounded pool of worker threads that run tasks and hand each record to one callback.

    pool = Pool(run=lambda task: run_task(task, ...), workers=8, stop=gate.stop, done=write)
    pool.start(tasks)
    pool.wait()                    # KeyboardInterrupt reaches the caller, which sets stop

Threads, not processes: a task spends its time waiting for the model (I/O, the GIL is
free), and the model client, the engine and the results file are shared. Workers are
daemon threads, so a second Ctrl-C can leave at once even while a request is in flight.

Isolation: an exception out of ``run`` (a bug, a tool that crashed the loop) becomes that
task's ``task_crashed`` record; the other tasks go on. A ``ConfigError``/``AgentError`` is
about the batch's configuration, so it stops the batch and ``wait`` raises it; so does an
error of ``done`` (the results file could not be written).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable

from minipi.batch.records import Record
from minipi.batch.run import crashed
from minipi.batch.tasks import Task
from minipi.errors import AgentError, ConfigError

__all__ = ["Pool"]


class Pool:
    """``workers`` threads taking tasks in order until none is left or ``stop`` is set."""

    def __init__(
        self,
        run: Callable[[Task], Record],
        workers: int,
        stop: threading.Event,
        done: Callable[[Task, Record], None],
    ) -> None:
        self.run = run
        self.workers = workers
        self.stop = stop
        self.done = done
        self._queue: queue.SimpleQueue[Task] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._lock = threading.Lock()
        self._running = 0
        self._ended = threading.Event()
        """Set once every worker has ended (``wait`` waits for it, not for the threads)."""

    def start(self, tasks: Iterable[Task]) -> None:
        count = 0
        for task in tasks:
            self._queue.put(task)
            count += 1
        self._running = min(self.workers, count)
        if not self._running:
            self._ended.set()
        for n in range(self._running):
            thread = threading.Thread(target=self._work, name=f"batch-{n}", daemon=True)
            thread.start()

    def wait(self) -> None:
        """Until every worker has ended (each task's record handed to ``done``); raises the
        error that stopped the batch, if any. Waits in short steps so that Ctrl-C is
        delivered to the caller at once, and on an event, never in ``Thread.join``: Python
        3.11 takes a thread whose join a Ctrl-C interrupted for ended while it still runs
        (the handling of bpo-45274), so a second ``wait`` returned under a running task."""
        while not self._ended.wait(0.1):
            pass
        if self._failure is not None:
            raise self._failure

    def _work(self) -> None:
        try:
            self._take_tasks()
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self._ended.set()

    def _take_tasks(self) -> None:
        while not self.stop.is_set():
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                self.done(task, self._run(task))
            except BaseException as error:  # the batch cannot go on: say why, stop the rest
                self._fail(error)
                return

    def _run(self, task: Task) -> Record:
        started = time.perf_counter()
        try:
            return self.run(task)
        except (ConfigError, AgentError):
            raise
        except Exception as error:
            return crashed(task, error, time.perf_counter() - started)

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            self._failure = self._failure or error
        self.stop.set()
