"""``minipi batch`` through the real command against the fake server, on real projects:
results, traces, summary, isolation, resume, configuration changes, Ctrl-C, SIGKILL, 429."""

from __future__ import annotations

import importlib.util
import json
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from batch_tasks.scripted import (
    DAILY_ANSWER,
    ENTRY,
    ByQuestion,
    batch_cli,
    endpoint_args,
    read_results,
    runs_started,
    serve,
    start_batch,
    task_rows,
    wait_for_lines,
    write_tasks,
)
from support.cli import EXAMPLES, clean_env, on_terminal
from support.engine import needs_engine
from support.fake import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = serve(ByQuestion(latency=0.02))
    yield fake
    fake.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "sample_project"
    shutil.copytree(EXAMPLES / "sample_project", root)
    return root


def _args(tasks: Path, out: Path, server: FakeServer, *extra: str) -> list[str]:
    return [str(tasks), "--out", str(out), *endpoint_args(server), *extra]


def test_every_task_is_answered_and_a_failing_one_fails_alone(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    rows: list[dict[str, object] | str] = [*task_rows(4, project)]
    rows[1] = {**task_rows(2, project)[1], "question": "refuse me [400]"}
    rows[2] = {**task_rows(3, project)[2], "question": "answer wrongly [wrong]"}
    rows.insert(3, "{oops")
    rows.append({"id": "gone", "question": "q", "project": "no-such-dir"})
    rows.append({"id": "free", "question": "plain question", "project": str(project)})
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    proc = batch_cli(*_args(tasks, out, server, "--workers", "3"))
    assert proc.returncode == 1, proc.stderr
    assert f"{tasks}:4: not JSON" in proc.stderr
    results = {r["id"]: r for r in read_results(out)}
    assert sorted(results) == ["free", "gone", "t000", "t001", "t002", "t003"]
    ok = results["t000"]
    assert (ok["status"], ok["code"], ok["answer"]) == ("succeeded", None, DAILY_ANSWER)
    assert (ok["turns"], ok["tool_calls"], ok["correct"]) == (3, 2, True)
    assert ok["evidence"] == {"supported": 3, "unsupported": 0, "tool_results": 2}
    assert ok["tokens"]["input"] > 0
    assert ok["seconds"] > 0
    assert (results["t001"]["status"], results["t001"]["code"]) == ("failed", "bad_request")
    assert results["t001"]["correct"] is False
    assert results["t002"]["correct"] is False
    assert results["t002"]["evidence"]["unsupported"] == 1
    assert ok["verdict"] == {"kind": "backed", "reason": None}
    assert results["t002"]["verdict"] == {"kind": "unbacked", "reason": "unsupported"}
    assert results["t001"]["verdict"] is None  # only a succeeded run has one
    assert (results["gone"]["code"], results["gone"]["trace"]) == ("bad_project", None)
    assert "does not exist" in results["gone"]["error"]
    assert "correct" not in results["free"]  # nothing expected, nothing judged
    trace = json.loads((out / "traces" / "t000.json").read_text(encoding="utf-8"))
    assert trace["result"]["status"] == "succeeded"
    assert trace["project"] == str(project)
    assert [e["type"] for e in trace["events"]].count("turn_start") == 3
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["tasks"], summary["finished"], summary["malformed_lines"]) == (6, 6, 1)
    assert summary["succeeded"] == 4  # t000, t002 (a wrong answer is still one), t003, free
    assert summary["correct_rate"] == 0.5  # t000, t003 of the four that expect figures
    assert summary["traced_rate"] == round(3 / 4, 4)  # t002's 1234 was read nowhere
    assert summary["statuses"]["failed/bad_project"] == 1
    assert summary["seconds_per_task"]["p95"] >= summary["seconds_per_task"]["p50"] > 0
    assert summary["verdicts"] == {"backed": 3, "unbacked": 1}
    assert (summary["backed"], summary["backed_rate"]) == (3, 0.5)
    rates = "succeeded 4/6 (66.7%)  backed 3/6 (50.0%)  correct 2/4 (50.0%)  traced 3/4 (75.0%)"
    assert rates in proc.stdout


def test_a_second_run_sends_nothing_for_finished_tasks(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(3, project))
    out = tmp_path / "out"
    assert batch_cli(*_args(tasks, out, server)).returncode == 0
    posts = server.posts
    again = batch_cli(*_args(tasks, out, server, "--workers", "8"))  # workers do not matter
    assert again.returncode == 0, again.stderr
    assert server.posts == posts
    assert "3 of 3 tasks already finished" in again.stderr
    write_tasks(tmp_path / "tasks.jsonl", task_rows(5, project))  # two tasks more
    more = batch_cli(*_args(tasks, out, server))
    assert more.returncode == 0, more.stderr
    assert [r["id"] for r in read_results(out)][3:] in (["t003", "t004"], ["t004", "t003"])
    assert server.posts == posts + 2 * 3


def test_a_changed_configuration_is_refused_unless_forced(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(2, project))
    out = tmp_path / "out"
    first = batch_cli(*_args(tasks, out, server, "--api-key", "sk-SECRET-1234"))
    assert first.returncode == 0, first.stderr
    config = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert config["config"]["model"] == "fake-model"
    for path in out.rglob("*"):
        if path.is_file():
            assert "SECRET-1234" not in path.read_text(encoding="utf-8"), path
    changed = batch_cli(*_args(tasks, out, server, "--max-turns", "4"))
    assert changed.returncode == 2
    assert "max_turns: 8 -> 4" in changed.stderr
    assert "--force" in changed.stderr
    rows = task_rows(2, project)
    rows[0]["question"] = "another question"
    write_tasks(tasks, rows)
    edited = batch_cli(*_args(tasks, out, server))
    assert edited.returncode == 2
    assert "tasks changed since they ran: t000" in edited.stderr
    forced = batch_cli(*_args(tasks, out, server, "--max-turns", "4", "--force"))
    assert forced.returncode == 0, forced.stderr
    stored = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    assert stored["config"]["max_turns"] == 4
    assert stored["history"][0]["config"]["max_turns"] == 8


def test_usage_errors_exit_2_before_anything_is_sent(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(1, project))
    ask = batch_cli(*_args(tasks, tmp_path / "out", server, "--approve", "ask"))
    assert ask.returncode == 2
    assert "a batch has none" in ask.stderr
    missing = batch_cli(*_args(tmp_path / "none.jsonl", tmp_path / "out", server))
    assert missing.returncode == 2
    assert "cannot read the task file" in missing.stderr
    empty = write_tasks(tmp_path / "empty.jsonl", ["# nothing"])
    assert batch_cli(*_args(empty, tmp_path / "out", server)).returncode == 2
    assert server.posts == 0


def test_ctrl_c_cancels_running_tasks_and_the_directory_resumes(
    tmp_path: Path, project: Path
) -> None:
    script = ByQuestion(latency=0.3)
    slow = serve(script)
    try:
        tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(12, project))
        out = tmp_path / "out"
        proc = start_batch(*_args(tasks, out, slow, "--workers", "3"))
        wait_for_lines(out / "results.jsonl", 2)
        # the tasks run in step (three requests each): a Ctrl-C while the first three were
        # all in their last request cancelled none; the 10th request is a later task's first
        deadline = time.monotonic() + 30
        while len(script.log) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert "running ones are cancelled" in stderr
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert summary["cancelled"] >= 1
        assert summary["pending"] == 12 - summary["finished"] > 0
        assert all(r["status"] == "succeeded" for r in read_results(out))
        done = {r["id"] for r in read_results(out)}
        again = batch_cli(*_args(tasks, out, slow, "--workers", "6"))
        assert again.returncode == 0, again.stderr
    finally:
        slow.stop()
    ids = [r["id"] for r in read_results(out)]
    assert sorted(ids) == [f"t{n:03d}" for n in range(12)]
    assert done <= set(ids[: len(done)])


@pytest.mark.timeout(120)
def test_sigkill_at_any_moment_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path, project: Path
) -> None:
    script = ByQuestion(latency=0.03)
    server = serve(script)
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(16, project))
    out = tmp_path / "out"
    try:
        finished_at_kill: list[tuple[set[str], dict[str, int]]] = []
        for delay, lines in ((0.0, 0), (0.0, 3), (0.05, 7), (0.0, 11)):
            proc = start_batch(*_args(tasks, out, server, "--workers", "3"))
            wait_for_lines(out / "results.jsonl", lines)
            time.sleep(delay)
            proc.kill()
            proc.communicate(timeout=10)
            done = (
                {r["id"] for r in read_results(out)} if (out / "results.jsonl").exists() else set()
            )
            finished_at_kill.append((done, dict(runs_started(server))))
        last = batch_cli(*_args(tasks, out, server, "--workers", "3"))
        assert last.returncode == 0, last.stderr
    finally:
        server.stop()
    ids = [r["id"] for r in read_results(out)]
    assert sorted(ids) == [f"t{n:03d}" for n in range(16)]  # each exactly once
    started = runs_started(server)
    rows = {r["id"]: r for r in task_rows(16, project)}
    for done, counts in finished_at_kill:
        for task_id in done:  # a task recorded before a kill never started again
            question = str(rows[task_id]["question"])
            assert started[question] == counts[question], task_id
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["finished"], summary["succeeded"]) == (16, 16)


def test_a_rate_limit_slows_every_worker_and_the_tasks_still_succeed(
    tmp_path: Path, project: Path
) -> None:
    # 3 answers 429: the model layer's 1 + 2 retries, so the request ends rate_limited
    limited = ByQuestion(latency=0.03, retry_after="0", limit_attempts=3)
    server = serve(limited)
    try:
        rows = task_rows(40, project)  # the others' work outlasts the backoff if not gated
        rows[0]["question"] = f"{rows[0]['question']} [429]"
        tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
        proc = batch_cli(*_args(tasks, tmp_path / "out", server, "--workers", "3"))
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert [status for _, status in limited.log].count(429) == 3
    last_429 = max(t for t, status in limited.log if status == 429)
    after = sorted(t for t, _ in limited.log if t > last_429)
    assert after  # the limited task was asked again, and the others went on
    # Requests that passed the gate before the 429 came back still arrive; then nobody
    # asks during the shared 1 s backoff (without it, the longest pause is milliseconds).
    gaps = [b - a for a, b in zip([last_429, *after], after, strict=False)]
    assert max(gaps) >= 0.9


@needs_engine
@pytest.mark.timeout(620)  # the engine's start and two tiny-model replies; minutes on 2 busy cores
def test_one_local_engine_serves_every_worker(tmp_path: Path, project: Path) -> None:
    rows = task_rows(2, project, max_turns=1)  # one request each: the engine is what is tested
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    env = clean_env(MINIPI_OFFLINE="1")
    proc = batch_cli(str(tasks), "--out", str(out), "--workers", "2", env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr  # one request cannot finish a task
    assert proc.stderr.count("starting the local engine") == 1
    assert "one request at a time" in proc.stderr
    results = read_results(out)
    assert sorted(r["id"] for r in results) == ["t000", "t001"]
    assert all(r["turns"] >= 1 for r in results)
    trace = json.loads((out / "traces" / "t000.json").read_text(encoding="utf-8"))
    assert trace["model_file"]["sha256"]
    config = json.loads((out / "batch.json").read_text(encoding="utf-8"))["config"]
    assert config["base_url"] is None


@pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="tqdm is not installed")
def test_a_terminal_shows_a_progress_bar(tmp_path: Path, server: FakeServer, project: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(3, project))
    text, proc = on_terminal([sys.executable, *ENTRY, *_args(tasks, tmp_path / "out", server)])
    assert proc.returncode == 0
    assert "3 个任务：完成 3 个".encode() in proc.stdout  # the batch's questions are Chinese
    assert "3/3" in text
    assert "ok 3 failed 0" in text
    assert "minipi batch: 3/3 done" not in text  # the bar, not the plain lines


def test_changes_run_only_with_approve_all(tmp_path: Path, server: FakeServer) -> None:
    roots = {}
    for name in ("denied", "allowed"):
        roots[name] = tmp_path / name
        shutil.copytree(EXAMPLES / "shelter", roots[name])
    rows = [
        {"id": name, "question": "adopt the cat [move]", "project": str(root)}
        for name, root in roots.items()
    ]
    for name in ("denied", "allowed"):
        tasks = write_tasks(tmp_path / f"{name}.jsonl", [r for r in rows if r["id"] == name])
        flags = ["--approve", "all"] if name == "allowed" else []
        batch_cli(*_args(tasks, tmp_path / f"out-{name}", server, *flags))
    denied = read_results(tmp_path / "out-denied")[0]
    allowed = read_results(tmp_path / "out-allowed")[0]
    # read-only (the default): the move was not offered, the one asked for anyway refused
    # (read_only) and nothing changed; the answer then says it moved the cat, which no tool
    # did: not a success (issue 21), never a blind one
    assert (denied["status"], denied["code"]) == ("failed", "change_not_made")
    assert (roots["denied"] / "inbox" / "猫咪小花.txt").exists()
    assert not (roots["denied"] / "archive" / "猫咪小花.txt").exists()
    assert allowed["status"] == "succeeded", allowed
    assert (roots["allowed"] / "archive" / "猫咪小花.txt").exists()
    assert not (roots["allowed"] / "inbox" / "猫咪小花.txt").exists()


def test_a_task_past_its_timeout_ends_budget_exhausted(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    rows = task_rows(2, project)
    rows[0]["question"] = f"{rows[0]['question']} [slow]"  # 0.2 s a request
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    proc = batch_cli(*_args(tasks, tmp_path / "out", server, "--task-timeout", "0.3"))
    assert proc.returncode == 1
    results = {r["id"]: r for r in read_results(tmp_path / "out")}
    assert (results["t000"]["status"], results["t000"]["code"]) == (
        "budget_exhausted",
        "max_seconds",
    )
    # the first 0.2 s request ends before the 0.3 s timeout on an idle machine (2 turns); a
    # loaded one may spend the 0.3 s in the first
    assert results["t000"]["turns"] in (1, 2)
    assert results["t001"]["status"] == "succeeded"
