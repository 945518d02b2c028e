"""Issue 37 item 5: what a batch records, and what it reads back, through the real command.

A move that completed before a ``kill -9`` is recorded as made once the batch resumes (the
journal's approval and the file system are the evidence); every ``results.jsonl`` line is
checked when read, and a bad one is named by its line number, never a traceback; the same
task-file error on many lines is counted, not printed for each; the report's links work for
any page name.
"""

from __future__ import annotations

import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

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
from minipi.session import OUTCOME_UNKNOWN
from support.browser import Browser, chromium_or_skip
from support.cli import EXAMPLES, clean_env, copy_example, minipi
from support.fake import FakeServer

CAT = "猫咪小花.txt"

KILL_AFTER = """\
import os
import signal

_link, _unlink = os.link, os.unlink


def _then_die(step, name):
    if os.environ.get("KILL_AFTER") == step + ":" + os.fsdecode(name):
        os.kill(os.getpid(), signal.SIGKILL)


def _link_then_die(source, target, *args, **kwargs):
    _link(source, target, *args, **kwargs)
    _then_die("link", target)


def _unlink_then_die(path, *args, **kwargs):
    _unlink(path, *args, **kwargs)
    _then_die("unlink", path)


os.link, os.unlink = _link_then_die, _unlink_then_die
"""
"""A ``sitecustomize`` for the killed process only: it dies by SIGKILL right after a step of
the move (``link``: the new name made; ``unlink``: the old one removed, the move whole),
before the tool's result reaches the journal. Nothing is patched in the resumed run."""


def _kill_mid_move(tmp_path: Path, step: str) -> tuple[Path, list[str]]:
    """The shelter, and the batch's arguments, after a batch killed right after ``step``."""
    shelter = copy_example("shelter", tmp_path)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(KILL_AFTER, encoding="utf-8")
    rows = [{"id": "adopt", "question": "adopt the cat [move]", "project": str(shelter)}]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    args = [str(tasks), "--out", str(tmp_path / "out"), "--approve", "all"]
    server = serve(ByQuestion())
    try:
        env = clean_env(PYTHONPATH=str(hook), KILL_AFTER=f"{step}:{CAT}")
        killed = batch_cli(*args, *endpoint_args(server), env=env)
    finally:
        server.stop()
    assert killed.returncode == -9, killed.stderr
    assert (shelter / "archive" / CAT).exists()
    assert read_results(tmp_path / "out") == []
    return shelter, args


def _tool_outputs(server: FakeServer) -> list[str]:
    body = server.requests[-1].body or {}
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def test_a_move_whole_before_a_kill_is_recorded_made_after_the_resume(tmp_path: Path) -> None:
    shelter, args = _kill_mid_move(tmp_path, "unlink")
    assert not (shelter / "inbox" / CAT).exists()
    server = serve(ByQuestion())
    try:
        again = batch_cli(*args, *endpoint_args(server))
    finally:
        server.stop()
    assert again.returncode == 0, again.stdout + again.stderr
    (record,) = read_results(tmp_path / "out")
    assert (record["status"], record["code"]) == ("succeeded", None), record
    assert record["changes"] == [f"moved inbox/{CAT} -> archive/{CAT}"]
    (output,) = _tool_outputs(server)
    assert output.startswith(f"moved inbox/{CAT} -> archive/{CAT}\n")  # the journal's word
    assert len(server.requests) == 1  # only the answer was asked for: the move never redone
    shown = minipi("batch", "show", str(tmp_path / "out"))
    assert shown.returncode == 0, shown.stderr
    assert "adopt  succeeded" in shown.stdout


@pytest.mark.parametrize("case", ["half_done", "another_file_there"])
def test_a_move_the_disk_does_not_prove_stays_outcome_unknown(case: str, tmp_path: Path) -> None:
    shelter, args = _kill_mid_move(tmp_path, "link" if case == "half_done" else "unlink")
    if case == "another_file_there":  # the destination name now holds another file
        (shelter / "archive" / CAT).unlink()
        (shelter / "archive" / CAT).write_text("另一只猫\n", encoding="utf-8")
    server = serve(ByQuestion())
    try:
        again = batch_cli(*args, *endpoint_args(server))
    finally:
        server.stop()
    (record,) = read_results(tmp_path / "out")
    assert "changes" not in record, record
    assert (record["status"], record["code"]) == ("failed", "change_not_made"), record
    assert again.returncode == 1
    assert _tool_outputs(server) == [OUTCOME_UNKNOWN]


# --- results.jsonl read back -----------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000

BAD_LINES = {
    "seconds": '{"id": "bad", "status": "succeeded", "seconds": [1]}',
    "turns": '{"id": "bad", "status": "failed", "turns": "many"}',
    "verdict": '{"id": "bad", "status": "succeeded", "verdict": {"kind": 3}}',
    "answer": '{"id": "bad", "status": "succeeded", "answer": ' + DEEP + "}",
    "nested": DEEP,
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished batch of two tasks (one directory, copied by each test)."""
    base = tmp_path_factory.mktemp("finished")
    server = serve(ByQuestion())
    tasks = write_tasks(base / "tasks.jsonl", task_rows(2, EXAMPLES / "sample_project"))
    try:
        done = batch_cli(str(tasks), "--out", str(base / "out"), *endpoint_args(server))
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    return base


@pytest.mark.parametrize("field", sorted(BAD_LINES))
def test_a_bad_results_line_is_named_by_show_report_and_resume(
    field: str, finished: Path, tmp_path: Path
) -> None:
    base = tmp_path / "batch"
    shutil.copytree(finished, base)
    out = base / "out"
    results = out / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines()
    results.write_text("\n".join([lines[0], BAD_LINES[field], lines[1]]) + "\n", encoding="utf-8")
    named = f"{results}:2"

    shown = minipi("batch", "show", str(out))
    assert "Traceback" not in shown.stderr, shown.stderr
    assert shown.returncode == 0, shown.stderr
    assert named in shown.stderr
    assert [ln.split()[0] for ln in shown.stdout.splitlines() if ln.startswith("t00")] == [
        "t000",
        "t001",
    ]

    page = tmp_path / "report.html"
    reported = minipi("batch", "report", str(out), "--html", str(page))
    assert "Traceback" not in reported.stderr, reported.stderr
    assert reported.returncode == 0, reported.stderr
    assert named in reported.stderr
    assert "(2 tasks;" in reported.stderr

    server = serve(ByQuestion())
    try:
        resumed = batch_cli(str(base / "tasks.jsonl"), "--out", str(out), *endpoint_args(server))
    finally:
        server.stop()
    assert resumed.returncode == 2, resumed.stderr
    said = [ln for ln in resumed.stderr.splitlines() if named in ln]
    assert len(said) == 1, resumed.stderr
    assert server.requests == []  # nothing ran on a directory it cannot read


@pytest.mark.parametrize(
    "summary", [DEEP, '{"tasks": "many"}', '{"tasks": 2, "finished": [], "succeeded": {}}']
)
def test_a_bad_summary_is_said_and_the_table_still_shown(
    summary: str, finished: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished / "out", out)
    (out / "summary.json").write_text(summary, encoding="utf-8")
    shown = minipi("batch", "show", str(out))
    assert "Traceback" not in shown.stderr, shown.stderr
    assert shown.returncode == 0, shown.stderr
    assert "summary.json" in shown.stderr
    assert "t001" in shown.stdout
    page = tmp_path / "report.html"
    reported = minipi("batch", "report", str(out), "--html", str(page))
    assert "Traceback" not in reported.stderr, reported.stderr
    assert reported.returncode == 0, reported.stderr


@pytest.mark.parametrize("config", [DEEP, '{"minipi_batch": 1, "config": [1]}'])
def test_a_bad_batch_json_is_said_in_one_line_on_resume(
    config: str, finished: Path, tmp_path: Path
) -> None:
    base = tmp_path / "batch"
    shutil.copytree(finished, base)
    (base / "out" / "batch.json").write_text(config, encoding="utf-8")
    server = serve(ByQuestion())
    try:
        args = [str(base / "tasks.jsonl"), "--out", str(base / "out"), *endpoint_args(server)]
        resumed = batch_cli(*args)
    finally:
        server.stop()
    assert resumed.returncode == 2, resumed.stderr
    assert f"{base / 'out' / 'batch.json'} is " in resumed.stderr
    assert server.requests == []


def test_a_bad_trace_still_gives_the_task_its_page(finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished / "out", out)
    (out / "traces" / "t000.json").write_text(DEEP, encoding="utf-8")
    (out / "traces" / "t001.json").write_text('{"events": [{"type": 5}, 7]}', encoding="utf-8")
    page = tmp_path / "report.html"
    reported = minipi("batch", "report", str(out), "--html", str(page))
    assert "Traceback" not in reported.stderr, reported.stderr
    assert reported.returncode == 0, reported.stderr
    assert (tmp_path / "report.tasks" / "00002.html").exists()


# --- the task file -----------------------------------------------------------------------


def test_the_same_error_on_many_task_lines_is_counted_not_repeated(tmp_path: Path) -> None:
    good = task_rows(1, EXAMPLES / "sample_project")[0]
    misspelled = [
        json.dumps({"id": f"m{n}", "question": "q", "projct": "."}) for n in range(100_000)
    ]
    tasks = write_tasks(tmp_path / "tasks.jsonl", [good, *misspelled, '{"id": 1'])
    server = serve(ByQuestion())
    try:
        proc = batch_cli(str(tasks), "--out", str(tmp_path / "out"), *endpoint_args(server))
    finally:
        server.stop()
    assert proc.returncode == 1, proc.stderr
    said = proc.stderr.splitlines()
    assert len(said) < 20, said[:30]
    for number in (2, 3, 4):  # the first few, with their line numbers
        assert any(f"{tasks}:{number}: unknown field 'projct'" in line for line in said), said
    assert f"{tasks}:5: " not in proc.stderr
    assert "... and 99997 more lines with the same error" in proc.stderr
    assert f"{tasks}:100002: not JSON" in proc.stderr  # another error is still said
    assert "跳过了 100001 行格式错误的内容" in proc.stdout
    assert [r["id"] for r in read_results(tmp_path / "out")] == ["t000"]


# --- the report's links ------------------------------------------------------------------


class _Links(HTMLParser):
    """Every ``href`` and ``data-href`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "data-href") and value is not None:
                self.links.append(value)


def _links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.links


def _target(page: Path, href: str) -> Path | None:
    """The file ``href`` on ``page`` opens (None: a link within the page)."""
    parts = urlsplit(href)
    assert parts.scheme == "", f"{href!r} reads as a URL of scheme {parts.scheme!r}"
    assert not parts.netloc, href
    if not parts.path:
        return None
    return page.parent / unquote(parts.path)


@pytest.mark.parametrize("name", ["a:b.html", "r #1?%25 ü.html", "c:%3F#x.html"])
def test_every_link_of_the_report_opens_its_page_whatever_its_name(
    name: str, finished: Path, tmp_path: Path
) -> None:
    page = tmp_path / "pages" / name
    page.parent.mkdir()
    proc = minipi("batch", "report", str(finished / "out"), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    hrefs = [h for h in _links(page) if not h.startswith("#")]
    assert len(hrefs) == 4  # each task's link and its row's
    task_pages = set()
    for href in hrefs:
        target = _target(page, href)
        assert target is not None, href
        assert target.is_file(), (href, target)
        task_pages.add(target.resolve())
    assert len(task_pages) == 2
    for task_page in task_pages:
        back = [h for h in _links(task_page) if not h.startswith("#")]
        assert back, task_page
        for href in back:
            target = _target(task_page, href)
            assert target is not None, href
            assert target.resolve() == page.resolve(), href


def test_a_click_on_a_row_opens_its_task_when_the_page_name_has_a_colon(
    finished: Path, tmp_path: Path
) -> None:
    chromium_or_skip()
    page = tmp_path / "a:b #1.html"
    proc = minipi("batch", "report", str(finished / "out"), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    with Browser.start(tmp_path / "profile") as browser:
        browser.open(page)
        browser.events.clear()
        browser.click("tbody tr:nth-child(2) td.answer")
        browser.wait_for("Page.loadEventFired")
        opened = unquote(urlsplit(browser.value("location.href")).path)
        assert opened == os.fspath(tmp_path / "a:b #1.tasks" / "00002.html")
