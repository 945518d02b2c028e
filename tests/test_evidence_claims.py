"""Issue 21's red team, evidence side: claims beyond figures (paths, changes), a
conversation's reads, sources as the tools marked them (never an argument echoed back), and
every numeral form; each case as minipi's real file tools return it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.evidence import check_evidence
from minipi.files import ProjectFiles, create_project_tools
from support.files import Approvals


def tool_run(
    root: Path, question: str, calls: list[tuple[str, dict[str, Any]]], *, first: int = 1
) -> list[Item]:
    """A question and the results the real project tools gave to its calls on ``root``."""
    items: list[Item] = [Message("user", question)]
    with ProjectFiles(root) as files:
        tools = {tool.name: tool for tool in create_project_tools(files, Approvals())}
        for number, (name, arguments) in enumerate(calls, first):
            result = tools[name].execute(arguments)
            items.append(FunctionCall(f"call_{number}", name, json.dumps(arguments)))
            items.append(
                FunctionCallOutput(
                    f"call_{number}",
                    result.content,
                    is_error=result.is_error,
                    details=result.details,
                )
            )
    return items


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/daily.json").write_text(
        '{\n  "date": "2026-09-06",\n  "orders": 128,\n  "revenue_yuan": 7000\n}\n'
    )
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox/猫咪小花.txt").write_text("小花，2 岁\n")
    return tmp_path


def statuses(answer: str, items: list[Item]) -> list[tuple[str, str, str]]:
    return [(c.claim.kind, c.claim.text, c.status) for c in check_evidence(answer, items).claims]


def test_a_search_that_found_nothing_echoes_its_query_but_is_no_source(shop: Path) -> None:
    items = tool_run(shop, "营收是多少？", [("search_files", {"query": "9600"})])
    assert "9600" in items[-1].output  # type: ignore[union-attr]
    assert statuses("营收 9600 元", items) == [("number", "9600 元", "unsupported")]


def test_any_tools_echo_of_its_arguments_is_no_source() -> None:
    """An MCP tool that says "no rows for 9600": the model wrote 9600, the tool repeated it."""
    items: list[Item] = [
        Message("user", "营收是多少？"),
        FunctionCall("c1", "db_lookup", json.dumps({"where": {"revenue": 9600}})),
        FunctionCallOutput("c1", "no rows where revenue = 9600; total rows 128"),
    ]
    assert statuses("营收 9600 元，共 128 行", items) == [
        ("number", "9600 元", "unsupported"),
        ("number", "128 行", "exact"),
    ]


def test_a_file_named_like_a_search_hit_is_a_path_not_content(shop: Path) -> None:
    (shop / "reports/reports:1: 9600.txt").write_text("nothing here\n")
    items = tool_run(shop, "营收是多少？", [("search_files", {"query": "reports:"})])
    assert "reports:1: 9600.txt (file name)" in items[-1].output  # type: ignore[union-attr]
    (claim,) = check_evidence("营收 9600 元", items).claims
    assert claim.status == "path"
    assert not claim.supported


def test_a_directory_named_like_a_hit_in_a_listing_is_a_path(shop: Path) -> None:
    (shop / "a.json:3: 9600").mkdir()
    items = tool_run(shop, "营收是多少？", [("list_files", {"path": "."})])
    (claim,) = check_evidence("营收 9600 元", items).claims
    assert (claim.status, claim.sources[0].origin) == ("path", "path")


def test_a_figure_only_in_the_question_or_a_file_name_is_not_supported(shop: Path) -> None:
    (shop / "reports/9600.txt").write_text("x\n")
    calls = [("list_files", {"path": "reports"}), ("read_file", {"path": "reports/daily.json"})]
    items = tool_run(shop, "营收是 9600 吗？订单 555 笔？", calls)
    evidence = check_evidence("是的，营收 9600 元，订单 555 笔", items)
    assert [(c.claim.text, c.status) for c in evidence.claims] == [
        ("9600 元", "path"),
        ("555 笔", "from_question"),
    ]
    assert evidence.unsupported == 0  # neither is unsupported, and neither is support:
    assert [c.claim.text for c in evidence.not_supported()] == ["9600 元", "555 笔"]
    assert evidence.examined_all


def test_a_path_the_answer_names_must_have_been_shown(shop: Path) -> None:
    calls = [("list_files", {"path": "."}), ("list_files", {"path": "reports"})]
    items = tool_run(shop, "项目里有哪些文件？", calls)
    answer = "有 reports/daily.json、reports/ 和 inbox/，还有 README.md 与 src/Main.java。"
    assert [(k, t, s) for k, t, s in statuses(answer, items)] == [
        ("path", "reports/daily.json", "exact"),
        ("path", "reports/", "exact"),
        ("path", "inbox/", "exact"),
        ("path", "README.md", "unsupported"),
        ("path", "src/Main.java", "unsupported"),
    ]


def test_a_file_name_glued_to_chinese_is_found(shop: Path) -> None:
    items = tool_run(shop, "小花在哪？", [("list_files", {"path": "inbox"})])
    (claim,) = check_evidence("档案文件猫咪小花.txt", items).claims
    assert (claim.claim.kind, claim.status, claim.sources[0].text) == (
        "path",
        "exact",
        "猫咪小花.txt",
    )


def test_a_claimed_move_that_no_tool_made_is_flagged(shop: Path) -> None:
    calls = [("list_files", {"path": "inbox"}), ("read_file", {"path": "inbox/猫咪小花.txt"})]
    items = tool_run(shop, "把小花的档案归档。", calls)
    evidence = check_evidence("小花的档案已被移动到 archive 目录中。", items)
    (claim,) = evidence.claims
    assert (claim.claim.kind, claim.status) == ("change", "unsupported")
    moved = "I moved inbox/猫咪小花.txt to archive."
    assert ("change", moved, "unsupported") in statuses(moved, items)


def test_a_move_the_tool_made_supports_the_sentence_saying_so(shop: Path) -> None:
    calls = [("move_file", {"source": "inbox/猫咪小花.txt", "target": "reports"})]
    items = tool_run(shop, "把小花的档案归档。", calls)
    (claim,) = check_evidence("小花的档案已归档。", items).claims
    assert (claim.claim.kind, claim.status, claim.sources[0].tool) == (
        "change",
        "exact",
        "move_file",
    )
    (deleted,) = check_evidence("小花的档案已删除。", items).claims  # not what move_file did
    assert deleted.status == "unsupported"
    assert check_evidence("我没有移动任何文件，可以帮你移动吗？", items).claims == ()


def test_an_earlier_questions_move_backs_only_a_sentence_naming_its_file(shop: Path) -> None:
    """A resumed task or a chat follow-up may say what question 1 moved; an earlier move of
    the cat cannot back a claimed move of anything else."""
    (shop / "inbox/狗狗豆豆.txt").write_text("豆豆，3 岁\n")
    calls = [("move_file", {"source": "inbox/猫咪小花.txt", "target": "reports"})]
    first = tool_run(shop, "把小花的档案归档。", calls)
    items = [*first, Message("assistant", "好了。"), Message("user", "那狗狗豆豆呢？")]
    (cat,) = [
        c
        for c in check_evidence("猫咪小花的档案已归档。", items).claims
        if c.claim.kind == "change"
    ]
    (dog,) = [
        c
        for c in check_evidence("狗狗豆豆的档案已归档。", items).claims
        if c.claim.kind == "change"
    ]
    assert (cat.status, dog.status) == ("exact", "unsupported")


def test_a_follow_up_is_traced_to_what_question_1_read(shop: Path) -> None:
    first = tool_run(shop, "日报里有什么？", [("read_file", {"path": "reports/daily.json"})])
    items = [*first, Message("assistant", "订单 128。"), Message("user", "订单数多少？")]
    evidence = check_evidence("订单 128 笔，营收 9600 元，见 README.md", items)
    orders, revenue, readme = evidence.claims
    (source,) = orders.sources
    assert (orders.status, source.question, source.path, source.line) == (
        "exact",
        1,
        "reports/daily.json",
        3,
    )
    assert source.to_json()["question"] == 1
    assert (revenue.status, readme.status) == ("unsupported", "unsupported")
    assert evidence.tool_results == 0  # this question made no call


def test_this_questions_read_is_preferred_to_an_earlier_one(shop: Path) -> None:
    first = tool_run(shop, "q1", [("read_file", {"path": "reports/daily.json"})])
    (shop / "today.json").write_text('{"orders": 128}\n')
    second = tool_run(shop, "q2", [("read_file", {"path": "today.json"})], first=2)
    (claim,) = check_evidence("订单 128", [*first, *second]).claims
    assert (claim.status, [(s.path, s.question) for s in claim.sources]) == (
        "exact",
        [("today.json", None)],
    )


@pytest.mark.parametrize(
    "written",
    ["玖仟陆佰", "九六〇〇", "٩٦٠٠", "۹۶۰۰", "९६००", "9\u200b600", "96\u200d00", "9\ufeff600"],
)
def test_every_numeral_form_is_read_and_flagged(shop: Path, written: str) -> None:
    items = tool_run(shop, "营收？", [("read_file", {"path": "reports/daily.json"})])
    (claim,) = check_evidence(f"营收 {written} 元", items).claims  # the file says 7000
    assert (claim.claim.value, claim.status) == ("9600", "unsupported")


@pytest.mark.parametrize("written", ["壹佰贰拾捌", "一二八〇", "١٢٨", "1\u200b28"])
def test_every_numeral_form_is_read_and_traced(shop: Path, written: str) -> None:
    items = tool_run(shop, "订单？", [("read_file", {"path": "reports/daily.json"})])
    claims = check_evidence(f"订单 {written} 笔", items).claims
    expected = "1280" if "〇" in written else "128"
    assert [(c.claim.value, c.supported) for c in claims] == [(expected, expected == "128")]


@pytest.mark.parametrize(
    ("written", "status"),
    [
        ("玖仟陆佰", "normalized"),
        ("九六〇〇", "normalized"),
        ("九六零零", "normalized"),
        ("٩٦٠٠", "normalized"),
        ("۹۶۰۰", "normalized"),
        ("९६००", "normalized"),
        ("9\u200b600", "normalized"),
        ("9\u200b\u200d6,00\ufeff0", "unsupported"),  # 96,000: another number
        ("96\u200d00", "normalized"),
    ],
)
def test_a_file_writes_its_numerals_in_every_form_and_they_are_read(
    shop: Path, written: str, status: str
) -> None:
    """The output side reads what the answer side reads: a report whose revenue is written
    玖仟陆佰 or ٩٦٠٠ backs "9600", pointing at the characters the file holds."""
    (shop / "r.txt").write_text(f"营收：{written} 元\n订单：128\n", encoding="utf-8")
    items = tool_run(shop, "营收？", [("read_file", {"path": "r.txt"})])
    (claim,) = check_evidence("营收 9600 元", items).claims
    assert claim.status == status
    if status != "unsupported":
        (source,) = claim.sources
        assert (source.path, source.line, source.text) == ("r.txt", 1, written)


def test_a_number_next_to_another_in_another_form_is_not_read_into_it(shop: Path) -> None:
    (shop / "r.txt").write_text("营收：٩٦٠٠٠ 元\n编号 9\u200b6001\n", encoding="utf-8")
    items = tool_run(shop, "营收？", [("read_file", {"path": "r.txt"})])
    (claim,) = check_evidence("营收 9600 元", items).claims
    assert claim.status == "unsupported"  # 96000 and 96001, not 9600


def test_a_date_in_chinese_digits_with_zeros_is_read(shop: Path) -> None:
    items = tool_run(shop, "日期？", [("read_file", {"path": "reports/daily.json"})])
    (claim,) = check_evidence("日期是二〇二六年九月六日", items).claims
    assert (claim.claim.value, claim.status) == ("2026-09-06", "normalized")


def test_a_duplicate_key_points_at_the_value_the_parser_kept(shop: Path) -> None:
    (shop / "dup.json").write_text('{"revenue": 9600, "orders": 128, "revenue": 7000}\n')
    items = tool_run(shop, "营收？", [("read_file", {"path": "dup.json"})])
    kept, dropped = (check_evidence(a, items).claims[0] for a in ("7000", "9600"))
    assert kept.sources[0].pointer == "/revenue"
    assert dropped.sources[0].pointer is None  # never /revenue: json.loads gives 7000 there


def test_a_cut_output_ends_its_content_where_the_loops_notice_begins() -> None:
    text = (
        '{"orders": 128, "n": 1}'[:15] + "\n[output cut: showing the first 15 of 9600 characters]"
    )
    items: list[Item] = [
        Message("user", "q"),
        FunctionCall("c1", "read_file", '{"path": "a.json"}'),
        FunctionCallOutput("c1", text, details={"marks": [[0, 23, "content"]], "cut_at": 15}),
    ]
    assert [(c.claim.text, c.status) for c in check_evidence("128 和 9600", items).claims] == [
        ("128", "exact"),
        ("9600", "unsupported"),
    ]
