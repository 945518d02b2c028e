"""``minipi batch show`` and ``minipi batch report`` on a real batch directory (fake model):
the table in id order fitted to the width; the page's totals, its sortable table (a click on a
heading in headless Chromium), and each row opening its task's transcript."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from batch_tasks.scripted import ByQuestion, batch_cli, endpoint_args, serve, task_rows, write_tasks
from support.browser import Browser, chromium_or_skip
from support.cli import EXAMPLES, clean_env, minipi
from support.fake import FakeServer


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A finished batch of five tasks: one refused by the model, one answered wrongly."""
    server: FakeServer = serve(ByQuestion())
    project = tmp_path / "sample_project"
    shutil.copytree(EXAMPLES / "sample_project", project)
    rows = task_rows(5, project)
    rows[1] = {**rows[1], "question": "refuse me [400]"}
    rows[2] = {**rows[2], "question": "answer wrongly [wrong]"}
    tasks = write_tasks(tmp_path / "tasks.jsonl", list(reversed(rows)))
    done = batch_cli(str(tasks), "--out", str(tmp_path / "out"), *endpoint_args(server))
    server.stop()
    assert done.returncode == 1, done.stderr
    return tmp_path / "out"


def test_show_prints_every_task_in_id_order_within_the_width(out: Path) -> None:
    proc = minipi("batch", "show", str(out), env=clean_env(COLUMNS="80"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    table = lines[lines.index(next(ln for ln in lines if ln.startswith("id "))) :]
    assert [row.split()[0] for row in table[1:]] == ["t000", "t001", "t002", "t003", "t004"]
    assert table[2].split()[1:3] == ["failed", "bad_request"]
    # a succeeded run whose answer no tool result backs says so in its status
    assert any(row.split()[1] == "succeeded/unbacked" for row in table[1:])
    assert all(len(row) <= 80 for row in table)
    assert "traced 3/4 (75.0%)" in proc.stdout


def test_show_says_what_to_give_for_a_directory_without_results(tmp_path: Path) -> None:
    proc = minipi("batch", "show", str(tmp_path))
    assert proc.returncode == 2
    assert "--out DIR" in proc.stderr


def test_report_page_sorts_and_each_row_opens_its_transcript(out: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = minipi("batch", "report", str(out), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    body = page.read_text(encoding="utf-8")
    assert "succeeded: <b>4/5 (80.0%)</b>" in body
    assert "failed/bad_request: <b>1</b>" in body
    task = (tmp_path / "report.tasks" / "00001.html").read_text(encoding="utf-8")
    assert '<a class="claim" href="#t-c' in task  # t000's figures link to their lines
    chromium_or_skip()
    with Browser.start(tmp_path / "profile") as browser:
        browser.open(page)
        ids = (
            "Array.from(document.querySelectorAll('tbody tr')).map(function(r){"
            "return r.cells[0].textContent;})"
        )
        assert browser.value(ids) == ["t000", "t001", "t002", "t003", "t004"]
        browser.click('th[data-k="8"]')  # seconds, ascending
        seconds = browser.value(
            "Array.from(document.querySelectorAll('tbody tr')).map(function(r){"
            "return parseFloat(r.cells[8].textContent);})"
        )
        assert seconds == sorted(seconds)
        browser.screenshot(tmp_path / "batch.png")
        browser.events.clear()
        browser.click('tr[data-href$="00003.html"] td.answer')
        browser.wait_for("Page.loadEventFired")
        assert browser.value("location.href").endswith("report.tasks/00003.html")
        assert browser.value("document.querySelector('h1').textContent") == "t002"
        assert all(url.startswith("file://") for url in browser.requests)
