#!/usr/bin/env python3
"""Local engine prefill probe for ``perf.py``: does the engine reuse its prompt cache per turn?

    perf_engine.py --gguf MODEL.gguf [--turns 8] [--reps 3] [--modes native,guided] [--log F]
    perf_engine.py --answer [--gguf MODEL.gguf] [--guided | --no-guided]

``--answer``: time to an answer, the README's question on ``examples/sample_project`` through
the CLI's own assembly (``minipi.assemble``: model resolution, engine start, the default mode
per model size, the project tools, the opening calls of the question, ``run_agent``). One JSON
object: ``start_s`` (open_model, engine start included), ``total_s`` (start to answer),
``mode``, ``correct`` (the three expected values in the answer), ``shown`` (in the answer or
the facts minipi cites), per turn ``seconds``, ``prompt``, ``cached``, ``output``.

Starts ``python -m llama_cpp.server`` on a free 127.0.0.1 port (stderr to ``--log``), then
per mode runs ``--reps`` conversations of ``--turns`` requests through minipi's real chat wire
client (``minipi.ai.connect``) with the CLI's instructions and project tools and
``tool_choice`` forced to ``search_files`` (so every reply is a call); after each reply this
driver appends a fixed ~100-token tool result. Modes: ``native`` sends the request as is
(native ``tools``; the engine answers ``tool_calls``); ``guided`` wraps the client in
``minipi.guided.GuidedClient``, as ``minipi ask`` does for its embedded engine (tool
declarations in the system prompt, a JSON grammar per reply). Per request the engine's log
says how many prompt tokens came
from its cache (``Llama.generate: N prefix-match hit, remaining M prompt tokens to eval``)
and how long decoding took (``llama_perf_context_print: eval time``). After each
conversation the last request is sent again with a cold cache (another prompt in between),
the reference for what a turn costs without the cache.

Prints per-turn lines on stderr and one JSON object on stdout: ``{"log": F, "modes": {MODE:
{"reps": [{"turns": [TURN...], "cold": TURN}], "patched_null_content": n} or "why not"}}``,
where
TURN = ``{"turn", "prompt", "cached", "evaluated", "request_s", "decode_s", "ttft_s"}``;
``ttft_s`` = request seconds - decode seconds (the engine's prefill plus HTTP and templating:
the client is non-streaming, so this is the time to first token as the engine served it).

llama-cpp-python's server rejects the ``"content": null`` of an assistant tool-call message
(its own reply) with HTTP 500; replayed verbatim, turn 2 fails. This driver replays such a
message with ``"content": ""`` and counts how often (``patched_null_content``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from minipi.ai import Endpoint, connect
from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ModelClient,
    ModelRequest,
    ToolSpec,
)
from minipi.assemble import DEFAULT_INSTRUCTIONS
from minipi.errors import MiniPiError
from minipi.files import ProjectFiles, create_project_tools

MODEL = "smollm2"
TOOL = "search_files"  # its required parameter is free text: a call is always possible
HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
FULL = "Llama.generate: full prompt already cached"
DECODE = re.compile(r"^llama_perf_context_print:\s+eval time =\s+([\d.]+) ms", re.MULTILINE)
RESULT = (
    "reports/daily-2026-09-0{k}.json (page {k}): date 2026-09-0{k}; orders 128; revenue_yuan "
    "9600; refunds 3; top products: green tea (42 orders), oolong (31), jasmine (20); "
    "channels: web 71, app 45, phone 12; notes: the courier was late on two deliveries, "
    "one customer asked for an invoice, stock of oolong is low and should be reordered "
    "before Friday; next report due tomorrow at 09:00."
)


@dataclass(frozen=True)
class Turn:
    turn: int
    prompt: int
    cached: int
    evaluated: int
    request_s: float
    decode_s: float

    @property
    def ttft_s(self) -> float:
        return self.request_s - self.decode_s


class Engine:
    """A ``llama_cpp.server`` process we started, and the log it writes."""

    def __init__(self, gguf: str, log: Path, n_ctx: int) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.log = log
        self.base_url = f"http://127.0.0.1:{port}/v1"
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf,
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
        ]
        with log.open("wb") as err:
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"perf_engine: llama_cpp.server exited; see {self.log}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise SystemExit(f"perf_engine: llama_cpp.server not ready in {timeout:g} s")

    def log_size(self) -> int:
        return self.log.stat().st_size

    def log_since(self, offset: int) -> str:
        with self.log.open("rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Driver:
    """Sends requests through a minipi client and reads the engine's log for each."""

    def __init__(self, engine: Engine, client: ModelClient, specs: tuple[ToolSpec, ...]) -> None:
        self.engine = engine
        self.client = client
        self.specs = specs
        self.patched = 0

    def request(self, history: list[Item], turn: int) -> tuple[Turn, tuple[Item, ...]]:
        request = ModelRequest(
            history,
            DEFAULT_INSTRUCTIONS,
            self.specs,
            TOOL,
            options={"max_output_tokens": 48, "temperature": 0},
        )
        offset = self.engine.log_size()
        start = time.perf_counter()
        response = self.client.create(request)
        seconds = time.perf_counter() - start
        text = self.engine.log_since(offset)
        if not DECODE.search(text):  # the engine writes its timings just before answering
            time.sleep(0.2)
            text = self.engine.log_since(offset)
        return _turn(turn, response.usage.input_tokens, text, seconds), response.items

    def replayable(self, items: tuple[Item, ...]) -> list[Item]:
        """``items`` to append to the history (null assistant content patched, see above)."""
        out: list[Item] = []
        for item in items:
            raw = item.raw if isinstance(item, FunctionCall) else None
            if isinstance(item, FunctionCall) and raw and "content" in raw and not raw["content"]:
                self.patched += 1
                patched = {**raw, "content": ""}
                item = FunctionCall(item.call_id, item.name, item.arguments, patched, item.wire)
            out.append(item)
        return out


def _turn(turn: int, prompt: int, log: str, seconds: float) -> Turn:
    decode = sum(float(ms) for ms in DECODE.findall(log)) / 1000
    hit = HIT.search(log)
    if hit:
        cached, evaluated = int(hit.group(1)), int(hit.group(2))
    elif FULL in log:
        cached, evaluated = prompt, 0
    else:
        cached, evaluated = 0, prompt
    return Turn(turn, cached + evaluated, cached, evaluated, seconds, decode)


def converse(driver: Driver, turns: int) -> tuple[list[Turn], Turn]:
    """One conversation of ``turns`` requests, then its last request again, cold."""
    history: list[Item] = [Message("user", "Read the daily reports one by one and summarise.")]
    done: list[Turn] = []
    for k in range(1, turns + 1):
        sent = list(history)
        turn, items = driver.request(history, k)
        done.append(turn)
        _log_turn(turn)
        history.extend(driver.replayable(items))
        calls = [i for i in items if isinstance(i, FunctionCall)]
        for call in calls:
            history.append(FunctionCallOutput(call.call_id, RESULT.format(k=k)))
        if not calls:
            history.append(Message("user", RESULT.format(k=k)))
    driver.request([Message("user", "Say hi.")], 0)  # evict: the cache now holds another prompt
    cold, _ = driver.request(sent, turns)
    _log_turn(cold, "cold")
    return done, cold


def _log_turn(turn: Turn, label: str = "") -> None:
    share = turn.cached / turn.prompt if turn.prompt else 0.0
    print(
        f"turn {turn.turn:>2} {label:>4}: prompt {turn.prompt:>5} cached {turn.cached:>5} "
        f"evaluated {turn.evaluated:>5} ({share:6.1%}) request {turn.request_s:6.3f} s "
        f"ttft {turn.ttft_s:6.3f} s",
        file=sys.stderr,
        flush=True,
    )


def _as_json(turn: Turn) -> dict[str, float]:
    return {**asdict(turn), "ttft_s": turn.ttft_s}


def run_mode(
    engine: Engine, chat: ModelClient, mode: str, turns: int, reps: int
) -> dict[str, Any] | str:
    """``reps`` conversations in ``mode``; the figures, or why the mode could not run."""
    client = chat
    if mode == "guided":
        try:
            from minipi.guided import GuidedClient
        except ImportError as error:
            return f"minipi.guided unavailable: {error}"
        client = GuidedClient(chat)
    with ProjectFiles(tempfile.mkdtemp(prefix="perf-engine-project-")) as files:
        specs = tuple(tool.spec() for tool in create_project_tools(files))
    driver = Driver(engine, client, specs)
    driver.request([Message("user", "Say hi.")], 0)  # warm-up: page the model in
    done = []
    for rep in range(reps):
        print(f"{mode} rep {rep}", file=sys.stderr, flush=True)
        try:
            conversation, cold = converse(driver, turns)
        except MiniPiError as error:
            return f"failed: {error}"
        done.append({"turns": [_as_json(t) for t in conversation], "cold": _as_json(cold)})
    return {"reps": done, "patched_null_content": driver.patched}


README_QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
EXPECTED = ("2026-09-06", "128", "9600")


def time_to_answer(gguf: str | None, guided: bool | None) -> dict[str, Any]:
    """The README's question answered as ``minipi ask`` answers it, timed (``--answer``)."""
    from minipi import run_agent
    from minipi.agent import AgentEvent, ModelResponded
    from minipi.assemble import Settings, agent_config, open_model, run_tools

    project = Path(__file__).resolve().parent.parent / "examples" / "sample_project"
    started = time.monotonic()
    settings = Settings(model_file=gguf, guided=guided)
    model = open_model(settings, dict(os.environ, MINIPI_OFFLINE="1"), report=lambda m: None)
    start_s = time.monotonic() - started
    turns: list[dict[str, Any]] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ModelResponded):
            usage = event.response.usage
            turns.append(
                {
                    "seconds": round(event.seconds, 2),
                    "prompt": usage.input_tokens,
                    "cached": usage.cached_tokens,
                    "output": usage.output_tokens,
                }
            )

    try:
        with ProjectFiles(project) as files:
            tools = run_tools(settings, files, lambda request: False)
            config = agent_config(settings, model, tools, question=README_QUESTION, files=files)
            result = run_agent(model.client, tools, config, README_QUESTION, on_event=on_event)
    finally:
        model.close()
    return {
        "model": model.client.model,
        "mode": "guided" if model.guided else "unguided",
        "start_s": round(start_s, 2),
        "total_s": round(time.monotonic() - started, 2),
        "status": result.status,
        "code": result.code,
        "error": (result.error or "")[:300],
        "correct": all(value in result.answer for value in EXPECTED),
        "shown": all(value in " ".join((result.answer, *result.facts)) for value in EXPECTED),
        "turns": turns,
        "answer": result.answer[:300],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf")
    parser.add_argument("--answer", action="store_true", help="time the README's question")
    parser.add_argument("--guided", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--modes", default="native,guided")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--log", help="engine stderr (default: a temporary file)")
    args = parser.parse_args()
    if args.answer:
        print(json.dumps(time_to_answer(args.gguf, args.guided), ensure_ascii=False))
        return 0
    if args.gguf is None:
        parser.error("--gguf is required without --answer")
    log = Path(args.log or os.path.join(tempfile.mkdtemp(prefix="perf-engine-"), "engine.log"))
    engine = Engine(args.gguf, log, args.n_ctx)
    chat = connect(Endpoint(engine.base_url, MODEL))
    try:
        modes = {m: run_mode(engine, chat, m, args.turns, args.reps) for m in args.modes.split(",")}
    finally:
        chat.close()
        engine.stop()
    print(json.dumps({"log": str(log), "modes": modes}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
