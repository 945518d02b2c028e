"""The parts of ``minipi.batch`` on their own: the task file, the directory, the gate over
real HTTP, the pool's isolation, the summary's figures, and the package's import rules."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import minipi
from minipi.agent import AgentConfig, run_agent
from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.types import Message, ModelRequest
from minipi.batch import Cancelled, Gate, GatedClient, Record, Task, load_tasks
from minipi.batch.pool import Pool
from minipi.batch.records import failed_record
from minipi.batch.store import BatchDir
from minipi.batch.summary import Counts, percentile, summarize
from minipi.errors import ConfigError
from support.fake import FakeServer, Turn
from support.faults import error_status

SRC = Path(minipi.__file__).resolve().parent


# --- the task file --------------------------------------------------------------------


def test_each_malformed_line_is_named_and_the_rest_are_tasks(tmp_path: Path) -> None:
    lines = [
        '{"id": "a", "question": "q1", "project": "proj"}',
        "",
        "# a comment",
        "{not json",
        '{"id": "b", "question": "q2"}',
        '{"id": "a", "question": "q3", "project": "p"}',
        '{"id": "../x", "question": "q", "project": "p"}',
        '{"id": 7, "question": "q4", "project": "/abs", "expect": "128", "max_turns": 3}',
        '{"id": "c", "question": "q", "project": "p", "max_turns": 0}',
        '{"id": "d", "question": "q", "project": "p", "expect": [1]}',
        '{"id": "e", "question": "q", "project": "p", "extra": 1}',
        "[1, 2]",
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    tasks, problems = load_tasks(path)
    assert [t.id for t in tasks] == ["a", "7"]
    assert tasks[0].project == tmp_path / "proj"  # relative to the task file's folder
    assert tasks[1].project == Path("/abs")
    assert tasks[1].expect == ("128",)
    assert tasks[1].max_turns == 3
    assert [p.line for p in problems] == [4, 5, 6, 7, 9, 10, 11, 12]
    messages = [p.message for p in problems]
    assert "not JSON" in messages[0]
    assert '"project"' in messages[1]
    assert "already used on line 1" in messages[2]
    assert "cannot name a trace file" in messages[3]
    assert "max_turns" in messages[4]
    assert "expect" in messages[5]
    assert "unknown field 'extra'" in messages[6]
    assert "not a JSON object" in messages[7]
    assert str(problems[0]).startswith(f"{path}:4: ")


def test_a_task_is_correct_only_when_its_answer_holds_every_expected_string() -> None:
    task = Task("t", "q", Path("/p"), expect=("128", "9600"))
    assert task.judge("订单 128，营收 9600") is True
    assert task.judge("订单 128") is False
    assert task.judge("") is False
    assert Task("t", "q", Path("/p")).judge("anything") is None
    assert task.digest != Task("t", "q", Path("/p"), expect=("128",)).digest


# --- the directory ----------------------------------------------------------------------


def _record(task_id: str, status: str = "succeeded", seconds: float = 1.0) -> Record:
    task = Task(task_id, "q", Path("/p"), expect=("x",))
    base = failed_record(task, "bad_project", "gone", seconds)
    data = {**base.to_json(), "status": status, "code": None if status == "succeeded" else "x"}
    return Record.from_json(data)


def test_a_torn_last_line_is_cut_off_and_records_survive_a_reopen(tmp_path: Path) -> None:
    store = BatchDir.open(tmp_path / "out")
    store.resume()
    store.append(_record("a"))
    store.append(_record("b", "failed"))
    store.close()
    results = tmp_path / "out" / "results.jsonl"
    with open(results, "ab") as handle:
        handle.write(b'{"id": "c", "status": "succ')  # power lost mid-write
    left = tmp_path / "out" / "traces" / ".c.json.4242.tmp"  # a trace write killed midway
    left.write_text("{", encoding="utf-8")
    store = BatchDir.open(tmp_path / "out")
    assert not left.exists()
    resumed = store.resume()
    assert sorted(resumed.records) == ["a", "b"]
    store.append(_record("c"))
    store.close()
    lines = results.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "b", "c"]


def test_a_directory_is_held_by_one_process(tmp_path: Path) -> None:
    store = BatchDir.open(tmp_path / "out")
    code = (
        "import sys; from pathlib import Path; from minipi.batch.store import BatchDir\n"
        "try:\n    BatchDir.open(Path(sys.argv[1]))\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
    )
    store.close()
    assert "ConfigError" in other.stdout
    assert "in use by another minipi batch" in other.stdout
    BatchDir.open(tmp_path / "out").close()  # free again once closed


def test_a_line_that_is_not_a_result_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    store = BatchDir.open(tmp_path / "out")
    with pytest.raises(ConfigError, match=r"results.jsonl:1 is not a result"):
        store.resume()
    store.close()


# --- the gate, over real HTTP ---------------------------------------------------------


class _Concurrency:
    """A reply function that records how many requests were being answered at once."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.now = self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, object]) -> Turn:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.latency)
        with self.lock:
            self.now -= 1
        return Turn("done")


def test_the_gate_bounds_concurrent_requests_of_every_worker() -> None:
    counter = _Concurrency(0.1)
    with FakeServer([counter] * 12) as server:
        client = connect(Endpoint(server.base_url, "fake-model"), ClientConfig())
        gate = Gate(2)
        threads = [
            threading.Thread(target=GatedClient(client, gate).create, args=(_request(),))
            for _ in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        client.close()
    assert server.posts == 8
    assert counter.peak == 2


def _request() -> ModelRequest:
    return ModelRequest(items=[Message("user", "hi")])


def test_a_rate_limited_request_makes_every_worker_wait_then_is_asked_again() -> None:
    script = [error_status(429, "slow down", retry_after="0")] * 3 + [Turn("done")] * 4
    with FakeServer(script) as server:
        client = connect(Endpoint(server.base_url, "fake-model"), ClientConfig(backoff_base=0))
        gate = Gate(4, backoff=0.5)
        started = time.monotonic()
        first = GatedClient(client, gate).create(_request())  # 3 x 429, then after 0.5 s
        waited = time.monotonic() - started
        second_started = time.monotonic()
        GatedClient(client, gate).create(_request())
        client.close()
    assert first.items
    assert waited >= 0.5
    assert gate.deferrals == 1
    assert time.monotonic() - second_started < 0.5  # the success reset the backoff
    assert server.posts == 5


def test_stop_cancels_a_run_at_its_next_request(tmp_path: Path) -> None:
    stop = threading.Event()
    with FakeServer([Turn("never")]) as server:
        client = connect(Endpoint(server.base_url, "fake-model"))
        stop.set()
        result = run_agent(GatedClient(client, Gate(1, stop)), [], _config(), "q")
        client.close()
    assert (result.status, result.code) == ("cancelled", "cancelled")
    assert server.posts == 0
    assert isinstance(Cancelled(), Exception)


def _config() -> AgentConfig:
    return AgentConfig()


# --- the pool -----------------------------------------------------------------------------


def test_a_task_that_crashes_fails_alone() -> None:
    tasks = [Task(name, "q", Path("/p")) for name in ("a", "b", "c")]
    seen: dict[str, Record] = {}

    def run(task: Task) -> Record:
        if task.id == "b":
            raise RuntimeError("a bug")
        return _record(task.id)

    def done(task: Task, record: Record) -> None:
        seen[task.id] = record

    pool = Pool(run, 2, threading.Event(), done)
    pool.start(tasks)
    pool.wait()
    assert sorted(seen) == ["a", "b", "c"]
    assert (seen["b"].status, seen["b"].code) == ("failed", "task_crashed")
    assert "RuntimeError: a bug" in (seen["b"].error or "")
    assert seen["a"].status == "succeeded"


def test_a_configuration_error_stops_the_pool_and_is_raised() -> None:
    stop = threading.Event()

    def run(task: Task) -> Record:
        raise ConfigError("bad option")

    pool = Pool(run, 2, stop, lambda task, record: None)
    pool.start([Task(n, "q", Path("/p")) for n in "abcd"])
    with pytest.raises(ConfigError, match="bad option"):
        pool.wait()
    assert stop.is_set()


# --- the summary --------------------------------------------------------------------------


def test_the_summary_counts_rates_statuses_and_percentiles() -> None:
    records = [_record(f"s{n}", seconds=float(n)) for n in range(1, 20)]
    records.append(_record("f", "failed", seconds=100.0))
    summary = summarize(records, Counts(tasks=22, malformed=1, cancelled=1, ran=20))
    assert summary["finished"] == 20
    assert summary["pending"] == 2
    assert summary["success_rate"] == 0.95
    assert summary["statuses"] == {"succeeded": 19, "failed/x": 1}
    assert summary["seconds_per_task"] == {"p50": 10.0, "p95": 19.0}
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.95) == 3.0


# --- imports ------------------------------------------------------------------------------


def test_batch_imports_nothing_of_the_cli_nor_the_http_side() -> None:
    edges = []
    for path in sorted((SRC / "batch").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            edges += [f"{path.name}: {n}" for n in names if n.startswith(("minipi.cli", "httpx"))]
    assert edges == []


def test_the_batch_command_module_loads_nothing_heavy() -> None:
    code = (
        "import sys, minipi.cli.main, minipi.cli.batch; "
        "print(sorted(m for m in ('minipi.batch', 'minipi.assemble', 'httpx', 'ray', 'tqdm') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_bench_task_files_are_tasks_of_existing_projects() -> None:
    for path in sorted((SRC.parents[1] / "bench" / "tasks").glob("*.jsonl")):
        tasks, problems = load_tasks(path)
        assert problems == []
        assert tasks
        assert all(task.project.is_dir() for task in tasks), path


def test_run_task_as_a_library_call_reports_every_event_too() -> None:
    from batch_tasks.scripted import DAILY_EXPECT, SAMPLE, ByQuestion, serve
    from minipi.agent.events import AgentEvent, ModelResponded
    from minipi.assemble import Settings, open_model
    from minipi.batch import Plan, run_task

    server = serve(ByQuestion())
    settings = Settings(base_url=server.base_url, model="fake-model")
    model = open_model(settings, {})
    seen: list[AgentEvent] = []
    try:
        task = Task("daily", "q", SAMPLE, expect=tuple(DAILY_EXPECT))
        record = run_task(task, Plan(settings), model, Gate(1), on_event=seen.append)
    finally:
        model.close()
        server.stop()
    assert (record.status, record.correct, record.trace) == ("succeeded", True, None)
    assert sum(isinstance(e, ModelResponded) for e in seen) == 3


def test_a_task_whose_trace_sink_fails_still_reports_every_event(tmp_path: Path) -> None:
    from batch_tasks.scripted import DAILY_EXPECT, SAMPLE, ByQuestion, serve
    from minipi.agent.events import AgentEvent, EventSink, RunEnd, RunStart, TurnStart
    from minipi.assemble import ModelHandle, Settings, open_model
    from minipi.batch import Plan, run_task
    from minipi.errors import SessionStoreError

    def failing(event: AgentEvent) -> None:
        if not isinstance(event, RunStart):  # from the first turn on
            raise SessionStoreError("the disk is full")

    def trace(
        path: Path, settings: Settings, model: ModelHandle, tools: object, project: Path
    ) -> EventSink:
        return failing

    server = serve(ByQuestion())
    settings = Settings(base_url=server.base_url, model="fake-model")
    model = open_model(settings, {})
    seen: list[AgentEvent] = []
    try:
        task = Task("daily", "q", SAMPLE, expect=tuple(DAILY_EXPECT))
        plan = Plan(settings, trace=trace)
        run_task(task, plan, model, Gate(1), tmp_path / "daily.json", on_event=seen.append)
    finally:
        model.close()
        server.stop()
    assert isinstance(seen[0], RunStart)
    assert isinstance(seen[1], TurnStart)  # the one the trace failed on
    assert isinstance(seen[-1], RunEnd)
    assert seen[-1].result.code == "session_store_unreadable"
