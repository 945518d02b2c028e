"""Issue 39, item 4: ``await arun_agent(...)``, the one loop awaited from async code.

Against the fake OpenAI-compatible server on 127.0.0.1: the same result as ``run_agent`` on
the same script; every event reaches the async sink, in order, on the event loop; cancelling
the awaiting task (mid-call, mid-request, by a timeout) ends the run ``cancelled`` with every
call answered, raises ``CancelledError`` only once the run's thread is gone; and the example
HTTP server (``examples/serve_http.py``) in a real uvicorn answers concurrent questions, each
with its own figures, and cancels the run of a client that hangs up.
"""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST_RETRIES
from minipi import arun_agent as exported
from minipi.agent import (
    AgentConfig,
    AgentEvent,
    AgentTool,
    RunEnd,
    RunResult,
    arun_agent,
    run_agent,
    tool_from_function,
)
from minipi.agent.events import ModelDelta
from minipi.ai import ClientConfig, Endpoint, ModelClient, connect
from minipi.ai.types import FunctionCall, FunctionCallOutput
from minipi.assemble import Settings, open_model
from minipi.errors import MiniPiError
from minipi.files import ProjectFiles, create_project_tools
from support.cli import clean_env
from support.fake import Call, FakeServer, Reply, Turn
from support.faults import Stall
from support.render import JsonDict

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How many orders does notes.txt record?"
ANSWER = "notes.txt records 128 orders."


def _script() -> list[Turn]:
    return [Turn(calls=[Call("read_file", {"path": "notes.txt"})]), Turn(ANSWER)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("orders: 128\n", encoding="utf-8")
    return root


@pytest.fixture
def files(project: Path) -> Iterator[ProjectFiles]:
    with ProjectFiles(project) as sandbox:
        yield sandbox


Connect = Callable[..., ModelClient]


@pytest.fixture
def connect_to() -> Iterator[Connect]:
    """``connect_to(server, config=FAST_RETRIES)``: a client of ``server``, closed after."""
    made: list[ModelClient] = []

    def make(server: FakeServer, config: ClientConfig = FAST_RETRIES) -> ModelClient:
        made.append(connect(Endpoint(server.base_url, "fake-model"), config))
        return made[-1]

    yield make
    for client in made:
        client.close()


def _runs_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "minipi-arun"]


def _unanswered(result: RunResult) -> set[str]:
    calls = {i.call_id for i in result.items if isinstance(i, FunctionCall)}
    return calls - {i.call_id for i in result.items if isinstance(i, FunctionCallOutput)}


def _answer_of(result: RunResult, call_id: str) -> str:
    outputs = (i for i in result.items if isinstance(i, FunctionCallOutput))
    return next(i.output for i in outputs if i.call_id == call_id)


def _shown(event: AgentEvent) -> tuple[Any, ...]:
    """An event without its timings (``seconds``), which differ from run to run."""
    return (
        type(event).__name__,
        *(getattr(event, f.name) for f in fields(event) if f.name != "seconds"),
    )


class Collected:
    """An async sink that records each event, the thread it ran in, and waits a little (the
    run must wait for it)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.threads: set[str] = set()

    async def __call__(self, event: AgentEvent) -> None:
        await asyncio.sleep(0)
        self.threads.add(threading.current_thread().name)
        self.events.append(event)

    @property
    def ended(self) -> RunResult:
        ends = [e.result for e in self.events if isinstance(e, RunEnd)]
        assert len(ends) == 1
        return ends[0]


# --- the same loop, awaited ----------------------------------------------------------------


def test_it_is_the_library_entry_point() -> None:
    assert exported is arun_agent


def test_arun_agent_gives_what_run_agent_gives(files: ProjectFiles, connect_to: Connect) -> None:
    tools = create_project_tools(files)
    config = ClientConfig(stream=True, backoff_base=0.01, read_timeout=10.0)
    with FakeServer(_script()) as one, FakeServer(_script()) as other:
        sync_events: list[AgentEvent] = []
        expected = run_agent(
            connect_to(one, config), tools, AgentConfig(), QUESTION, sync_events.append
        )
        sink = Collected()
        got = asyncio.run(
            arun_agent(connect_to(other, config), tools, AgentConfig(), QUESTION, sink)
        )
        sent = [r.body for r in one.requests], [r.body for r in other.requests]
    assert expected.status == "succeeded"
    assert expected.answer == ANSWER
    assert got == expected
    assert sent[0] == sent[1]
    assert any(isinstance(e, ModelDelta) for e in sink.events)  # streamed, piece by piece
    assert [_shown(e) for e in sink.events] == [_shown(e) for e in sync_events]
    assert sink.threads == {threading.main_thread().name}  # awaited on the event loop
    assert _runs_alive() == []


def test_a_structured_answer_is_awaited_as_run_agent_gives_it(
    files: ProjectFiles, connect_to: Connect
) -> None:
    """``output=`` reaches the one loop: the JSON value, each field traced to its read."""
    script = [*_script(), Turn('{"orders": 128}')]
    with FakeServer(script) as server:
        result = asyncio.run(
            arun_agent(
                connect_to(server),
                create_project_tools(files),
                AgentConfig(),
                QUESTION,
                output="orders:int",
            )
        )
    assert result.output is not None
    assert result.output.value == {"orders": 128}
    (field,) = result.output.fields
    assert (field.status, field.sources[0].path) == ("supported", "notes.txt")


def test_an_asyncio_queue_is_a_sink_and_sees_the_events_in_order(
    files: ProjectFiles, connect_to: Connect
) -> None:
    async def run(client: ModelClient) -> tuple[RunResult, list[AgentEvent]]:
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        result = await arun_agent(
            client, create_project_tools(files), AgentConfig(), QUESTION, queue.put
        )
        return result, [queue.get_nowait() for _ in range(queue.qsize())]

    with FakeServer(_script()) as server:
        result, events = asyncio.run(run(connect_to(server)))
    types = [e.type for e in events]
    assert types[0] == "run_start"
    assert types[-1] == "run_end"
    assert types.index("tool_call") < types.index("tool_executing") < types.index("tool_result")
    assert types.count("turn_start") == 2
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.result == result
    assert result.answer == ANSWER


def test_a_sink_error_ends_the_run_as_a_sync_sinks_does(
    files: ProjectFiles, connect_to: Connect
) -> None:
    seen: list[str] = []

    async def full_disk(event: AgentEvent) -> None:
        seen.append(event.type)
        if event.type == "tool_result":
            raise MiniPiError("the disk is full", code="session_write_failed")

    with FakeServer(_script()) as server:
        result = asyncio.run(
            arun_agent(
                connect_to(server), create_project_tools(files), AgentConfig(), QUESTION, full_disk
            )
        )
        posts = server.posts
    assert (result.status, result.code) == ("failed", "session_write_failed")
    assert posts == 1
    assert seen[-1] == "run_end"  # it still saw the rest
    assert _unanswered(result) == set()


def test_errors_before_the_run_are_raised_by_the_await(
    files: ProjectFiles, connect_to: Connect
) -> None:
    config = AgentConfig(required_tools=("no_such_tool",))
    with FakeServer(_script()) as server, pytest.raises(MiniPiError, match="no_such_tool"):
        asyncio.run(arun_agent(connect_to(server), create_project_tools(files), config, QUESTION))
    assert _runs_alive() == []


# --- cancelling the awaiting task ----------------------------------------------------------


class SlowTool:
    """A tool whose handler takes ``seconds``; says when it first began and returned, and
    how many times it ran."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.began = threading.Event()
        self.returned = threading.Event()
        self.runs = 0

    def tool(self, *, mutating: bool = False) -> AgentTool:
        def tally(city: str) -> str:
            """Count the orders of a city (slowly)."""
            self.runs += 1
            self.began.set()
            time.sleep(self.seconds)
            self.returned.set()
            return f"{city}: 128 orders"

        return tool_from_function(tally, mutating=mutating)


async def _cancel_when(
    started: Callable[[], bool], run: Any, timeout: float = 10.0
) -> tuple[asyncio.Task[RunResult], float]:
    """Start ``run``, cancel it once ``started()``; the task and when it was cancelled."""
    task = asyncio.ensure_future(run)
    deadline = time.monotonic() + timeout
    while not started():
        assert time.monotonic() < deadline, "the run never got there"
        assert not task.done(), task.result()
        await asyncio.sleep(0.01)
    task.cancel()
    return task, time.monotonic()


def test_cancelling_mid_call_ends_the_run_cancelled_with_every_call_answered(
    connect_to: Connect,
) -> None:
    """Two changes, one after the other: cancelled while the first runs, it keeps its result,
    the second never runs, and both are answered."""
    slow, sink = SlowTool(0.6), Collected()
    calls = [
        Call("tally", {"city": "Hangzhou"}, "call_1"),
        Call("tally", {"city": "Ningbo"}, "call_2"),
    ]
    script = [Turn(calls=calls), Turn("never asked")]

    async def main() -> tuple[float, float]:
        with FakeServer(script) as server:
            tools = [slow.tool(mutating=True)]
            run = arun_agent(connect_to(server), tools, AgentConfig(), QUESTION, sink)
            task, cancelled_at = await _cancel_when(slow.began.is_set, run)
            with pytest.raises(asyncio.CancelledError):
                await task
            assert slow.returned.is_set()  # not before the run ended
            assert server.posts == 1  # nothing asked after the cancel
            return cancelled_at, time.monotonic()

    cancelled_at, raised_at = asyncio.run(main())
    result = sink.ended
    assert (result.status, result.code) == ("cancelled", "cancelled")
    assert result.answer == ""
    assert _unanswered(result) == set()
    assert _answer_of(result, "call_1") == "Hangzhou: 128 orders"
    assert _answer_of(result, "call_2").startswith("interrupted: outcome unknown")
    assert slow.runs == 1
    assert sink.events[-1] == RunEnd(result)
    assert raised_at - cancelled_at < 5.0
    assert _runs_alive() == []


@pytest.mark.parametrize("stream", [False, True])
def test_cancelling_mid_request_gives_the_request_up(stream: bool, connect_to: Connect) -> None:
    sink = Collected()
    config = ClientConfig(stream=stream, backoff_base=0.01, read_timeout=60.0)

    async def main(server: FakeServer) -> float:
        run = arun_agent(connect_to(server, config), [], AgentConfig(), QUESTION, sink)
        task, cancelled_at = await _cancel_when(lambda: server.posts == 1, run)
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - cancelled_at

    with FakeServer([Stall(30.0, headers=stream)]) as server:
        waited = asyncio.run(main(server))
        assert server.wait_idle(5.0) == 0  # the connection was let go: the stall saw it
    result = sink.ended
    assert (result.status, result.code) == ("cancelled", "cancelled")
    assert waited < 5.0  # not the 30 s stall
    assert _unanswered(result) == set()
    assert _runs_alive() == []


def test_a_timeout_cancels_the_run_and_raises_timeout_error(
    files: ProjectFiles, connect_to: Connect
) -> None:
    sink = Collected()
    script: list[Reply] = [Turn(calls=[Call("read_file", {"path": "notes.txt"})]), Stall(30.0)]

    async def main(server: FakeServer) -> None:
        run = arun_agent(
            connect_to(server), create_project_tools(files), AgentConfig(), QUESTION, sink
        )
        async with asyncio.timeout(1.0):
            await run

    started = time.monotonic()
    with FakeServer(script) as server, pytest.raises(TimeoutError):
        asyncio.run(main(server))
    assert time.monotonic() - started < 10.0
    result = sink.ended
    assert result.status == "cancelled"
    assert result.tool_calls == 1
    assert _unanswered(result) == set()
    assert _runs_alive() == []


def test_cancelling_twice_still_waits_for_the_run(connect_to: Connect) -> None:
    slow, sink = SlowTool(0.5), Collected()

    async def main(server: FakeServer) -> None:
        run = arun_agent(connect_to(server), [slow.tool()], AgentConfig(), QUESTION, sink)
        task, _ = await _cancel_when(slow.began.is_set, run)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert slow.returned.is_set()

    with FakeServer([Turn(calls=[Call("tally", {"city": "Ningbo"})])]) as server:
        asyncio.run(main(server))
    assert sink.ended.status == "cancelled"
    assert _unanswered(sink.ended) == set()
    assert _runs_alive() == []


# --- the example server --------------------------------------------------------------------

FILES = 8


def _orders(n: int) -> int:
    return 100 + 7 * n


def _question_of(n: int, slow: bool = False) -> str:
    return f"How many orders does r{n}.txt record?" + (" (slow)" if slow else "")


class Model:
    """The fake model's replies: read the file the question names, then answer with the figure
    its content gives (a slow question's second request stalls instead). With ``together``,
    the first requests of that many questions are answered only once all of them have
    arrived: proof that the runs overlap (else the wait gives up, and the runs fail)."""

    def __init__(self, together: int = 1) -> None:
        self.together = threading.Barrier(together, timeout=20.0)

    def __call__(self, body: JsonDict) -> Turn | Stall:
        messages = body["messages"]
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        name = re.search(r"r\d\.txt", question)
        assert name is not None, question
        read = [m["content"] for m in messages if m["role"] == "tool"]
        if not read:
            if "(slow)" not in question:
                self.together.wait()
            return Turn(calls=[Call("read_file", {"path": name.group()})])
        if "(slow)" in question:
            return Stall(30.0)
        count = re.search(r"orders: (\d+)", read[-1])
        assert count is not None, read
        return Turn(f"{name.group()} records {count.group(1)} orders.")


class Served:
    """``examples.serve_http.AskApp`` in a real uvicorn on a free port of 127.0.0.1."""

    def __init__(self, app: Any) -> None:
        uvicorn = pytest.importorskip("uvicorn")
        config = uvicorn.Config(app, lifespan="off", http="h11", ws="none", log_level="warning")
        self.server = uvicorn.Server(config)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10.0
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn stopped"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(10.0)
        self.sock.close()


def test_the_example_server_answers_concurrent_questions_and_cancels_a_gone_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    monkeypatch.syspath_prepend(str(ROOT))
    from examples.serve_http import AskApp

    for n in range(FILES):
        (tmp_path / f"r{n}.txt").write_text(f"orders: {_orders(n)}\n", encoding="utf-8")
    ends = Collected()

    async def ask_all(url: str) -> tuple[list[Any], float]:
        async with httpx.AsyncClient(base_url=url, timeout=30.0) as http:
            started = time.monotonic()
            asked = [http.post("/ask", json={"question": _question_of(n)}) for n in range(FILES)]
            replies = await asyncio.gather(*asked)
            return [(r.status_code, r.json()) for r in replies], time.monotonic() - started

    async def hang_up(url: str) -> float:
        async with httpx.AsyncClient(base_url=url, timeout=30.0) as http:
            asking = http.post("/ask", json={"question": _question_of(3, slow=True)})
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(asking, 1.5)  # the client gives up: its connection closes
        left = time.monotonic()
        while not any(e.result.status == "cancelled" for e in ends.events if isinstance(e, RunEnd)):
            assert time.monotonic() - left < 5.0, "the run of the gone client did not end"
            await asyncio.sleep(0.02)
        return time.monotonic() - left

    with FakeServer([Model(together=FILES)] * (2 * FILES + 2)) as fake:
        settings = Settings(base_url=fake.base_url, model="fake-model", max_seconds=60.0)
        model = open_model(settings, {})
        try:
            with Served(AskApp(model, settings, tmp_path, ends)) as served:
                replies, wall = asyncio.run(ask_all(served.url))
                ended_in = asyncio.run(hang_up(served.url))
        finally:
            model.close()
    print(
        f"{FILES} concurrent questions: {wall:.2f} s; the gone client's run ended {ended_in:.2f} s"
    )
    for n, (status, reply) in enumerate(replies):
        assert status == 200
        assert reply["status"] == "succeeded", reply
        assert reply["answer"] == f"r{n}.txt records {_orders(n)} orders."
        assert reply["verdict"]["kind"] == "backed", reply
        assert {s["path"] for s in reply["sources"]} == {f"r{n}.txt"}
    results = [e.result for e in ends.events if isinstance(e, RunEnd)]
    assert len(results) == FILES + 1
    gone = [r for r in results if r.status == "cancelled"]
    assert len(gone) == 1
    assert gone[0].code == "cancelled"
    assert gone[0].tool_calls == 1
    assert _unanswered(gone[0]) == set()
    assert _runs_alive() == []


def test_the_example_server_runs_from_the_command_line(tmp_path: Path) -> None:
    """``python -m examples.serve_http`` with the endpoint and project as arguments: one
    question answered, a wrong request refused, then Ctrl-C stops it."""
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    (tmp_path / "r5.txt").write_text(f"orders: {_orders(5)}\n", encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with FakeServer([Model()] * 2) as fake:
        args = ["--base-url", fake.base_url, "--model", "fake-model", "--port", str(port)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "examples.serve_http", "--project", str(tmp_path), *args],
            cwd=ROOT,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        try:
            url = f"http://127.0.0.1:{port}"
            ask = lambda: httpx.post(f"{url}/ask", json={"question": _question_of(5)})  # noqa: E731
            reply = _when_up(ask, proc, httpx.ConnectError)
            refused = httpx.get(f"{url}/ask")
        finally:
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=30)
    assert reply.status_code == 200, stderr
    assert reply.json()["answer"] == f"r5.txt records {_orders(5)} orders."
    assert refused.status_code == 404
    assert "ask: succeeded" in stderr
    assert proc.returncode == 0, stderr


def _when_up(
    request: Callable[[], Any],
    proc: subprocess.Popen[str],
    refused: type[Exception],
    seconds: float = 20.0,
) -> Any:
    """``request()`` once the server ``proc`` accepts connections."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return request()
        except refused:
            assert proc.poll() is None, "the server ended"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)


def test_the_sync_loop_does_not_load_asyncio_until_arun_agent_is_asked_for() -> None:
    """``minipi ask`` and ``run_agent`` do not pay for asyncio; ``arun_agent`` loads it."""
    code = (
        "import sys\n"
        "from minipi.agent import run_agent, AgentConfig\n"
        "import minipi.cli.app\n"
        "print('asyncio' in sys.modules)\n"
        "from minipi.agent import arun_agent\n"
        "print('asyncio' in sys.modules, arun_agent.__name__)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert shown.stdout.split() == ["False", "True", "arun_agent"]
