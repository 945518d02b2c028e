"""One verdict, with its reason, wherever a saved run is shown (issue 38, item 3): ``sessions
list`` (the last run), ``sessions show`` (each run, with its answer's cited facts and
sources, every label in the run's language) and the session page (coloured by the verdict,
not by the status: an unbacked answer is never a green success). All of it is read from
the ``run_end`` the run saved, never judged again; a run saved before verdicts shows none.

The sessions are made by the real ``minipi ask`` over HTTP with the fake model; the runs of
an older minipi (no verdict) and guided mode's cited facts (a local model's) are made by
editing what such a run saved, as ``test_session_store`` does.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from minipi.cli.export import Labels, run_html
from minipi.cli.transcript import transcript_of
from minipi.evidence.verdict import Verdict
from minipi.session.store import DB_NAME
from support.browser import Browser, chromium_or_skip
from support.cli import QUESTION, clean_env, copy_example, minipi
from support.fake import Call, FakeServer, Turn

REPORT = "reports/daily-2026-09-06.json"
RIGHT = "这份日报的日期是2026-09-06，订单数为128，营收为9600元。"
WRONG = "订单数为 140。"  # the report says 128: unbacked
ENGLISH_LABELS = ("question", "answer", "request", "tokens in", "total", "verdict", "session")


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = minipi(*args, env=clean_env(MINIPI_DATA_DIR=str(data)))
    assert proc.returncode == 0, proc.stderr
    return proc


def ask(server: FakeServer, data: Path, project: Path, session: str, question: str) -> None:
    endpoint = ("--project", str(project), "--base-url", server.base_url, "--model", "fake-model")
    proc = minipi(
        "ask", question, "--session", session, *endpoint, env=clean_env(MINIPI_DATA_DIR=str(data))
    )
    assert proc.returncode in (0, 4), proc.stderr  # 4: an unbacked answer


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Session ``zh``: a backed run, then an unbacked one; session ``en``: one weak run
    (nothing read)."""
    root = tmp_path_factory.mktemp("saved")
    project, data = copy_example("sample_project", root), root / "data"
    with FakeServer() as server:
        server.add(Turn(calls=[Call("read_file", {"path": REPORT})]), Turn(RIGHT))
        ask(server, data, project, "zh", QUESTION)
        server.add(Turn(calls=[Call("read_file", {"path": REPORT})]), Turn(WRONG))
        ask(server, data, project, "zh", "日报里的订单数是多少？")
        server.add(Turn("There is a report."))
        ask(server, data, project, "en", "What is there?")
    return data


def test_the_list_says_the_last_runs_verdict_and_why(data: Path) -> None:
    rows = cli(data, "sessions", "list").stdout.splitlines()
    last = {row.split()[0]: row for row in rows[1:]}
    assert last["zh"].endswith("  succeeded · unbacked (unsupported)")
    assert last["en"].endswith("  succeeded · weak (no_reads)")
    listed = json.loads(cli(data, "sessions", "list", "--json").stdout)
    verdicts = {s["name"]: (s["last_status"], s["last_verdict"]) for s in listed}
    assert verdicts == {
        "zh": ("succeeded", {"kind": "unbacked", "reason": "unsupported"}),
        "en": ("succeeded", {"kind": "weak", "reason": "no_reads"}),
    }


def test_show_says_each_runs_verdict_in_the_runs_language(data: Path) -> None:
    out = cli(data, "sessions", "show", "zh").stdout
    lines = out.splitlines()
    runs = [line for line in lines if line.startswith("第 ")]
    assert [re.sub(r"\d{4}-\S+ \S+", "WHEN", line) for line in runs] == [
        "第 1 次运行  WHEN  成功 · 有依据",
        "第 2 次运行  WHEN  成功 · 无依据",
    ]
    assert "  判定  有依据" in lines
    assert "  判定  无依据：有内容未在任何工具结果中找到" in lines
    assert "  [依据] 3/3 个数字可追溯" in lines  # the sources, as the run showed them
    assert lines[0] == "会话 zh"
    said = re.sub(r"\{.*\}|/\S*|\S+\.json|read_file|call_\d+|fake-model|tokens", "", out)
    assert [label for label in ENGLISH_LABELS if label in said] == []

    english = cli(data, "sessions", "show", "en").stdout.splitlines()
    assert any(re.fullmatch(r"run 1  \S+ \S+  succeeded · weak", line) for line in english)
    assert "  verdict  weak: nothing was read in this conversation" in english

    record = json.loads(cli(data, "sessions", "show", "zh", "--json").stdout)
    assert [(r["status"], r["verdict"]) for r in record["runs"]] == [
        ("succeeded", {"kind": "backed", "reason": None}),
        ("succeeded", {"kind": "unbacked", "reason": "unsupported"}),
    ]
    assert [r["verdict"] for r in record["runs"]] == [
        r["events"][-1]["verdict"] for r in record["runs"]
    ]  # as the run's end saved it


def verdicts_shown(body: str) -> list[tuple[str, str]]:
    """Each run's heading on the page: its colour class and what it says."""
    found = re.findall(r'<section id="r\d+"><h1>[^<]*<span class="(\w+)">([^<]*)</span>', body)
    return [(css, said) for css, said in found]


def test_the_page_colours_each_run_by_its_verdict(data: Path, tmp_path: Path) -> None:
    page = tmp_path / "zh.html"
    cli(data, "sessions", "export", "zh", "--html", str(page))
    body = page.read_text(encoding="utf-8")
    assert verdicts_shown(body) == [("ok", "成功 · 有依据"), ("err", "成功 · 无依据")]
    assert '<div class="box verdict err" data-verdict="unbacked">' in body
    assert "无依据：有内容未在任何工具结果中找到</div>" in body
    english = tmp_path / "en.html"
    cli(data, "sessions", "export", "en", "--html", str(english))
    body = english.read_text(encoding="utf-8")
    assert verdicts_shown(body) == [("warn", "succeeded · weak")]
    assert "weak: nothing was read in this conversation</div>" in body
    markdown = tmp_path / "zh.md"
    cli(data, "sessions", "export", "zh", "--md", str(markdown))
    assert "**判定**: 无依据：有内容未在任何工具结果中找到" in markdown.read_text(encoding="utf-8")


def test_a_task_page_gets_the_verdict_from_the_shared_transcript(data: Path) -> None:
    """The batch task pages read a trace's events through ``transcript_of`` and show them
    with ``run_html``: the verdict comes with them."""
    record = json.loads(cli(data, "sessions", "show", "zh", "--json").stdout)
    second = record["runs"][1]
    run = transcript_of("", second["events"])
    assert run.verdict == Verdict("unbacked", "unsupported")
    shown = run_html(run, "t", Labels(second["question"]))
    assert '<div class="box verdict err" data-verdict="unbacked">' in shown


def saved(data: Path, sql: str, *args: object) -> None:
    db = sqlite3.connect(data / DB_NAME)
    try:
        with db:
            db.execute(sql, args)
    finally:
        db.close()


def test_an_older_run_shows_no_verdict_and_cited_facts_are_shown(
    data: Path, tmp_path: Path
) -> None:
    """A run saved before verdicts (its end has none) is shown without one, neither green
    nor red; the facts guided mode cited are shown under the answer on every view."""
    copy = tmp_path / "data"
    copy.mkdir(mode=0o700)
    (copy / DB_NAME).write_bytes((data / DB_NAME).read_bytes())
    older = """UPDATE runs SET "end" = json_remove("end", '$.verdict', '$.backed', '$.facts')
        WHERE question = ?"""
    saved(copy, older, "What is there?")
    fact = f"orders: 128 ({REPORT})"
    cited = """UPDATE runs SET "end" = json_set("end", '$.facts', json_array(?))
        WHERE question = ?"""
    saved(copy, cited, fact, QUESTION)

    listed = cli(copy, "sessions", "list").stdout.splitlines()
    assert next(row for row in listed if row.startswith("en ")).endswith("  succeeded")
    english = cli(copy, "sessions", "show", "en").stdout.splitlines()
    assert any(re.fullmatch(r"run 1  \S+ \S+  succeeded", line) for line in english)
    assert not [line for line in english if line.startswith("  verdict")]
    (older_run,) = json.loads(cli(copy, "sessions", "show", "en", "--json").stdout)["runs"]
    assert older_run["verdict"] is None
    page = tmp_path / "en.html"
    cli(copy, "sessions", "export", "en", "--html", str(page))
    assert verdicts_shown(page.read_text(encoding="utf-8")) == [("mute", "succeeded")]

    chinese = cli(copy, "sessions", "show", "zh").stdout
    assert f"[摘自工具结果] 1 条（由 minipi 引用）\n    {fact}" in chinese
    record: Any = json.loads(cli(copy, "sessions", "show", "zh", "--json").stdout)
    assert record["runs"][0]["facts"] == [fact]
    page = tmp_path / "zh.html"
    cli(copy, "sessions", "export", "zh", "--html", str(page))
    body = page.read_text(encoding="utf-8")
    assert f"<h2>minipi 从工具结果中引用的事实</h2><ul><li>{fact}</li></ul>" in body.replace(
        "\n", ""
    )


def test_the_verdict_is_seen_in_colour(data: Path, tmp_path: Path) -> None:
    chromium_or_skip()
    page = tmp_path / "zh.html"
    cli(data, "sessions", "export", "zh", "--html", str(page))
    with Browser.start(tmp_path / "profile") as browser:
        browser.open(page)
        colours = browser.value(
            "JSON.stringify(Array.from(document.querySelectorAll('section h1 span')).map("
            "function(e){return getComputedStyle(e).color;}))"
        )
        assert json.loads(colours) == ["rgb(26, 127, 55)", "rgb(207, 34, 46)"]  # green, red
        browser.value("document.querySelector('#r2').scrollIntoView()")
        browser.screenshot(tmp_path / "verdict.png")
