"""Issue 23: ``minipi batch`` killed at the worst moments, through the real command. A task
that made a change and was killed before its record resumes like a session (the change is
never done twice); malformed task lines and result lines are reported, never a traceback."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from batch_tasks.scripted import (
    ByQuestion,
    batch_cli,
    endpoint_args,
    read_results,
    serve,
    start_batch,
    task_rows,
    write_tasks,
)
from support.cli import EXAMPLES, copy_example
from support.fake import FakeServer, Turn

CAT = "inbox/猫咪小花.txt"


class HoldAfterTheMove(ByQuestion):
    """The shelter's move; the request after it waits until ``release`` (the test kills the
    batch meanwhile), the first time only."""

    def __init__(self) -> None:
        super().__init__()
        self.held = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Turn:
        step = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        if step == 1 and not self.held.is_set():
            self.held.set()
            self.release.wait(30)
        return ByQuestion.adopt(step)


def test_a_task_killed_after_its_change_resumes_and_the_change_is_not_asked_again(
    tmp_path: Path,
) -> None:
    shelter = copy_example("shelter", tmp_path)
    script = HoldAfterTheMove()
    server = serve(script)
    rows = [{"id": "adopt", "question": "adopt the cat [move]", "project": str(shelter)}]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    args = [str(tasks), "--out", str(out), *endpoint_args(server), "--approve", "all"]
    try:
        proc = start_batch(*args)
        assert script.held.wait(30)  # the move is done, its record not yet written
        proc.kill()
        proc.communicate(timeout=10)
        assert (shelter / "archive" / "猫咪小花.txt").exists()
        assert not (out / "results.jsonl").read_text(encoding="utf-8").strip()
        script.release.set()
        again = batch_cli(*args)
    finally:
        script.release.set()
        server.stop()
    assert again.returncode == 0, again.stderr
    record = read_results(out)[0]
    assert (record["status"], record["code"]) == ("succeeded", None), record
    resumed = server.requests[-1].body or {}
    tools = [m["content"] for m in resumed["messages"] if m.get("role") == "tool"]
    assert len(tools) == 1
    assert tools[0].startswith("moved ")  # the journal's result, not a redo
    moves = [r for r in server.requests if r.body and _asks_move(r.body)]
    assert len(moves) == 1  # the move was asked for once, in the killed process
    assert (shelter / "archive" / "猫咪小花.txt").exists()


def _asks_move(body: dict[str, Any]) -> bool:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "tool") == 0


def test_malformed_task_lines_of_every_kind_are_named_and_the_rest_run(tmp_path: Path) -> None:
    server = serve(ByQuestion())
    good = task_rows(1, EXAMPLES / "sample_project")[0]
    lines = [
        json.dumps(good).encode(),
        b"[" * 1000 + b"]" * 1000,
        b'{"id": "deep", "question": "q", "project": ".", "expect": '
        + b"[" * 2000
        + b"]" * 2000
        + b"}",
        b'{"id": "escaped", "question": "\\ud800 q", "project": "."}',
        b'{"id": "bytes", "question": "\xff q", "project": "."}',
        json.dumps({"id": "猫" * 84, "question": "q", "project": "."}).encode(),
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    try:
        for _ in range(2):  # and again on resume
            proc = batch_cli(str(tasks), "--out", str(out), *endpoint_args(server))
            assert proc.returncode == 1
            for number in range(2, 7):
                assert f"{tasks}:{number}: " in proc.stderr, proc.stderr
            assert "跳过了 5 行格式错误的内容" in proc.stdout
            assert "cannot name a trace file" in proc.stderr
            assert [r["id"] for r in read_results(out)] == ["t000"]
    finally:
        server.stop()


def test_a_results_line_nested_deep_is_refused_with_its_line_number(tmp_path: Path) -> None:
    server = serve(ByQuestion())
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(1, EXAMPLES / "sample_project"))
    out = tmp_path / "out"
    try:
        assert batch_cli(str(tasks), "--out", str(out), *endpoint_args(server)).returncode == 0
        with open(out / "results.jsonl", "ab") as results:
            results.write(b"[" * 2000 + b"]" * 2000 + b"\n")
        proc = batch_cli(str(tasks), "--out", str(out), *endpoint_args(server))
    finally:
        server.stop()
    assert proc.returncode == 2
    assert "results.jsonl:2 is not a result (nested too deep)" in proc.stderr


def test_a_project_that_holds_the_batch_directory_or_secrets_is_refused(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    project = copy_example("sample_project", tmp_path)
    secrets = tmp_path / "home" / ".aws"
    secrets.mkdir(parents=True)
    (secrets / "credentials").write_text("aws_secret_access_key = AKIAHIDDEN\n")
    rows = [
        {"id": "holds", "question": "q", "project": str(project)},
        {"id": "inside", "question": "q", "project": str(project / "out")},
        {"id": "aws", "question": "q", "project": str(secrets)},
    ]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    (project / "out").mkdir()
    proc = batch_cli(str(tasks), "--out", str(project / "out"), *endpoint_args(fake_server))
    assert proc.returncode == 1
    results = {r["id"]: r for r in read_results(project / "out")}
    assert {r["code"] for r in results.values()} == {"bad_project"}
    assert "overlap" in results["holds"]["error"]
    assert "overlap" in results["inside"]["error"]
    assert "directory of secrets" in results["aws"]["error"]
    assert fake_server.requests == []  # nothing was asked about any of them
