"""What ``succeeded`` means (issue 21): the verdict of a succeeded run in the summary line and
``--json``, what ``--evidence require`` accepts, a claimed change no tool made, and minipi's
blocks that no model text can imitate on a terminal.

The CLI tests drive the real ``minipi`` over HTTP with the fake model; the change claims are
built by hand (the check's ``change`` kind is the evidence package's).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

from minipi.agent import RunResult
from minipi.ai.types import Usage
from minipi.cli.words import Words
from minipi.evidence import CheckedClaim, Claim, Evidence, Source, TextFigure
from minipi.evidence.verdict import claimed_changes, judge, not_supported
from support.cli import QUESTION, clean_env, json_lines, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample_project"
REPORT = "reports/daily-2026-09-06.json"
RIGHT = "这份日报的日期是2026-09-06，订单数为128，营收为9600元。"


def ask(server: FakeServer, question: str, *flags: str, **env: str) -> Any:
    base = ("--project", str(SAMPLE), "--base-url", server.base_url, "--model", "fake-model")
    return minipi("ask", question, *base, *flags, env=clean_env(**env))


def read_then(answer: str) -> list[Any]:
    return [Turn(calls=[Call("read_file", {"path": REPORT})]), Turn(answer)]


def summary_of(stderr: str) -> str:
    leads = ("[成功", "[失败", "[无依据")
    return next(line for line in stderr.splitlines() if line.startswith(leads))


def test_a_backed_answer_is_the_plain_success(fake_server: FakeServer) -> None:
    fake_server.add(*read_then(RIGHT))
    proc = ask(fake_server, QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc.stderr).startswith("[成功] 2 次模型请求")
    fake_server.add(*read_then(RIGHT))
    end = json_lines(ask(fake_server, QUESTION, "--json").stdout)[-1]
    assert (end["verdict"], end["backed"]) == ({"kind": "backed", "reason": None}, True)


def test_an_answer_without_a_checkable_claim_is_a_weak_success(fake_server: FakeServer) -> None:
    fake_server.add(Turn("项目里有一份日报。"))  # no tool call: nothing read, nothing stated
    proc = ask(fake_server, QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert summary_of(proc.stderr).startswith("[成功·依据不足：本次对话没有读到任何内容]")
    fake_server.add(Turn("There is a report."))
    end = json_lines(ask(fake_server, "What is there?", "--json").stdout)[-1]
    assert (end["verdict"], end["backed"]) == ({"kind": "weak", "reason": "no_reads"}, False)


def test_a_wrong_figure_is_an_unbacked_success_under_warn(fake_server: FakeServer) -> None:
    fake_server.add(*read_then("订单数为 140。"))
    proc = ask(fake_server, QUESTION)
    assert proc.returncode == 4, proc.stderr  # warn: shown, not refused, not exit 0
    assert summary_of(proc.stderr).startswith("[无依据：有内容未在任何工具结果中找到]")


def test_a_figure_only_in_the_question_is_weak_and_require_refuses_it(
    fake_server: FakeServer,
) -> None:
    question = "日报里的营收是 7000 吗？"
    fake_server.add(*read_then("是的，营收是 7000。"))  # the report says 9600
    end = json_lines(ask(fake_server, question, "--json").stdout)[-1]
    assert end["verdict"] == {"kind": "weak", "reason": "from_question"}
    told: list[str] = []

    def again(body: dict[str, Any]) -> Turn:
        told.append(body["messages"][-1]["content"])
        return Turn("是的，7000。")

    fake_server.add(*read_then("是的，营收是 7000。"), again)
    proc = ask(fake_server, question, "--evidence", "require")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "7000 (only in the question)" in told[0]  # the retry names it, and why
    refused = "\nunsupported_figures：--evidence require：答案仍有内容没有任何工具结果支持："
    refused += "7000（只在问题中）\n"
    assert refused in proc.stderr
    assert "\n  7000  出自问题本身" in proc.stderr  # which figure, and why


def test_require_refuses_an_answer_too_long_to_examine_whole(fake_server: FakeServer) -> None:
    filler = "营收 9600 元，" * 200_000  # past the check's bound: never accepted unexamined
    fake_server.add(*read_then(RIGHT + filler))
    proc = ask(fake_server, QUESTION, "--evidence", "require", "--json")
    assert proc.returncode == 1
    end = json_lines(proc.stdout)[-1]
    assert (end["status"], end["code"], end["verdict"]) == ("failed", "answer_unexamined", None)
    fake_server.add(*read_then(RIGHT + filler))
    warned = json_lines(ask(fake_server, QUESTION, "--json").stdout)[-1]
    assert warned["verdict"] == {"kind": "unbacked", "reason": "unexamined"}


# --- a change the answer claims ---------------------------------------------------------------


def _claim(text: str, kind: str, status: str, sources: tuple[Source, ...] = ()) -> CheckedClaim:
    claim = Claim(text, cast(Any, kind), text, None, (0, len(text)), TextFigure(text, text))
    return CheckedClaim(claim, cast(Any, status), sources)


SOURCE = Source("call_1", "read_file", REPORT, "content", "/orders", 3, 13, (30, 33), "128")


def test_a_claimed_change_no_tool_made_is_not_supported_and_named() -> None:
    moved = _claim("已被移动到 archive", "change", "unsupported")
    evidence = Evidence((_claim("128", "number", "exact", (SOURCE,)), moved), tool_results=1)
    assert claimed_changes(evidence) == (moved,)
    assert not_supported(evidence) == (moved,)
    assert judge(evidence).kind == "unbacked"
    made = Evidence((_claim("已移动", "change", "exact", (SOURCE,)),), tool_results=1)
    assert claimed_changes(made) == ()
    assert judge(made).backed


def test_the_summary_says_nothing_was_changed_in_the_questions_language() -> None:
    said = "the answer says: moved to archive"
    result = RunResult("failed", "", (), Usage(), 2, 1, "change_not_made", said)
    assert "，未做任何改动" in Words(True).summary(result)
    assert ", nothing was changed" in Words(False).summary(result)
    assert ", nothing was changed" not in Words(False).summary(result, changes=1)


def test_verdicts_in_order_of_what_they_say() -> None:
    backed = _claim("128", "number", "exact", (SOURCE,))
    cases = {
        None: ("weak", "not_checked"),
        Evidence((backed,), 1, unchecked_from=20): ("unbacked", "unexamined"),
        Evidence((backed, _claim("7000", "number", "from_question")), 1): ("weak", "from_question"),
        Evidence((backed, _claim("06", "number", "path")), 1): ("weak", "path_only"),
        Evidence((_claim("2", "number", "weak"),), 1): ("weak", "weak_claims"),
        Evidence((), 1): ("weak", "no_claims"),
        Evidence((), 0): ("weak", "no_reads"),
        Evidence((backed, _claim("2", "number", "weak")), 1): ("backed", None),
    }
    for evidence, (kind, reason) in cases.items():
        verdict = judge(evidence)
        assert (verdict.kind, verdict.reason) == (kind, reason), evidence
    assert judge(Evidence((), 1), facts=("orders: 128 (a.json)",)).reason == "facts_only"
    named = _claim("daily-2026-09-06.json", "identifier", "exact", (SOURCE,))
    cited = ("date: 2026-09-06 (reports/daily-2026-09-06.json)", "orders: 128 (reports/x.json)")
    # a file name beside facts about the file's content: the figures are only in the facts
    assert judge(Evidence((named,), 1), facts=cited).reason == "facts_only"
    assert judge(Evidence((named, backed), 1), facts=cited).backed  # 128 is stated
    only_path = Evidence((_claim("a.json", "path", "exact", (SOURCE,)),), 1)
    assert (judge(only_path).kind, judge(only_path).reason) == ("weak", "path_only")


# --- minipi's blocks on a terminal ------------------------------------------------------------

MARK = "▌"
IMITATION = (
    "订单数为128。\n\n摘自工具结果：\n- orders: 999 (reports/fake.json)\n"
    f"{MARK}[依据] 1/1 个数字可追溯\n{MARK}  999  reports/fake.json:3  /orders"
)


def _tty(args: list[str], env: dict[str, str], keys: bytes = b"", timeout: float = 60) -> str:
    """``python -m minipi ARGS`` on a pseudo-terminal, ``keys`` typed once a prompt shows."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "minipi", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
        start_new_session=True,
    )
    os.close(slave)
    seen, deadline, typed = "", time.monotonic() + timeout, False
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if keys and not typed and "> " in seen:
                os.write(master, keys)
                typed = True
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(master, 65536).decode("utf-8", "replace")
                except OSError:
                    break
    finally:
        process.kill()
        process.wait()
        os.close(master)
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", seen).replace("\r", "")


def test_on_a_terminal_only_minipi_can_begin_a_line_with_its_mark(fake_server: FakeServer) -> None:
    fake_server.add(*read_then(IMITATION))
    base = ["--project", str(SAMPLE), "--base-url", fake_server.base_url, "--model", "fake-model"]
    out = _tty(["ask", QUESTION, *base, "--no-stream"], clean_env())
    assert_only_minipis_block(out)
    assert "\\u258c[依据] 1/1" in out  # the model's imitation, shown escaped


def assert_only_minipis_block(out: str) -> None:
    """One sources heading begins with ``MARK`` (minipi's), after only minipi's summary and
    the answer's heading, and no marked row is the forged one."""
    marked = [line for line in out.split("\n") if line.startswith(MARK)]
    heads = [k for k, line in enumerate(marked) if line.startswith(f"{MARK}[依据]")]
    assert len(heads) == 1, out
    before = marked[: heads[0]]
    assert [line.split("]")[0] for line in before] in (
        [f"{MARK}[无依据：有内容未在任何工具结果中找到"],
        [f"{MARK}[无依据：有内容未在任何工具结果中找到", f"{MARK}[答案"],
    ), out
    assert not any("fake.json:3" in line for line in marked), marked


def test_a_resumed_chat_cannot_print_a_block_that_looks_like_minipis(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    fake_server.add(*read_then(RIGHT))
    base = ["--project", str(SAMPLE), "--base-url", fake_server.base_url, "--model", "fake-model"]
    first = minipi("ask", QUESTION, *base, "--session", "s", env=env)
    assert first.returncode == 0, first.stderr

    def imitate(body: dict[str, Any]) -> Turn:
        assert tool_outputs(body)  # the earlier question's read is in the history
        return Turn(IMITATION)

    fake_server.add(imitate)
    out = _tty(["chat", *base, "--session", "s", "--no-stream"], env, "再说一遍\r\x04".encode())
    assert "订单数为128" in out, out
    assert_only_minipis_block(out)
    assert "  │ \\u258c[依据] 1/1" in out  # behind the gutter, and escaped


def decoy_project(root: Path) -> Path:
    """A report in reports/, a draft with other figures in drafts/."""
    (root / "reports").mkdir()
    (root / "drafts").mkdir()
    (root / "reports" / "wuhan.json").write_text('{"date": "2026-08-21", "orders": 87}\n')
    (root / "drafts" / "wuhan-draft.json").write_text('{"date": "2026-08-21", "orders": 104}\n')
    return root


def test_figures_from_a_file_the_question_did_not_name_are_a_weak_success(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = decoy_project(tmp_path)
    base = ("--project", str(project), "--base-url", fake_server.base_url, "--model", "fake-model")
    for question in ("reports 目录里武汉门店的订单数是多少？", "In reports/, how many orders?"):
        fake_server.add(
            Turn(calls=[Call("read_file", {"path": "drafts/wuhan-draft.json"})]),
            Turn("The Wuhan report has 104 orders."),
        )
        proc = minipi("ask", question, *base, "--json", env=clean_env())
        end = json_lines(proc.stdout)[-1]
        assert proc.returncode == 0, (end["code"], end["error"])
        assert end["verdict"] == {"kind": "weak", "reason": "outside_question"}
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "drafts/wuhan-draft.json"})]),
        Turn("武汉门店的订单数是 104。"),
    )
    proc = minipi("ask", "reports 目录里武汉门店的订单数是多少？", *base, env=clean_env())
    assert summary_of(proc.stderr).startswith("[成功·依据不足：数字来自问题未提到的文件]")
    fake_server.add(  # the file the question names: backed
        Turn(calls=[Call("read_file", {"path": "reports/wuhan.json"})]),
        Turn("The Wuhan report has 87 orders."),
    )
    end = json_lines(minipi("ask", "In reports/, how many orders?", *base, "--json").stdout)[-1]
    assert end["verdict"] == {"kind": "backed", "reason": None}


def verdict_of(
    question: str, reads: list[tuple[str, str]], answer: str, facts: tuple[str, ...] = ()
) -> tuple[str, Any]:
    from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
    from minipi.evidence import check_evidence

    items: list[Item] = [Message("user", question)]
    for n, (path, output) in enumerate(reads):
        arguments = f'{{"path": "{path}"}}'
        call = FunctionCall(f"c{n}", "read_file", arguments)
        items += [call, FunctionCallOutput(call.call_id, output)]
    verdict = judge(check_evidence(answer, items), facts=facts, items=items)
    return verdict.kind, verdict.reason


def test_a_named_file_that_leads_on_keeps_the_chain_in_the_question() -> None:
    clues = [
        ("clues/a.txt", "next: clues/b.txt"),
        ("clues/b.txt", "then read hints/c.txt"),
        ("hints/c.txt", "password: 48213"),
    ]
    ask_clues = "Start at clues/a.txt and follow the clues: what is the password?"
    assert verdict_of(ask_clues, clues, "The password is 48213.") == ("backed", None)
    stray = [("clues/a.txt", "nothing here"), ("other/c.txt", "password: 48213")]
    assert verdict_of(ask_clues, stray, "The password is 48213.") == ("weak", "outside_question")
    example = [("config/app.example.toml", "port = 8080")]
    assert verdict_of("config/app.toml 的端口是多少？", example, "端口是 8080。") == (
        "weak",
        "outside_question",
    )
    example_db = [
        ("config/app.toml", 'port = 9339\nname = "orders_5"'),
        ("config/app.example.toml", 'port = 8080\nname = "example_db"'),
    ]
    said = "The port is 9339 and the database is 'example_db'."
    cited = ("port = 9339 (config/app.toml)",)  # guided mode cited only the named file's port
    ask_toml = "In config/app.toml, what are the port and the database name?"
    assert verdict_of(ask_toml, example_db, said, cited) == ("weak", "outside_question")
    found = [("billing/2026/invoice-123.json", '{"total": 4821.5}')]
    assert verdict_of("Find invoice-123.json: its total?", found, "4821.5") == ("backed", None)
    anywhere = [("drafts/a.json", '{"orders": 104}')]
    assert verdict_of("How many orders?", anywhere, "104 orders") == ("backed", None)


def test_an_answer_that_only_repeats_lines_of_a_file_is_weak(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """Asked how many ERROR lines a log has, Qwen2.5-Coder-0.5B answered with one of them:
    every figure of it is in the file, but it does not answer; a sentence that quotes the
    line may (a copy is only whole lines, of two words or more, and punctuation)."""
    (tmp_path / "logs").mkdir()
    log = "2026-11-03 10:21:00 ERROR step 21\n2026-11-04 10:22:00 ERROR step 22\n10:23 ok\n"
    (tmp_path / "logs" / "build.log").write_text(log, encoding="utf-8")
    base = ("--project", str(tmp_path), "--base-url", fake_server.base_url, "--model", "fake-model")
    question = "When did logs/build.log report an ERROR?"
    read = Turn(
        calls=[Call("list_files", {"path": "."}), Call("read_file", {"path": "logs/build.log"})]
    )
    copied = {"kind": "weak", "reason": "copied"}
    for answer, verdict in (
        ("2026-11-03 10:21:00 ERROR step 21, logs/", copied),
        ("2026-11-03 10:21:00 ERROR step 21\n2026-11-04 10:22:00 ERROR step 22", copied),
        (
            "On 2026-11-03 (2026-11-03 10:21:00 ERROR step 21) and the day after.",
            {"kind": "backed", "reason": None},
        ),
    ):
        fake_server.add(read, Turn(answer))
        proc = minipi("ask", question, *base, "--json", env=clean_env())
        end = json_lines(proc.stdout)[-1]
        assert end["verdict"] == verdict, answer
    fake_server.add(read, Turn("2026-11-03 10:21:00 ERROR step 21"))
    proc = minipi("ask", question, *base, env=clean_env())
    assert "[succeeded, weak: the answer only repeats lines of the tool results]" in proc.stderr


def test_a_question_for_a_computed_figure_or_a_left_out_field_is_not_backed(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """Every figure of these answers is in the files, yet the first answers a difference it
    does not state (minipi checks quoted figures, not arithmetic: computed), the second
    leaves out the revenue the question asks for (left_out); the third states each field
    (a date written otherwise counts, and the store the question names needs no repeat)."""
    (tmp_path / "monthly").mkdir()
    (tmp_path / "reports").mkdir()
    for month, orders in (("2026-05", 428), ("2026-07", 667)):
        text = f'{{"month": "{month}", "orders": {orders}}}'
        (tmp_path / "monthly" / f"{month}.json").write_text(text, encoding="utf-8")
    report = json.dumps(
        {
            "meta": {"date": "2026-06-17", "store": "Xiamen"},
            "summary": {"orders": 694, "revenue_yuan": 33600},
        }
    )
    (tmp_path / "reports" / "xiamen.json").write_text(report, encoding="utf-8")
    base = ("--project", str(tmp_path), "--base-url", fake_server.base_url, "--model", "fake-model")

    def verdict(question: str, reads: list[str], answer: str) -> Any:
        calls = [Call("read_file", {"path": path}) for path in reads]
        fake_server.add(Turn(calls=calls), Turn(answer))
        proc = minipi("ask", question, *base, "--json", env=clean_env())
        return json_lines(proc.stdout)[-1]["verdict"]

    months = ["monthly/2026-05.json", "monthly/2026-07.json"]
    compare = "Of the two months in monthly/, which had more orders, and by how many?"
    answer = "2026-07 had more orders: 667 against 428 in 2026-05."
    assert verdict(compare, months, answer) == {"kind": "weak", "reason": "computed"}
    assert verdict("monthly 目录里两个月的订单，哪个月更多？多多少单？", months, answer)[
        "reason"
    ] == ("computed")
    asked = "In reports/, which date is the Xiamen store's report for, and its orders and revenue?"
    short = "The report is for 2026-06-17 and shows 694 orders."
    assert verdict(asked, ["reports/xiamen.json"], short) == {"kind": "weak", "reason": "left_out"}
    whole = "It is for June 17, 2026: 694 orders and a revenue of 33,600 yuan."
    assert verdict(asked, ["reports/xiamen.json"], whole) == {"kind": "backed", "reason": None}
    # in Chinese: SmolLM2-135M gave the date alone, shown as a plain success
    zh = "reports 目录里 Xiamen 门店的日报是哪一天的？订单数和营收各是多少？"
    for answer, reason in (("2026-06-17", "left_out"), ("2026-06-17，694 单，33600 元。", None)):
        assert verdict(zh, ["reports/xiamen.json"], answer)["reason"] == reason, answer


def test_one_wording_of_counting_for_guided_mode_and_the_verdict() -> None:
    """A question guided mode has a search count (``Question.counts``) is the one the run's
    question reads as a count (``minipi.reading.Question.figure``); a quantity a file holds
    is neither: counting is said with the units of a file (lines, rows, entries, times)."""
    from minipi.guided.rank import Question as Ranked
    from minipi.reading import Question

    for counting in (
        "How many lines of logs/app.log say WARN?",
        "logs 目录里有多少条 ERROR？",
        "How often does 'retry' appear in the log?",
        "In how many rows of people.csv is the team Ops?",
    ):
        assert Question.of(counting).figure == "count", counting
        assert Ranked.of(counting).counts, counting
    for held in ("How many units of SKU-7 are left?", "SKU-7 还剩多少件？"):
        assert Question.of(held).figure is None, held
        assert not Ranked.of(held).counts, held


def test_what_the_model_is_told_is_shown_in_the_questions_language(
    fake_server: FakeServer,
) -> None:
    """The notice that minipi refused an answer speaks the run's language, as its summary."""
    fake_server.add(*read_then("订单数为140。"), Turn(RIGHT))
    proc = ask(fake_server, QUESTION, "--evidence", "require")
    assert proc.returncode == 0, proc.stderr
    assert "[提示] 答案有内容没有任何工具结果支持：140（不在任何工具结果中）" in proc.stderr
    fake_server.add(*read_then("There were 140 orders."), Turn("There were 128 orders."))
    proc = ask(fake_server, "How many orders does the daily report list?", "--evidence", "require")
    assert "the answer has claims no tool result backs: 140 (in no tool result)" in proc.stderr
