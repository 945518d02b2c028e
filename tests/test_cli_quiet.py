"""``-q`` (the answer, the sources block and errors only), the default log folding a long
tool output with a count of what it left out, and ``-v`` showing it whole: the real command
against the fake model."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.cli import QUESTION, copy_example, minipi
from support.fake import Call, FakeServer, Turn
from support.faults import error_status

ANSWER = "日报日期 2026-09-06，订单数 128，营收 9600 元。"


def _ask(
    server: FakeServer, project: Path, *flags: str, question: str = QUESTION
) -> subprocess.CompletedProcess[str]:
    return minipi(
        "ask",
        question,
        "-p",
        str(project),
        "--base-url",
        server.base_url,
        "-m",
        "fake-model",
        *flags,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = copy_example("sample_project", tmp_path)
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 41)), encoding="utf-8")
    return root


def _daily(server: FakeServer) -> None:
    server.add(
        Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"})]),
        Turn(ANSWER),
    )


def test_quiet_prints_the_answer_and_its_sources_only(
    fake_server: FakeServer, project: Path
) -> None:
    _daily(fake_server)
    proc = _ask(fake_server, project, "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ANSWER + "\n"
    assert proc.stderr.startswith("[依据] 3/3 个数字可追溯")
    assert "[项目]" not in proc.stderr
    assert "调用" not in proc.stderr
    assert '"orders": 128' not in proc.stderr


def test_quiet_still_says_why_a_run_failed(fake_server: FakeServer, project: Path) -> None:
    fake_server.add(error_status(400, "FakeServer refuses this"))
    proc = _ask(fake_server, project, "--quiet")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("minipi: failed: bad_request: ")


def test_the_log_folds_a_long_output_and_verbose_shows_it_whole(
    fake_server: FakeServer, project: Path
) -> None:
    for _ in range(2):
        fake_server.add(Turn(calls=[Call("read_file", {"path": "long.txt"})]), Turn("40 lines"))
    folded = _ask(fake_server, project, question="how long is long.txt?")
    assert folded.returncode == 0, folded.stderr
    assert "line 5\n" in folded.stderr
    assert "line 6\n" not in folded.stderr
    assert "35 more lines not shown (" in folded.stderr
    assert "-v shows all" in folded.stderr
    whole = _ask(fake_server, project, "-v", question="how long is long.txt?")
    assert whole.returncode == 0, whole.stderr
    assert "line 40\n" in whole.stderr
    assert "more lines not shown" not in whole.stderr


def test_quiet_and_verbose_exclude_each_other(project: Path) -> None:
    proc = minipi("ask", "q", "-p", str(project), "-q", "-v")
    assert proc.returncode == 2
    assert "not both" in proc.stderr
