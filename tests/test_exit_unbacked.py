"""Exit codes a script can trust (issue 38, item 2): an answer minipi marks ``unbacked`` (a
claim no tool result holds) does not exit 0 under the default evidence mode, and the
summary's lead word says what it is; ``--json``'s ``run_end`` still says ``succeeded``. A
``weak`` answer stays exit 0, ``--evidence off`` checks nothing (exit 0) and ``require`` still
refuses (exit 1). A batch exits 4 when every task succeeded and one is unbacked.

Through the real ``minipi`` with the fake model over HTTP, on the sample project."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batch_tasks.scripted import (
    ByQuestion,
    batch_cli,
    endpoint_args,
    read_results,
    serve,
    task_rows,
    write_tasks,
)
from support.cli import EXAMPLES, QUESTION, clean_env, json_lines, minipi
from support.fake import Call, FakeServer, Turn

SAMPLE = EXAMPLES / "sample_project"
REPORT = "reports/daily-2026-09-06.json"
RIGHT = "这份日报的日期是2026-09-06，订单数为128，营收为9600元。"
WRONG = "订单数为 140。"  # the report says 128
ENGLISH = "How many orders does the daily report in reports/ give?"
UNBACKED = 4


def ask(server: FakeServer, question: str, *flags: str) -> Any:
    base = ("--project", str(SAMPLE), "--base-url", server.base_url, "--model", "fake-model")
    return minipi("ask", question, *base, *flags, env=clean_env())


def read_then(answer: str) -> list[Turn]:
    return [Turn(calls=[Call("read_file", {"path": REPORT})]), Turn(answer)]


def summary_of(stderr: str) -> str:
    counted = ("次模型请求", "model request")
    return [line for line in stderr.splitlines() if any(c in line for c in counted)][-1]


def test_an_unbacked_answer_exits_4_and_its_summary_leads_with_unbacked(
    fake_server: FakeServer,
) -> None:
    fake_server.add(*read_then(WRONG))
    proc = ask(fake_server, QUESTION)
    assert proc.returncode == UNBACKED, proc.stderr
    assert proc.stdout.strip() == WRONG  # still shown: the user judges it
    assert summary_of(proc.stderr).startswith("[无依据：有内容未在任何工具结果中找到] 2 次模型请求")

    fake_server.add(*read_then("The report gives 140 orders."))
    proc = ask(fake_server, ENGLISH)
    assert proc.returncode == UNBACKED, proc.stderr
    assert summary_of(proc.stderr).startswith("[unbacked: a claim is in no tool result] 2 model")


def test_json_says_succeeded_with_its_verdict_and_the_process_exits_4(
    fake_server: FakeServer,
) -> None:
    fake_server.add(*read_then(WRONG))
    proc = ask(fake_server, QUESTION, "--json")
    assert proc.returncode == UNBACKED, proc.stderr
    end = json_lines(proc.stdout)[-1]
    assert (end["type"], end["status"], end["code"]) == ("run_end", "succeeded", None)
    assert end["verdict"] == {"kind": "unbacked", "reason": "unsupported"}


def test_quiet_exits_4_too(fake_server: FakeServer) -> None:
    fake_server.add(*read_then(WRONG))
    proc = ask(fake_server, QUESTION, "-q")
    assert proc.returncode == UNBACKED, proc.stderr
    assert proc.stdout.strip() == WRONG
    assert proc.stderr.splitlines()[-1] == "minipi: 无依据：有内容未在任何工具结果中找到"


def test_quiet_says_the_verdict_in_one_line(fake_server: FakeServer) -> None:
    """-q keeps one line of the log: the verdict, with its reason unless backed."""
    fake_server.add(*read_then(RIGHT))
    proc = ask(fake_server, QUESTION, "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1] == "minipi: 成功"
    fake_server.add(Turn("项目里有一份日报。"))
    proc = ask(fake_server, QUESTION, "-q")
    assert proc.stderr.splitlines()[-1] == "minipi: 成功·依据不足：本次对话没有读到任何内容"


def test_backed_and_weak_answers_exit_0(fake_server: FakeServer) -> None:
    fake_server.add(*read_then(RIGHT))
    proc = ask(fake_server, QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc.stderr).startswith("[成功] 2 次模型请求")
    fake_server.add(Turn("项目里有一份日报。"))  # nothing read, nothing stated: weak
    proc = ask(fake_server, QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc.stderr).startswith("[成功·依据不足：本次对话没有读到任何内容]")


def test_evidence_off_checks_nothing_and_require_still_refuses(fake_server: FakeServer) -> None:
    fake_server.add(*read_then(WRONG))
    proc = ask(fake_server, QUESTION, "--evidence", "off")
    assert proc.returncode == 0, proc.stderr  # no check: weak, not_checked
    assert summary_of(proc.stderr).startswith("[成功·依据不足：未检查（--evidence off）]")
    fake_server.add(*read_then(WRONG), Turn(WRONG))
    proc = ask(fake_server, QUESTION, "--evidence", "require")
    assert proc.returncode == 1, proc.stderr
    assert "\nunsupported_figures：" in proc.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, root)
    return root


@pytest.fixture
def by_question() -> Iterator[FakeServer]:
    fake = serve(ByQuestion())
    yield fake
    fake.stop()


def _batch(tmp_path: Path, server: FakeServer, rows: list[dict[str, Any]]) -> Any:
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    args = [str(tasks), "--out", str(out), *endpoint_args(server), "--workers", "1"]
    return batch_cli(*args), out


def test_a_batch_whose_tasks_all_succeeded_exits_4_when_one_is_unbacked(
    tmp_path: Path, by_question: FakeServer, project: Path
) -> None:
    rows = task_rows(2, project)
    rows[1] = {**rows[1], "question": rows[1]["question"] + " [wrong]"}
    proc, out = _batch(tmp_path, by_question, rows)
    assert proc.returncode == UNBACKED, proc.stderr
    verdicts = {r["id"]: (r["status"], r["verdict"]["kind"]) for r in read_results(out)}
    assert verdicts == {"t000": ("succeeded", "backed"), "t001": ("succeeded", "unbacked")}


def test_a_batch_with_a_failed_task_exits_1_whatever_the_verdicts(
    tmp_path: Path, by_question: FakeServer, project: Path
) -> None:
    rows = task_rows(3, project)
    rows[1] = {**rows[1], "question": rows[1]["question"] + " [wrong]"}
    rows[2] = {**rows[2], "question": "refuse me [400]"}
    proc, _ = _batch(tmp_path, by_question, rows)
    assert proc.returncode == 1, proc.stderr


def test_a_batch_of_backed_answers_exits_0(
    tmp_path: Path, by_question: FakeServer, project: Path
) -> None:
    proc, _ = _batch(tmp_path, by_question, task_rows(2, project))
    assert proc.returncode == 0, proc.stderr
