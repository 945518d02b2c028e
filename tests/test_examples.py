"""The seed's five stages (``python -m examples.stepNN``) against the fake server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.cli import clean_env
from support.fake import Call, FakeServer, Turn

ROOT = Path(__file__).resolve().parent.parent


def stage(server: FakeServer, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(QWEN_BASE_URL=server.base_url, QWEN_MODEL="fake-model")
    return subprocess.run(
        [sys.executable, "-m", f"examples.{module}", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def daily(server: FakeServer) -> None:
    server.add(
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"})]),
        Turn(text="2026-09-06，128 笔，9600 元"),
    )


def test_step01_sends_the_question_without_tools(fake_server: FakeServer) -> None:
    fake_server.add(Turn(text="请提供报告文件的路径"))
    proc = stage(fake_server, "step01_model_call")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "请提供报告文件的路径"
    body = fake_server.requests[0].body or {}
    assert "tools" not in body
    assert "日报" in body["messages"][-1]["content"]


def test_step02_shows_the_request_without_running_it(fake_server: FakeServer) -> None:
    fake_server.add(Turn(calls=[Call("list_files", {"path": "reports"})]))
    proc = stage(fake_server, "step02_tool_request")
    assert proc.returncode == 0, proc.stderr
    assert "list_files" in proc.stdout
    assert "还没有执行" in proc.stdout
    assert len(fake_server.requests) == 1


def test_step03_stops_at_the_second_request(fake_server: FakeServer) -> None:
    daily(fake_server)
    proc = stage(fake_server, "step03_one_round")
    assert proc.returncode == 1
    assert "任务尚未完成" in proc.stderr
    assert "reports/daily-2026-09-06.json" in proc.stdout
    assert len(fake_server.requests) == 2


def test_step04_loop_answers(fake_server: FakeServer) -> None:
    daily(fake_server)
    proc = stage(fake_server, "step04_agent_loop")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("2026-09-06，128 笔，9600 元")
    assert "[第 2 轮调用] read_file" in proc.stdout


def test_step04_max_turns_two_fails(fake_server: FakeServer) -> None:
    daily(fake_server)
    proc = stage(fake_server, "step04_agent_loop", "--max-turns", "2")
    assert proc.returncode == 1
    assert "budget_exhausted" in proc.stderr
    assert proc.stdout.count("[工具成功]") == 2


def test_step05_requires_list_files_first(fake_server: FakeServer) -> None:
    daily(fake_server)
    proc = stage(fake_server, "step05_required_tool")
    assert proc.returncode == 0, proc.stderr
    first = fake_server.requests[0].body or {}
    assert first["tool_choice"] == {"type": "function", "function": {"name": "list_files"}}
