"""A batch that feels alive (issue 38 item 6), through the real ``minipi batch`` command:

- each task page of ``batch report`` shows its question (the page in its language), its
  status and its verdict with the reason, coloured (green backed, amber weak, red unbacked or
  failed), and so does the report's table;
- on a terminal the bar redraws every second while a task runs, and a line printed while it
  shows goes above it, never into it;
- the local engine answers one request at a time: one worker by default there, said in the
  start line (and in ``--help``), ``--workers`` still wins;
- the closing lines give the ``batch show`` and ``batch report`` commands, which run as
  given, in the batch's language;
- ``batch --help`` is grouped like ``ask --help``: "Batch" first, examples last.
"""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from batch_tasks.scripted import (
    DAILY_QUESTION,
    ENTRY,
    ByQuestion,
    RawReply,
    batch_cli,
    endpoint_args,
    read_results,
    serve,
    task_rows,
    write_tasks,
)
from support.browser import Browser, chromium_or_skip
from support.cli import EXAMPLES, clean_env, minipi, on_terminal
from support.engine import fake_extra
from support.fake import FakeServer, Turn

VAGUE_ANSWER = "日报已经读过了，内容都在文件里。"


class ByVerdict(ByQuestion):
    """``ByQuestion``, and ``[vague]`` questions answered after the reads with nothing that
    can be checked (a weak answer)."""

    def _reply(self, question: str, step: int) -> Turn | RawReply:
        if "[vague]" in question and step >= 2:
            return Turn(VAGUE_ANSWER)
        return super()._reply(question, step)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = serve(ByVerdict(latency=0.02))
    yield fake
    fake.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "sample_project"
    shutil.copytree(EXAMPLES / "sample_project", root)
    return root


# --- the task pages and the table -------------------------------------------------------

ENGLISH = "What are the date, orders and revenue of the daily report?"
QUESTIONS = {
    "t0": f"{DAILY_QUESTION} (#0)",  # backed
    "t1": "answer wrongly [wrong]",  # unbacked: 1234 is in no tool result
    "t2": f"{DAILY_QUESTION} [vague]",  # weak: nothing checkable
    "t3": f"{ENGLISH} refuse me [400]",  # failed/bad_request
    "t4": "这个项目里有什么文件？",  # failed/bad_project: no trace, the task file's question
}
SHOWN = {  # lang, status, its tone, verdict, its tone, reason
    "t0": ("zh", "succeeded", "green", "有依据", "green", ""),
    "t1": ("en", "succeeded/unbacked", "red", "unbacked", "red", "a claim is in no tool result"),
    "t2": ("zh", "succeeded/weak", "amber", "依据不足", "amber", "答案中没有可核对的内容"),
    "t3": ("en", "failed/bad_request", "red", None, None, ""),
    "t4": ("zh", "failed/bad_project", "red", None, None, ""),
}


def _standing(page: str) -> str:
    found = re.search(r'<h1>[^<]*</h1><p class="totals">(.*?)</p>', page)
    assert found is not None, page[:2000]
    return found.group(1)


def test_each_task_page_shows_its_question_status_and_verdict_in_its_language(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    rows = [{"id": k, "question": q, "project": str(project)} for k, q in QUESTIONS.items()]
    rows[4]["project"] = "no-such-dir"
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    done = batch_cli(str(tasks), "--out", str(out), *endpoint_args(server))
    assert done.returncode == 1, done.stderr
    verdicts = {r["id"]: (r["verdict"] or {}).get("kind") for r in read_results(out)}
    assert verdicts == {"t0": "backed", "t1": "unbacked", "t2": "weak", "t3": None, "t4": None}
    page = tmp_path / "report.html"
    made = minipi("batch", "report", str(out), "--html", str(page))
    assert made.returncode == 0, made.stderr
    for number, (key, question) in enumerate(QUESTIONS.items(), start=1):
        task = (tmp_path / "report.tasks" / f"{number:05d}.html").read_text(encoding="utf-8")
        lang, status, status_tone, verdict, verdict_tone, why = SHOWN[key]
        assert f'<html lang="{lang}">' in task, key
        assert f'<div class="box">{html.escape(question)}</div>' in task, key
        standing = _standing(task)
        assert "data-verdict=" not in task, key  # said once, above the transcript
        assert f'<b class="tone tone-{status_tone}">{status}</b>' in standing, standing
        if verdict is None:
            assert standing.count("<b ") == 1, standing  # only a succeeded run has a verdict
        else:
            assert f'<b class="tone tone-{verdict_tone}">{verdict}</b>' in standing, standing
            assert why in standing
    table = page.read_text(encoding="utf-8")
    weak = r'<td class="tone tone-amber" title="[^"]*" data-v="succeeded/weak">succeeded/weak</td>'
    assert re.search(weak, table), table
    assert '<td class="tone tone-amber" title="the answer states nothing' in table
    assert '<td class="tone tone-red" data-v="failed">failed</td>' in table
    assert '<td class="tone tone-green" data-v="backed">backed</td>' in table
    _colours_in_chromium(tmp_path, page)


def _colours_in_chromium(tmp_path: Path, page: Path) -> None:
    """The tones are drawn (the page's Content-Security-Policy lets its style through)."""
    chromium_or_skip()
    colour = "getComputedStyle(document.querySelector('{}')).backgroundColor"
    with Browser.start(tmp_path / "profile") as browser:
        browser.open(page)
        tones = [browser.value(colour.format(f"td.tone-{t}")) for t in ("green", "amber", "red")]
        assert len(set(tones)) == 3, tones
        assert "rgba(0, 0, 0, 0)" not in tones, tones
        browser.open(tmp_path / "report.tasks" / "00003.html")
        assert browser.value(colour.format("b.tone-amber")) == tones[1]
        browser.screenshot(tmp_path / "task.png")


# --- the bar on a terminal --------------------------------------------------------------


def _on_terminal(args: list[str]) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """``minipi batch ARGS`` with stderr a 120-column terminal: what it showed there."""
    return on_terminal([sys.executable, *ENTRY, *args])


def _screen(raw: str) -> list[str]:
    """The lines a terminal shows for ``raw``: a carriage return goes back to the line's
    start, what follows writes over it."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        cells: list[str] = []
        at = 0
        for char in line:
            if char == "\r":
                at = 0
                continue
            cells[at : at + 1] = [char]
            at += 1
        lines.append("".join(cells).rstrip())
    return lines


def test_the_bar_ticks_every_second_and_lines_go_above_it(tmp_path: Path, project: Path) -> None:
    """The second task takes about 4 s (three slow replies): the bar, at 1/2 all that time,
    shows its clock going on; the resume line, said while the bar shows, is a line of its
    own above it."""
    slow = serve(ByQuestion(latency=0.12))
    try:
        rows = task_rows(2, project)
        rows[1] = {**rows[1], "question": f"{rows[1]['question']} [slow]"}
        tasks = write_tasks(tmp_path / "tasks.jsonl", rows[:1])
        args = [str(tasks), "--out", str(tmp_path / "out"), *endpoint_args(slow)]
        assert batch_cli(*args).returncode == 0
        write_tasks(tasks, rows)
        raw, done = _on_terminal(args)
    finally:
        slow.stop()
    assert done.returncode == 0, raw
    assert "2 个任务：完成 2 个（本次 1 个）".encode() in done.stdout
    ticks = set(re.findall(r"1/2 \[(\d\d:\d\d)<", raw))
    assert {"00:01", "00:02"} <= ticks, raw
    assert "2/2" in raw
    assert "ok 1 failed 0" in raw
    said = [line for line in _screen(raw) if "minipi batch:" in line]
    assert any("resuming: 1 of 2 tasks already finished" in line for line in said), said
    assert all(line.startswith("minipi batch:") for line in said), said  # never in the bar


# --- the local engine: one worker by default --------------------------------------------

ENGINE = """# A stand-in for llama_cpp.server: each POST logged (its question) and answered after
# 0.2 s, first with a list_files call, then with an answer.
import argparse, json, os, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
for flag in ("--model", "--model_alias", "--host", "--port", "--n_ctx", "--n_threads",
             "--n_threads_batch", "--verbose"):
    parser.add_argument(flag)
args = parser.parse_args()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply({"object": "list", "data": [{"id": args.model_alias}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        messages = body.get("messages", [])
        question = next((m["content"] for m in messages if m.get("role") == "user"), "")
        with open(os.environ["FAKE_ENGINE_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(question) + "\\n")
        time.sleep(0.2)
        if any(m.get("role") == "tool" for m in messages):
            message, end = {"role": "assistant", "content": "It holds reports/."}, "stop"
        else:
            call = {"name": "list_files", "arguments": json.dumps({"path": "."})}
            message = {"role": "assistant", "content": None,
                       "tool_calls": [{"id": "call_1", "type": "function", "function": call}]}
            end = "tool_calls"
        self.reply({"id": "r", "object": "chat.completion", "created": 0,
                    "model": args.model_alias,
                    "choices": [{"index": 0, "message": message, "finish_reason": end}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    def reply(self, data):
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer((args.host, int(args.port)), Handler).serve_forever()
"""


def test_the_local_engine_runs_one_task_at_a_time_unless_workers_says_otherwise(
    tmp_path: Path, project: Path
) -> None:
    """Each task asks twice (a call, then the answer). Four workers on the one engine would
    interleave their requests; one worker asks task by task, and says why."""
    shadow = fake_extra(tmp_path / "fake-extra", ENGINE)
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    log = tmp_path / "engine.log"
    env = clean_env(
        PYTHONPATH=os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH")) if p),
        MINIPI_OFFLINE="1",
        FAKE_ENGINE_LOG=str(log),
    )
    rows = [
        {"id": f"t{n}", "question": f"{ENGLISH} (#{n})", "project": str(project)} for n in range(3)
    ]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    local = ["--model-file", str(gguf), "--no-guided", "--no-stream"]
    alone = batch_cli(str(tasks), "--out", str(tmp_path / "one"), *local, env=env, timeout=120)
    assert alone.returncode in (0, 4), alone.stderr
    assert "1 at a time (--workers 1, the default with the local engine)" in alone.stderr
    assert "one request at a time" in alone.stderr
    asked = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(asked) == 6
    assert all(asked[i] == asked[i + 1] for i in range(0, 6, 2)), asked  # task by task
    log.unlink()
    three = batch_cli(
        str(tasks), "--out", str(tmp_path / "three"), *local, "-w", "3", env=env, timeout=120
    )
    assert three.returncode in (0, 4), three.stderr
    assert "minipi batch: 3 at a time (--workers)" in three.stderr
    assert "model requests are serialised" in three.stderr
    assert len(read_results(tmp_path / "three")) == 3


# --- the closing lines ------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_closing_lines_give_the_show_and_report_commands_which_run(
    language: str, tmp_path: Path, server: FakeServer, project: Path
) -> None:
    rows = task_rows(2, project)
    if language == "en":
        rows = [{**row, "question": f"{ENGLISH} (#{n})"} for n, row in enumerate(rows)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "batch out"  # a space: the commands quote it
    done = batch_cli(str(tasks), "--out", str(out), *endpoint_args(server))
    assert done.returncode in (0, 4), done.stderr
    table, page = ("a table on the terminal: ", "a page, each task's transcript a click away: ")
    start = "minipi batch: 4 at a time (--workers)"
    if language == "zh":
        table, page, start = (
            "终端上的表格：",
            "网页报告（每个任务一页记录）：",
            "minipi batch：同时运行 4 个任务（--workers）",
        )
    assert start in done.stderr
    lines = done.stdout.splitlines()
    head = "2 tasks: 2 finished (2 now)" if language == "en" else "2 个任务：完成 2 个（本次 2 个）"
    assert lines[0] == head  # the figures too, in the batch's language
    commands = [
        line.split(label, 1)[1] for label in (table, page) for line in lines if label in line
    ]
    where, report = shlex.quote(str(out)), shlex.quote(str(out / "report.html"))
    assert commands == [
        f"minipi batch show {where}",
        f"minipi batch report {where} --html {report}",
    ]
    for command in commands:
        ran = minipi(*shlex.split(command)[1:])
        assert ran.returncode == 0, ran.stderr
    assert "t001" in minipi("batch", "show", str(out)).stdout
    assert (out / "report.tasks" / "00002.html").exists()


# --- the help ---------------------------------------------------------------------------


def test_batch_help_is_grouped_with_batch_first_and_examples_last() -> None:
    proc = minipi("batch", "--help")
    assert proc.returncode == 0, proc.stderr
    headings = [line for line in proc.stdout.splitlines() if line.endswith(":") and line[0] != " "]
    assert headings[0] == "Batch:"
    assert headings[-2:] == ["Other:", "Examples:"]
    assert {"Model:", "Project and tools:", "Budgets:", "Evidence:"} <= set(headings)
    batch = proc.stdout[proc.stdout.index("Batch:") : proc.stdout.index("Model:")]
    for flag in ("--out", "--workers", "--max-connections", "--task-timeout", "--force", "--ray"):
        assert proc.stdout.count(f" {flag} ") + proc.stdout.count(f" {flag},") >= 1
        assert flag in batch, flag
    workers = batch[batch.index("--workers") : batch.index("--max-connections")]
    assert "1 with the" in workers  # and why
    assert "one request at a" in workers
    examples = proc.stdout[proc.stdout.index("Examples:") :]
    assert "minipi batch tasks.jsonl --out out" in examples
    assert "minipi batch report out --html report.html" in examples


def _stdout_on_terminal(args: list[str], **env: str) -> str:
    """``minipi ARGS`` with stdout a terminal: what it showed there."""
    command = [sys.executable, "-m", "minipi", *args]
    return on_terminal(command, stream="stdout", env=clean_env(**env))[0]


def test_batch_show_colours_the_status_on_a_terminal_only(
    tmp_path: Path, server: FakeServer, project: Path
) -> None:
    rows = task_rows(2, project)
    rows[1] = {**rows[1], "question": "answer wrongly [wrong]"}
    out = tmp_path / "out"
    batch_cli(
        str(write_tasks(tmp_path / "t.jsonl", rows)), "--out", str(out), *endpoint_args(server)
    )
    shown = _stdout_on_terminal(["batch", "show", str(out)])
    assert "\x1b[32msucceeded" in shown  # green: backed
    assert "\x1b[31msucceeded/unbacked" in shown  # red: a figure in no read
    plain = _stdout_on_terminal(["batch", "show", str(out)], NO_COLOR="1")
    assert "\x1b[" not in plain
    assert "\x1b[" not in minipi("batch", "show", str(out)).stdout  # a pipe: no colour
