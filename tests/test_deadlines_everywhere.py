"""Issue 37, item 2: ``--max-seconds`` covers every wait of ``minipi ask``, through the real
command: a guided request (the deadline reaches the HTTP layer through ``GuidedClient``), an
MCP server's start and tool listing, and the local engine's start. Each ends the run with the
end code of a deadline (``budget_exhausted``, exit 3), says so, prints no traceback and leaves
nothing running; a reply that arrives after the deadline is never used.

The waits are made long (20-30 s) and the deadlines short (2-3 s), and each test allows the
deadline plus 10 s: a slow, loaded machine passes, a wait that is not bounded does not."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from minipi.errors import MiniPiError
from minipi.local.engine import Engine
from minipi.local.models import ModelChoice
from support.cli import clean_env, minipi
from support.engine import fake_extra
from support.fake import Exchange, FakeServer, Turn
from support.render import compact_json

MARGIN = 10.0
"""Seconds a run may take past its deadline here (a loaded machine starts Python slowly)."""

LATE = "the late answer"


@dataclass
class Late:
    """The proper (plain JSON) reply to ``turn``, after ``seconds``; nothing if the client
    hangs up first. ``waited``: how long the client waited before it hung up, if it did."""

    turn: Turn
    seconds: float
    waited: float | None = None

    def play(self, exchange: Exchange) -> None:
        arrived = time.monotonic()
        if exchange.gone(self.seconds):
            self.waited = time.monotonic() - arrived
            exchange.close()
            return
        exchange.send(200, compact_json(exchange.render(self.turn)))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("The shelter has 3 cats.\n", encoding="utf-8")
    return root


def ask(
    project: Path, *flags: str, data: Path, timeout: float = 90
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``minipi ask`` in a subprocess; its result and how long it took."""
    env = clean_env(MINIPI_DATA_DIR=str(data))
    started = time.monotonic()
    proc = minipi(
        "ask", "How many cats?", "--project", str(project), *flags, env=env, timeout=timeout
    )
    return proc, time.monotonic() - started


def endpoint(server: FakeServer) -> tuple[str, ...]:
    return ("--base-url", server.base_url, "--model", "fake-model")


def assert_deadline_end(proc: subprocess.CompletedProcess[str]) -> None:
    """The run ended as a deadline ends it: exit 3, said in words, no traceback, no answer."""
    assert proc.returncode == 3, proc.stderr
    assert "max-seconds" in proc.stderr or "max_seconds" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert LATE not in proc.stdout
    assert proc.stdout.strip() == ""


# --- guided requests --------------------------------------------------------------------------


def test_a_guided_request_is_cut_at_the_deadline(project: Path, tmp_path: Path) -> None:
    """The guided path used to build its own request without the run's deadline: with
    ``--max-seconds 2`` minipi waited for an 11 s reply and exited 0 with it."""
    reply = Turn(text=json.dumps({"answer": LATE}))
    with FakeServer([Late(reply, 30.0)]) as server:
        proc, took = ask(
            project, *endpoint(server), "--guided", "--max-seconds", "2", data=tmp_path / "d"
        )
        assert server.posts == 1
    assert_deadline_end(proc)
    assert took < 2 + MARGIN


# --- MCP server start and tool discovery ------------------------------------------------------

SLOW_MCP = """# An MCP server that writes its pid, sleeps, then answers like scripted.py.
import os, sys, time, runpy
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(float(sys.argv[2]))
sys.argv = [sys.argv[3]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def slow_server(tmp_path: Path, seconds: float) -> tuple[str, Path]:
    """The ``--mcp`` command of a server that answers ``initialize`` after ``seconds``, and
    the file its pid is written to."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")
    from mcp_servers.helpers import HERE

    script = tmp_path / "slow_mcp.py"
    script.write_text(SLOW_MCP, encoding="utf-8")
    pid_file = tmp_path / "slow.pid"
    command = [sys.executable, str(script), str(pid_file), str(seconds), str(HERE / "scripted.py")]
    return shlex.join(command), pid_file


def test_an_mcp_server_slow_to_start_is_bounded_by_the_deadline(
    project: Path, tmp_path: Path
) -> None:
    """A server whose start takes 20 s used to hold ``--max-seconds 3`` for all of it (the
    start was bounded by ``--mcp-connect-timeout`` only, and the run's clock started after)."""
    command, pid_file = slow_server(tmp_path, 20.0)
    with FakeServer([Turn(LATE)]) as server:
        proc, took = ask(
            project, *endpoint(server), "--mcp", command, "--max-seconds", "3", data=tmp_path / "d"
        )
        assert server.posts == 0  # the model is never asked once the time is up
    assert_deadline_end(proc)
    assert took < 3 + MARGIN
    assert "MCP server" in proc.stderr
    pid = int(pid_file.read_text(encoding="ascii"))
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), "the MCP server outlived minipi"


def test_the_run_gets_what_the_mcp_start_left_of_the_deadline(
    project: Path, tmp_path: Path
) -> None:
    """A server that takes 3 s of a 6 s budget to start leaves the model request at most 3 s
    (the run's clock used to start after the servers', giving it all 6 s)."""
    command, _ = slow_server(tmp_path, 3.0)
    late = Late(Turn(LATE), 30.0)
    with FakeServer([late]) as server:
        proc, took = ask(
            project, *endpoint(server), "--mcp", command, "--max-seconds", "6", data=tmp_path / "d"
        )
    assert_deadline_end(proc)
    assert took < 6 + MARGIN
    assert late.waited is not None, proc.stderr  # the request was sent, and given up
    assert late.waited < 3 + 1  # 6 s less the 3 s (at least) the start took, and a margin


# --- the local engine's start -----------------------------------------------------------------

NEVER_READY = """# A stand-in for llama_cpp.server that never listens (a model that loads for ever).
import os, sys, time
open(os.environ["FAKE_ENGINE_PID"], "w").write(str(os.getpid()))
time.sleep(300)
"""


@pytest.fixture
def never_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelChoice]:
    """A folder ahead on the path (here and in children) where ``llama_cpp.server`` is
    ``NEVER_READY`` and the other modules of the ``local`` extra are empty; a GGUF to serve.
    The stand-in writes its pid to ``$FAKE_ENGINE_PID``."""
    shadow = fake_extra(tmp_path / "fake-extra", NEVER_READY)
    monkeypatch.syspath_prepend(str(shadow))
    paths = [str(shadow), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    monkeypatch.setenv("FAKE_ENGINE_PID", str(tmp_path / "engine.pid"))
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    yield ModelChoice(gguf, "fake-model", "--model-file")
    pid_file = tmp_path / "engine.pid"
    if pid_file.exists():  # never leave the stand-in behind, whatever the test did
        pid = int(pid_file.read_text(encoding="ascii"))
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def engine_pid(tmp_path: Path) -> int:
    deadline = time.monotonic() + 10
    pid_file = tmp_path / "engine.pid"
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(pid_file.read_text(encoding="ascii"))


def test_the_engine_start_gives_up_at_the_deadline(
    never_ready: ModelChoice, tmp_path: Path
) -> None:
    """``Engine.start`` waited ``startup_timeout`` (120 s) whatever the run's deadline."""
    started = time.monotonic()
    with pytest.raises(MiniPiError) as caught:
        Engine.start(never_ready, deadline=started + 2)
    assert time.monotonic() - started < 2 + MARGIN
    assert caught.value.code == "max_seconds"
    assert "--max-seconds" in str(caught.value)
    assert not alive(engine_pid(tmp_path)), "the engine outlived its failed start"


def test_minipi_ask_does_not_wait_for_an_engine_past_the_deadline(
    never_ready: ModelChoice, project: Path, tmp_path: Path
) -> None:
    proc, took = ask(
        project,
        "--model-file",
        str(never_ready.path),
        "--max-seconds",
        "2",
        data=tmp_path / "d",
        timeout=2 + MARGIN + 5,
    )
    assert_deadline_end(proc)
    assert took < 2 + MARGIN
    assert not alive(engine_pid(tmp_path))
