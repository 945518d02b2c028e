"""Evidence through the real CLI: the three example tasks answered right, rounded and wrong,
``--evidence require``'s one retry and its failure, ``--json``/``--trace``, and sessions.

Each answer is scripted from what the tool really returned (the fake model reads the
request), so the figures are the files' own, or deliberately not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.cli import (
    EXAMPLES,
    QUESTION,
    clean_env,
    copy_example,
    json_lines,
    minipi,
    tool_outputs,
)
from support.fake import Call, FakeServer, Turn

Answer = Callable[[dict[str, Any]], str]


def ask(server: FakeServer, project: Path, question: str, *flags: str, **env: str) -> Any:
    base = ("--project", str(project), "--base-url", server.base_url, "--model", "fake-model")
    return minipi("ask", question, *base, *flags, env=clean_env(**env))


def report(body: dict[str, Any]) -> dict[str, Any]:
    """The daily report as the model was sent it (the last tool result)."""
    parsed: dict[str, Any] = json.loads(tool_outputs(body)[-1])
    return parsed


def daily(answer: Answer) -> list[Any]:
    """The seed's three requests: list the reports, read the one listed, answer from it."""
    return [
        Turn(calls=[Call("list_files", {"path": "reports"})]),
        Turn(calls=[Call("read_file", {"path": "reports/daily-2026-09-06.json"})]),
        lambda body: Turn(answer(body)),
    ]


def right(body: dict[str, Any]) -> str:
    r = report(body)
    return f"这份日报的日期是{r['date']}，订单数为{r['orders']}，营收为{r['revenue_yuan']}元。"


def rounded(body: dict[str, Any]) -> str:
    r = report(body)
    return f"日期 {r['date']}，订单 {r['orders']} 笔，营收约 {r['revenue_yuan'] / 1000:.1f}k 元。"


def wrong(body: dict[str, Any]) -> str:
    r = report(body)
    return f"日期 {r['date']}，订单 {r['orders'] + 12} 笔，营收 {r['revenue_yuan']} 元。"


def evidence_of(proc: Any) -> dict[str, Any]:
    end = json_lines(proc.stdout)[-1]
    assert end["type"] == "run_end"
    evidence: dict[str, Any] = end["evidence"]
    return evidence


def statuses(evidence: dict[str, Any]) -> dict[str, str]:
    return {c["text"]: c["status"] for c in evidence["claims"]}


SAMPLE = EXAMPLES / "sample_project"


def test_a_right_answer_is_traced_to_the_reports_fields(fake_server: FakeServer) -> None:
    fake_server.add(*daily(right))
    proc = ask(fake_server, SAMPLE, QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "这份日报的日期是2026-09-06，订单数为128，营收为9600元。"
    log = proc.stderr
    assert "[成功] 3 次模型请求，2 次工具调用" in log
    assert "，依据 3/3" in log  # the summary line counts the traced figures
    block = log[log.index("[依据] 3/3 个数字可追溯") :].splitlines()
    assert block[1].split() == ["2026-09-06", "reports/daily-2026-09-06.json:2", "/date"]
    assert block[2].split() == ["128", "reports/daily-2026-09-06.json:3", "/orders"]
    assert block[3].split() == ["9600元", "reports/daily-2026-09-06.json:4", "/revenue_yuan"]
    # the block comes after the answer: nothing of it on stdout
    assert "依据" not in proc.stdout


def test_json_carries_the_evidence_with_pointers_and_ranges(fake_server: FakeServer) -> None:
    fake_server.add(*daily(right))
    proc = ask(fake_server, SAMPLE, QUESTION, "--json")
    assert proc.returncode == 0, proc.stderr
    evidence = evidence_of(proc)
    assert (evidence["supported"], evidence["unsupported"], evidence["tool_results"]) == (3, 0, 2)
    orders = next(c for c in evidence["claims"] if c["value"] == "128")
    (source,) = orders["sources"]
    assert source["tool"] == "read_file"
    assert source["path"] == "reports/daily-2026-09-06.json"
    assert (source["origin"], source["pointer"], source["line"]) == ("content", "/orders", 3)
    content = (SAMPLE / "reports/daily-2026-09-06.json").read_text(encoding="utf-8")
    start, end = source["range"]
    assert content[start:end] == "128"


def test_a_rounded_answer_is_shown_rounded(fake_server: FakeServer) -> None:
    fake_server.add(*daily(rounded))
    proc = ask(fake_server, SAMPLE, QUESTION, "--json")
    assert proc.returncode == 0, proc.stderr
    assert statuses(evidence_of(proc)) == {
        "2026-09-06": "exact",
        "128 笔": "exact",
        "9.6k 元": "rounded",
    }


def test_a_wrong_figure_is_listed_first_and_marked_but_warn_still_answers(
    fake_server: FakeServer,
) -> None:
    fake_server.add(*daily(wrong))
    proc = ask(fake_server, SAMPLE, QUESTION)
    assert proc.returncode == 4, proc.stderr  # warn: shown, not refused; unbacked, not 0
    assert "订单 140 笔" in proc.stdout
    block = proc.stderr[proc.stderr.index("[依据] 2/3 个数字可追溯") :].splitlines()
    assert block[1].startswith("  140 笔")  # unsupported first
    assert "x 未在任何工具结果中找到" in block[1]  # not a terminal: the ASCII mark
    assert "最接近的是 128" in block[1]
    assert "，依据 2/3" in proc.stderr


def test_require_asks_once_more_naming_the_figure_then_accepts_a_fixed_answer(
    fake_server: FakeServer,
) -> None:
    def fixed(body: dict[str, Any]) -> Turn:
        told = body["messages"][-1]
        assert told["role"] == "user"
        assert "140" in told["content"]  # the model is told which figure no result holds
        return Turn(right(body))

    fake_server.add(*daily(wrong), fixed)
    proc = ask(fake_server, SAMPLE, QUESTION, "--evidence", "require", "--json")
    assert proc.returncode == 0, proc.stderr
    events = json_lines(proc.stdout)
    assert [e["code"] for e in events if e["type"] == "notice"] == ["nudge"]
    end = events[-1]
    assert (end["status"], end["turns"]) == ("succeeded", 4)
    assert end["evidence"]["unsupported"] == 0
    assert "128" in end["answer"]


def test_require_fails_a_second_unsupported_answer(fake_server: FakeServer) -> None:
    fake_server.add(*daily(wrong), lambda body: Turn(wrong(body)))
    proc = ask(fake_server, SAMPLE, QUESTION, "--evidence", "require")
    assert proc.returncode == 1
    assert proc.stdout == ""  # no answer shown as one
    refused = "\nunsupported_figures：--evidence require：答案仍有内容没有任何工具结果支持："
    refused += "140 笔（不在任何工具结果中）\n"  # which figure, and why
    assert refused in proc.stderr
    assert "[依据] 2/3" in proc.stderr  # which figure, shown
    assert re.search(r"\n  140 笔 +x 未在任何工具结果中找到", proc.stderr)


def test_require_comes_from_the_environment_too(fake_server: FakeServer) -> None:
    fake_server.add(*daily(wrong), lambda body: Turn(wrong(body)))
    proc = ask(fake_server, SAMPLE, QUESTION, "--json", MINIPI_EVIDENCE="require")
    assert json_lines(proc.stdout)[-1]["code"] == "unsupported_figures"
    bad = ask(fake_server, SAMPLE, QUESTION, MINIPI_EVIDENCE="strict")
    assert bad.returncode == 2
    assert "MINIPI_EVIDENCE must be off, warn or require" in bad.stderr


def test_off_checks_nothing(fake_server: FakeServer) -> None:
    fake_server.add(*daily(wrong))
    proc = ask(fake_server, SAMPLE, QUESTION, "--evidence", "off", "--json")
    assert proc.returncode == 0
    assert json_lines(proc.stdout)[-1]["evidence"] is None


def test_the_treasure_hunt_password_is_put_together_from_the_clues(
    fake_server: FakeServer,
) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "step1.txt"})]),
        Turn(calls=[Call("read_file", {"path": "step2.txt"})]),
        Turn(calls=[Call("read_file", {"path": "step3.txt"})]),
        Turn("The full password is 'AgentLoop'."),
    )
    proc = ask(fake_server, EXAMPLES / "treasure_hunt", "What is the password?", "--json")
    assert proc.returncode == 0, proc.stderr
    (claim,) = evidence_of(proc)["claims"]
    assert (claim["text"], claim["status"]) == ("'AgentLoop'", "derived")
    assert [s["path"] for s in claim["sources"]] == ["step2.txt", "step3.txt"]


def test_the_shelter_answer_is_traced_in_english_headings(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = copy_example("shelter", tmp_path)
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "inbox/猫咪小花.txt"})]),
        Turn("猫咪小花 is a 中华田园猫, 2 years old; it was filed on 2026-09-07."),
    )
    proc = ask(fake_server, project, "How old is the cat in inbox/猫咪小花.txt?")
    assert proc.returncode == 4, proc.stderr  # unbacked: 2026-09-07 is in no read
    log = proc.stderr
    # English question: English headings; "2 years" is shown, and not counted
    assert "[evidence] 2/3 figures traced, 1 more listed, not counted" in log
    assert "2026-09-07  x not found in any tool result" in log
    assert "中华田园猫  inbox/猫咪小花.txt:2:4" in log  # a name the file gives a field
    # "2 years": a small number is not counted, but a figure the answer states is shown
    assert "  2           (too common to count)" in log
    assert "[unbacked: a claim is in no tool result]" in log


def test_the_trace_and_the_session_keep_the_evidence(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    data, trace = tmp_path / "data", tmp_path / "trace.json"
    fake_server.add(*daily(right))
    env = {"MINIPI_DATA_DIR": str(data)}
    proc = ask(fake_server, SAMPLE, QUESTION, "--session", "s", "--trace", str(trace), **env)
    assert proc.returncode == 0, proc.stderr
    traced = json.loads(trace.read_text(encoding="utf-8"))["result"]["evidence"]
    assert traced["supported"] == 3
    shown = minipi("sessions", "show", "s", env=clean_env(**env))
    assert "[依据] 3/3 个数字可追溯" in shown.stdout
    saved = json.loads(minipi("sessions", "show", "s", "--json", env=clean_env(**env)).stdout)
    (run,) = saved["runs"]
    assert run["events"][-1]["evidence"] == traced
    # a resumed session's follow-up with no tool call: traced to what question 1 read
    fake_server.add(Turn("订单数是 128，营收 7000 元。"))
    again = ask(fake_server, SAMPLE, "订单数是多少？", "--session", "s", "--json", **env)
    evidence = evidence_of(again)
    assert evidence["tool_results"] == 0  # the earlier run's results are not this run's
    assert statuses(evidence) == {"128": "exact", "7000 元": "unsupported"}
    (source,) = evidence["claims"][0]["sources"]
    assert (source["question"], source["path"], source["line"]) == (
        1,
        "reports/daily-2026-09-06.json",
        3,
    )


@pytest.mark.parametrize("flag", ["--evidence=maybe"])
def test_a_bad_evidence_flag_is_a_usage_error(fake_server: FakeServer, flag: str) -> None:
    proc = ask(fake_server, SAMPLE, QUESTION, flag)
    assert proc.returncode == 2
    assert fake_server.requests == []


def test_a_runaway_answer_is_checked_up_to_a_bound_and_says_so(fake_server: FakeServer) -> None:
    """A model that streams megabytes of figures: the check stops at a bound (no minutes of
    work), the answer is printed whole, and the block says where checking stopped."""
    filler = "营收 9600 元，" * 200_000  # 2.4 M characters
    fake_server.add(*daily(lambda body: right(body) + filler))
    proc = ask(fake_server, SAMPLE, QUESTION, "--json")
    assert proc.returncode == 4, proc.stderr  # unbacked: not examined whole
    end = json_lines(proc.stdout)[-1]
    assert end["answer"].endswith(filler)  # the answer itself is not cut
    evidence = end["evidence"]
    assert 0 < evidence["unchecked_from"] < len(end["answer"])
    assert len(evidence["claims"]) <= 100
    fake_server.add(*daily(lambda body: right(body) + filler))
    shown = ask(fake_server, SAMPLE, QUESTION)
    note = next(line for line in shown.stderr.splitlines() if "未再检查" in line)
    assert str(evidence["unchecked_from"]) in note


def test_a_figure_said_twice_is_one_row_of_the_block(fake_server: FakeServer) -> None:
    fake_server.add(*daily(lambda body: right(body) + " 营收为9600元，没错。"))
    proc = ask(fake_server, SAMPLE, QUESTION)
    assert proc.returncode == 0, proc.stderr
    # the heading counts the rows shown (the summary line counts the claims: 4/4)
    block = proc.stderr[proc.stderr.index("[依据] 3/3 个数字可追溯") :].splitlines()
    assert [line.split()[0] for line in block[1:]] == ["2026-09-06", "128", "9600元"]
