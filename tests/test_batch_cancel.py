"""Issue 37, item 2: the first Ctrl-C of ``minipi batch run`` cancels the requests in flight.

Each task whose request was waiting for its answer ends ``cancelled`` at once (not when the
answer comes, and never ``succeeded`` with it), is not recorded, and runs again when the
batch resumes. Through the real command, against a model that answers after 25 s; and the
two parts under it: a request's ``cancel`` (the HTTP layer gives up a wait for an answer),
and the pool, which waits for every running task after a Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from batch_tasks.scripted import (
    batch_cli,
    endpoint_args,
    read_results,
    start_batch,
    write_tasks,
)
from minipi.ai import ClientConfig, Endpoint, Message, ModelRequest, Wire, connect
from minipi.batch.local import stop_on_interrupt
from minipi.batch.pool import Pool
from minipi.batch.records import Record, failed_record
from minipi.batch.tasks import Task
from minipi.errors import ModelError
from support.fake import Exchange, FakeServer, Turn
from support.faults import Stall
from support.render import compact_json

ANSWER = "The project holds one file."


@dataclass
class Slow:
    """Answers ``turn`` as plain JSON after ``seconds``, unless the client hangs up first;
    counts the requests that arrived and the ones whose client left before the answer."""

    turn: Turn
    seconds: float
    arrived: int = 0
    left: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def play(self, exchange: Exchange) -> None:
        with self.lock:
            self.arrived += 1
        if exchange.gone(self.seconds):
            with self.lock:
                self.left += 1
            exchange.close()
            return
        exchange.send(200, compact_json(exchange.render(self.turn)))


def _tasks(tmp_path: Path, count: int) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("notes\n", encoding="utf-8")
    rows = [
        {"id": f"t{n}", "question": f"What is in the project? (#{n})", "project": str(project)}
        for n in range(count)
    ]
    return write_tasks(tmp_path / "tasks.jsonl", rows)


def test_ctrl_c_cancels_the_requests_in_flight_and_resume_runs_them(tmp_path: Path) -> None:
    tasks, out = _tasks(tmp_path, 3), tmp_path / "out"
    slow = Slow(Turn(ANSWER), 25.0)
    with FakeServer([slow] * 3) as server:
        args = [str(tasks), "--out", str(out), *endpoint_args(server), "--workers", "2"]
        proc = start_batch(*args)
        try:
            waited = time.monotonic() + 60
            while slow.arrived < 2 and time.monotonic() < waited and proc.poll() is None:
                time.sleep(0.05)
            if slow.arrived != 2:
                proc.kill()
                pytest.fail(f"{slow.arrived} requests arrived, not 2: {proc.communicate()[1]}")
            stopped = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=40)
            took = time.monotonic() - stopped
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        # both requests given up: the answers that would come 25 s later are not waited for
        assert took < 15, stderr
        assert slow.left == 2
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "running ones are cancelled" in stderr
    assert read_results(out) == []  # cancelled tasks are not recorded: none "succeeded"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["cancelled"], summary["finished"], summary["pending"]) == (2, 0, 3), stderr
    with FakeServer([Turn(ANSWER)] * 3) as quick:
        again = batch_cli(str(tasks), "--out", str(out), *endpoint_args(quick))
    assert again.returncode == 0, again.stderr
    results = read_results(out)
    assert sorted(r["id"] for r in results) == ["t0", "t1", "t2"]
    assert {r["status"] for r in results} == {"succeeded"}


# --- a request's cancel -----------------------------------------------------------------------


@pytest.mark.parametrize("wire", ["chat", "responses"])
@pytest.mark.parametrize(
    ("stream", "step"),
    [(False, Stall(30.0)), (True, Stall(30.0)), (True, Stall(30.0, headers=True))],
    ids=["waiting", "stream-waiting", "stream-begun"],
)
def test_a_cancelled_request_is_given_up_at_once(wire: Wire, stream: bool, step: Stall) -> None:
    """Without a deadline, only the 120 s read timeout would have ended these waits."""
    cancel = threading.Event()
    config = ClientConfig(stream=stream, read_timeout=120, stream_idle_timeout=120)
    with FakeServer([step]) as server:
        client = connect(Endpoint(server.base_url, "fake-model", wire=wire), config)
        timer = threading.Timer(0.3, cancel.set)
        started = time.monotonic()
        timer.start()
        try:
            with closing(client), pytest.raises(ModelError) as caught:
                client.create(ModelRequest([Message("user", "hi")], cancel=cancel))
        finally:
            timer.cancel()
    assert time.monotonic() - started < 5
    assert caught.value.code == "cancelled"
    assert server.base_url in caught.value.message


def test_a_request_cancelled_before_it_is_sent_is_not_sent() -> None:
    cancel = threading.Event()
    cancel.set()
    with FakeServer([Turn(ANSWER)]) as server:
        client = connect(Endpoint(server.base_url, "fake-model"))
        with closing(client), pytest.raises(ModelError) as caught:
            client.create(ModelRequest([Message("user", "hi")], cancel=cancel))
        assert server.posts == 0
    assert caught.value.code == "cancelled"


# --- the pool after a Ctrl-C ------------------------------------------------------------------


def test_the_pool_waits_for_every_running_task_after_a_ctrl_c(tmp_path: Path) -> None:
    """A Ctrl-C that interrupted the wait for the first worker made Python 3.11 take that
    worker for ended: the batch summed up (and closed the model) while its task still ran."""
    lengths = {"long": 1.5, "short": 0.5}
    ended: list[str] = []

    def run(task: Task) -> Record:
        time.sleep(lengths[task.id])
        return failed_record(task, "cancelled", "stopped", lengths[task.id])

    stop = threading.Event()
    pool = Pool(run, 2, stop, lambda task, record: ended.append(task.id))
    pool.start([Task(name, "q", tmp_path) for name in lengths])
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        assert stop_on_interrupt(pool.wait, stop, lambda line: None)
    finally:
        timer.cancel()
    assert sorted(ended) == ["long", "short"]
