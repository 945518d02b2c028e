"""Sources name files (issue 38, item 4), through the real CLI: the sources block and
``--json`` name the file a reader would open to check a figure. A search hit is the file and
line it came from, a listed entry is the file listed, a move is the file moved and where to;
every figure the answer states is shown, and every block has a heading in the answer's
language.

The fake model's answers are scripted; the tool results are the real tools' on files the
tests write.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.cli import EXAMPLES, clean_env, json_lines, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn

DAILY = '{\n  "date": "2026-09-06",\n  "orders": 128,\n  "refunds": 12\n}\n'


def ask(server: FakeServer, project: Path, question: str, *flags: str) -> Any:
    base = ("--project", str(project), "--base-url", server.base_url, "--model", "fake-model")
    return minipi("ask", question, *base, *flags, env=clean_env())


def block(stderr: str, heading: str) -> list[str]:
    """The sources block: its heading and its rows, as the log shows them."""
    return stderr[stderr.index(heading) :].splitlines()


def claims(proc: Any) -> dict[str, dict[str, Any]]:
    end = json_lines(proc.stdout)[-1]
    assert end["type"] == "run_end"
    return {c["text"]: c for c in end["evidence"]["claims"]}


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """A project whose search for "refunds" hits ``reports/archive.txt`` line 1 first, then
    ``reports/daily.json`` line 4 (line 2 of the tool's output)."""
    project = tmp_path / "p"
    (project / "reports").mkdir(parents=True)
    (project / "reports" / "archive.txt").write_text("refunds last week: 7\n", encoding="utf-8")
    (project / "reports" / "daily.json").write_text(DAILY, encoding="utf-8")
    return project


def search_then(answer: str, query: str = "refunds") -> list[Turn]:
    return [Turn(calls=[Call("search_files", {"query": query})]), Turn(answer)]


def test_a_search_hit_is_the_file_and_line_it_came_from(
    fake_server: FakeServer, reports: Path
) -> None:
    fake_server.add(*search_then("There were 12 refunds."))
    proc = ask(fake_server, reports, "How many refunds were there?")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[evidence] 1/1 figures traced")
    assert rows[1].split() == ["12", "reports/daily.json:4"]  # not search_files:2:…


def test_json_names_a_search_hits_file_and_line(fake_server: FakeServer, reports: Path) -> None:
    fake_server.add(*search_then("There were 12 refunds."))
    proc = ask(fake_server, reports, "How many refunds were there?", "--json")
    assert proc.returncode == 0, proc.stderr
    (source,) = claims(proc)["12"]["sources"]
    assert (source["tool"], source["origin"]) == ("search_files", "content")
    assert (source["path"], source["line"]) == ("reports/daily.json", 4)
    file_line = (reports / "reports/daily.json").read_text(encoding="utf-8").splitlines()[3]
    assert "12" in file_line
    output = tool_outputs(fake_server.requests[-1].body)[-1]
    start, end = source["range"]  # still a range into the tool's output
    assert output[start:end] == "12"


def test_a_hit_in_a_file_whose_name_the_tool_quotes_names_the_file(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """A name with a ``:`` is quoted in a search line (``"a:b.txt":1: …``): the source is
    the file's name as the project has it."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "notes:2026.txt").write_text("total 9600\n", encoding="utf-8")
    fake_server.add(*search_then("The total is 9600.", query="total"))
    proc = ask(fake_server, project, "What is the total?", "--json")
    assert proc.returncode == 0, proc.stderr
    (source,) = claims(proc)["9600"]["sources"]
    assert (source["path"], source["line"]) == ("notes:2026.txt", 1)


def test_a_listed_entry_is_the_file_listed(fake_server: FakeServer, reports: Path) -> None:
    (reports / "reports" / "daily-2026-09-06.json").write_text(DAILY, encoding="utf-8")
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        Turn("The report is daily-2026-09-06.json."),
    )
    proc = ask(fake_server, reports, "Which daily report is in reports?")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[evidence] 1/1 figures traced")
    # the file listed, with no position: not "reports:1:9" (the folder, and where in it)
    assert rows[1].split() == ["daily-2026-09-06.json", "reports/daily-2026-09-06.json"]


def test_a_figure_only_in_a_listed_name_names_that_file(
    fake_server: FakeServer, reports: Path
) -> None:
    (reports / "reports" / "daily-2026-09-06.json").write_text(DAILY, encoding="utf-8")
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        Turn("The report is dated 2026-09-06."),
    )
    proc = ask(fake_server, reports, "What date is the daily report of?", "--json")
    assert proc.returncode == 0, proc.stderr
    claim = claims(proc)["2026-09-06"]
    assert claim["status"] == "path"
    (source,) = claim["sources"]
    assert (source["path"], source["line"], source["origin"]) == (
        "reports/daily-2026-09-06.json",
        None,
        "path",
    )


@pytest.fixture
def shelter(tmp_path: Path) -> Path:
    project = tmp_path / "shelter"
    shutil.copytree(EXAMPLES / "shelter", project)
    return project


def adopt(server: FakeServer) -> None:
    server.add(
        Turn(calls=[Call("list_files", {"path": "inbox"})]),
        Turn(calls=[Call("move_file", {"source": "inbox/猫咪小花.txt", "target": "archive/"})]),
        Turn("已完成领养：猫咪小花已移到 archive/。"),
    )


def test_a_path_a_move_shows_is_the_file_moved_there(
    fake_server: FakeServer, shelter: Path
) -> None:
    adopt(fake_server)
    proc = ask(fake_server, shelter, "请领养猫咪小花。", "--approve", "all")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[依据] 2/2 个数字可追溯")
    # "archive/" of the answer is in the move's new path: that file, not move_file:1:25
    assert ["archive/", "archive/猫咪小花.txt"] in [row.split() for row in rows[1:]]


def test_a_move_is_the_file_moved_and_where_to(fake_server: FakeServer, shelter: Path) -> None:
    adopt(fake_server)
    proc = ask(fake_server, shelter, "请领养猫咪小花。", "--approve", "all")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[依据] 2/2 个数字可追溯")
    moved = "inbox/猫咪小花.txt → archive/猫咪小花.txt"
    assert rows[1] == f"  已完成领养：猫咪小花已移到 archive/。  {moved}"  # not move_file:1:1
    adopt(fake_server)
    shelter_again = shelter.parent / "again"
    shutil.copytree(EXAMPLES / "shelter", shelter_again)
    proc = ask(fake_server, shelter_again, "请领养猫咪小花。", "--approve", "all", "--json")
    (source,) = claims(proc)["已完成领养：猫咪小花已移到 archive/。"]["sources"]
    assert (source["path"], source["to"], source["line"]) == (
        "inbox/猫咪小花.txt",
        "archive/猫咪小花.txt",
        None,
    )


def test_a_count_the_answer_states_is_shown_not_hidden(
    fake_server: FakeServer, reports: Path
) -> None:
    """A small number is too common to count as support, but it is the answer: its row is
    shown with what it is, and the heading says it is not counted."""
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        Turn("There are 2 reports."),
    )
    proc = ask(fake_server, reports, "How many reports are there?")
    assert proc.returncode == 0, proc.stderr
    heading = "[evidence] no figure of the answer counts as traced: 1 listed below"
    rows = block(proc.stderr, heading)
    assert rows[1] == "  2  (too common to count)"
    assert "-v shows" not in proc.stderr


def test_an_uncounted_figure_beside_traced_ones_is_shown_and_said(
    fake_server: FakeServer, reports: Path
) -> None:
    fake_server.add(*search_then("12 refunds, in 2 files."))
    proc = ask(fake_server, reports, "How many refunds were there?")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[evidence] 1/1 figures traced, 1 more listed, not counted")
    # in the answer's order; the uncounted one says what it is
    assert [row.split() for row in rows[1:3]] == [
        ["12", "reports/daily.json:4"],
        ["2", "(too", "common", "to", "count)"],
    ]


def test_every_block_has_a_heading_in_the_answers_language(
    fake_server: FakeServer, reports: Path
) -> None:
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        Turn("一共有 2 份报告。"),
    )
    proc = ask(fake_server, reports, "reports 目录里有几份报告？")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[依据] 答案的数字都不计入追溯：1 个，列在下面")
    assert rows[1].split() == ["2", "份", "（太常见，不计入）"]


def test_verbose_lists_every_place_a_figure_is_in(fake_server: FakeServer, reports: Path) -> None:
    (reports / "reports" / "weekly.json").write_text('{\n  "refunds": 12\n}\n', encoding="utf-8")
    fake_server.add(*search_then("There were 12 refunds."))
    proc = ask(fake_server, reports, "How many refunds were there?", "-v")
    assert proc.returncode == 0, proc.stderr
    rows = block(proc.stderr, "[evidence] 1/1 figures traced")
    assert rows[1].split()[:2] == ["12", "reports/daily.json:4"]
    assert "(found in several places)" in rows[1]
    assert rows[2].split() == ["reports/weekly.json:2"]


def test_a_read_still_names_its_file_line_and_pointer(
    fake_server: FakeServer, reports: Path
) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "reports/daily.json"})]),
        Turn("There were 12 refunds."),
    )
    proc = ask(fake_server, reports, "How many refunds were there?", "--json")
    assert proc.returncode == 0, proc.stderr
    (source,) = claims(proc)["12"]["sources"]
    shown = {k: source[k] for k in ("path", "pointer", "line")}
    assert shown == {"path": "reports/daily.json", "pointer": "/refunds", "line": 4}
    assert json.dumps(source)  # plain JSON
