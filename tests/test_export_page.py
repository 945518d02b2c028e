"""``minipi sessions export`` opened in a real browser (headless Chromium, skipped where there
is none): a click on a figure highlights its source line, and a hostile session injects
nothing (no script runs, no request leaves). Each test saves a screenshot in its tmp_path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.browser import Browser, chromium_or_skip
from support.cli import QUESTION, clean_env, copy_example, minipi
from support.fake import Call, FakeServer, Turn

ANSWER = "日报日期 2026-09-06，订单数 128，营收 9600 元，利润 777 元。"


def _ask(
    server: FakeServer, data: Path, project: Path, question: str = QUESTION, timeout: float = 60
) -> None:
    proc = minipi(
        "ask",
        question,
        "--session",
        "demo",
        "--project",
        str(project),
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        env=clean_env(MINIPI_DATA_DIR=str(data)),
        timeout=timeout,
    )
    assert proc.returncode == 4, proc.stderr  # each answer here is unbacked (exit 4)


def _export(data: Path, *args: str) -> None:
    proc = minipi("sessions", "export", "demo", *args, env=clean_env(MINIPI_DATA_DIR=str(data)))
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def daily(tmp_path: Path, fake_server: FakeServer) -> Path:
    """A saved session of the daily report whose answer has one figure without a source."""
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "reports"}, call_id="c1")]),
        Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"}, call_id="c2")]),
        Turn(ANSWER),
    )
    data = tmp_path / "data"
    _ask(fake_server, data, copy_example("sample_project", tmp_path))
    return data


def test_the_page_links_every_figure_and_marks_the_unsupported_one(
    daily: Path, tmp_path: Path
) -> None:
    page = tmp_path / "demo.html"
    _export(daily, "--html", str(page))
    body = page.read_text(encoding="utf-8")
    assert "Content-Security-Policy" in body
    assert "default-src 'none'" in body
    links = re.findall(r'<a class="claim" href="#([^"]+)"[^>]*>([^<]+)</a>', body)
    figures = ["2026-09-06", "128", "9600 元"]
    assert [text for _, text in links] == figures * 2  # in the answer, in the evidence table
    for anchor, _ in links:
        assert f'id="{anchor}"' in body
    assert '<span class="claim bad"' in body  # 777 元: no tool result holds it
    assert 'lang="zh"' in body


def test_markdown_holds_the_same_run(daily: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.md"
    _export(daily, "--md", str(out))
    text = out.read_text(encoding="utf-8")
    assert "**答案**" in text
    assert ANSWER in text
    assert '"revenue_yuan": 9600' in text
    assert "/revenue_yuan" in text


def test_export_needs_a_file_and_a_real_run(daily: Path) -> None:
    env = clean_env(MINIPI_DATA_DIR=str(daily))
    none = minipi("sessions", "export", "demo", env=env)
    assert none.returncode == 2
    assert "--html FILE" in none.stderr
    beyond = minipi("sessions", "export", "demo", "--run", "2", "--md", "x.md", env=env)
    assert beyond.returncode == 2
    assert "--run takes 1 to 1" in beyond.stderr


def test_a_click_on_a_figure_highlights_its_source_line(daily: Path, tmp_path: Path) -> None:
    chromium_or_skip()
    page = tmp_path / "demo.html"
    _export(daily, "--html", str(page))
    with Browser.start(tmp_path / "profile") as browser:
        browser.open(page)
        assert browser.value("document.querySelectorAll('.lit').length") == 0
        browser.click('a.claim[data-claim="3"]')  # 9600 元
        lit = browser.value(
            "JSON.stringify(Array.from(document.querySelectorAll('.lit')).map("
            "function(e){return [e.tagName, e.textContent];}))"
        )
        assert json.loads(lit) == [["SPAN", '4  "revenue_yuan": 9600'], ["MARK", "9600"]]
        in_view = browser.value(
            "(function(){var r=document.querySelector('mark.lit').getBoundingClientRect();"
            "return r.top >= 0 && r.bottom <= innerHeight;})()"
        )
        assert in_view is True
        assert browser.value("location.hash").startswith("#r1-c")
        browser.screenshot(tmp_path / "session.png")
        assert browser.requests == [page.as_uri()]


HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '</textarea></pre><img src=x onerror="window.__pwned=2">',
    '<a href="javascript:window.__pwned=3">click</a>',
    "\u202egnp.exe",
    '<link rel="stylesheet" href="http://127.0.0.1:9/x.css">',
]


def test_a_hostile_session_injects_nothing(tmp_path: Path, fake_server: FakeServer) -> None:
    chromium_or_skip()
    project = tmp_path / "project"
    project.mkdir()
    (project / "evil.txt").write_text("\n".join(HOSTILE) + "\n", encoding="utf-8")
    huge = "<b>" + "A" * 10_000_000 + "</b>"
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "evil.txt"}, call_id="<script>c1")]),
        Turn("\n".join([*HOSTILE, huge])),
    )
    data = tmp_path / "data"
    # a 10 MB reply takes a while on a loaded machine (streamed, logged, checked)
    _ask(fake_server, data, project, "what is in evil.txt? <script>x</script>", timeout=300)
    page = tmp_path / "evil.html"
    _export(data, "--html", str(page))
    body = page.read_text(encoding="utf-8")
    assert len(body) < 2_000_000  # the 10 MB line is cut, and says so
    assert "more characters not shown" in body
    with Browser.start(tmp_path / "profile") as browser:
        browser.open(page)
        assert browser.value("window.__pwned === undefined") is True
        assert browser.value("document.querySelectorAll('img, link[rel=stylesheet]').length") == 0
        assert browser.value("document.querySelectorAll('script').length") == 1  # the page's
        hrefs = browser.value(
            "Array.from(document.querySelectorAll('a')).map(function(a){"
            "return a.getAttribute('href');})"
        )
        assert all(h.startswith("#") for h in hrefs)
        assert "<script>window.__pwned = 1</script>" in browser.value("document.body.innerText")
        assert "\\u202e" in browser.value("document.body.innerText")
        browser.screenshot(tmp_path / "hostile.png")
        assert browser.requests == [page.as_uri()]
