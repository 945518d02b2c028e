"""The scripted model and the subprocess helpers of the batch tests (see ``__init__``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from support.cli import EXAMPLES, clean_env
from support.fake import Call, FakeServer, RawReply, Step, Turn
from support.faults import error_status

DAILY_QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
DAILY_ANSWER = "日报日期 2026-09-06，订单数 128，营收 9600 元。"
DAILY_EXPECT = ["2026-09-06", "128", "9600"]
SAMPLE = EXAMPLES / "sample_project"

ENTRY = ["-m", "minipi", "batch"]
"""``minipi batch`` until the CLI registers the command in ``minipi.cli.main``."""


def _question(body: Mapping[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def _tool_results(body: Mapping[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "tool")


class ByQuestion:
    """A reply function for ``FakeServer`` that any number of runs can share (chat wire)."""

    def __init__(
        self, latency: float = 0.0, retry_after: str = "1", limit_attempts: int = 1
    ) -> None:
        self.latency = latency
        self.retry_after = retry_after
        self.limit_attempts = limit_attempts
        """``[429]`` questions: how many first requests are answered 429."""
        self.lock = threading.Lock()
        self.limited: Counter[str] = Counter()
        self.log: list[tuple[float, int]] = []
        """(``time.monotonic()`` at arrival, status answered) of every model request."""

    def __call__(self, body: dict[str, Any]) -> Turn | Step:
        arrived = time.monotonic()
        question = _question(body)
        step = _tool_results(body)
        reply = self._reply(question, step)
        with self.lock:
            self.log.append((arrived, reply.status if isinstance(reply, RawReply) else 200))
        time.sleep(self.latency * (10 if "[slow]" in question else 1))
        return reply

    def _reply(self, question: str, step: int) -> Turn | RawReply:
        if "[400]" in question:
            return error_status(400, "FakeServer refuses this task")
        if "[429]" in question and step == 0:
            with self.lock:
                self.limited[question] += 1
                limited = self.limited[question] <= self.limit_attempts
            if limited:
                return error_status(429, "slow down", retry_after=self.retry_after)
        if "[move]" in question:
            return self.adopt(step)
        return self.daily(step, wrong="[wrong]" in question)

    @staticmethod
    def adopt(step: int) -> Turn:
        """Seed 003: move the cat's file into archive/, then say so."""
        if step == 0:
            move = {"source": "inbox/猫咪小花.txt", "target": "archive/猫咪小花.txt"}
            return Turn(calls=[Call("move_file", move)])
        return Turn("猫咪小花 的档案已移到 archive。")

    @staticmethod
    def daily(step: int, *, wrong: bool = False) -> Turn:
        if step == 0:
            return Turn(calls=[Call("list_files", {"path": "reports"})])
        if step == 1:
            return Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"})])
        return Turn("营收 1234 元。" if wrong else DAILY_ANSWER)


def serve(script: ByQuestion, requests: int = 5000) -> FakeServer:
    """A started server answering up to ``requests`` requests with ``script``."""
    return FakeServer([script] * requests).start()


def task_rows(count: int, project: Path = SAMPLE, **extra: Any) -> list[dict[str, Any]]:
    """``count`` daily-report tasks ``t000``... with their expected figures."""
    return [
        {
            "id": f"t{n:03d}",
            "question": f"{DAILY_QUESTION} (#{n})",
            "project": str(project),
            "expect": DAILY_EXPECT,
            **extra,
        }
        for n in range(count)
    ]


def write_tasks(path: Path, rows: Iterable[dict[str, Any] | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_results(out: Path) -> list[dict[str, Any]]:
    """The records of ``out/results.jsonl`` (none when it does not exist yet)."""
    path = out / "results.jsonl"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def endpoint_args(server: FakeServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "fake-model"]


def batch_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``minipi batch ARGS`` to its end; a traceback fails the test."""
    proc = subprocess.run(
        [sys.executable, *ENTRY, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env if env is not None else clean_env(),
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def start_batch(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``minipi batch ARGS`` started, output to pipes (the caller ends it)."""
    return subprocess.Popen(
        [sys.executable, *ENTRY, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env if env is not None else clean_env(),
    )


def runs_started(server: FakeServer) -> Counter[str]:
    """Per question, the requests that began a run (no tool result yet)."""
    started: Counter[str] = Counter()
    for request in server.requests:
        body = request.body
        if request.method == "POST" and body is not None and _tool_results(body) == 0:
            started[_question(body)] += 1
    return started


def wait_for_lines(path: Path, count: int, timeout: float = 30.0) -> int:
    """Lines in ``path`` once it has ``count`` (or ``timeout`` passed)."""
    deadline = time.monotonic() + timeout
    lines = 0
    while time.monotonic() < deadline:
        lines = path.read_bytes().count(b"\n") if path.exists() else 0
        if lines >= count:
            break
        time.sleep(0.01)
    return lines


__all__ = [
    "DAILY_ANSWER",
    "DAILY_EXPECT",
    "DAILY_QUESTION",
    "ENTRY",
    "SAMPLE",
    "ByQuestion",
    "RawReply",
    "batch_cli",
    "endpoint_args",
    "read_results",
    "runs_started",
    "serve",
    "start_batch",
    "task_rows",
    "wait_for_lines",
    "write_tasks",
]
