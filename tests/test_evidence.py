"""The evidence check on the example tasks (tool results made by the real project tools), the
claims it extracts, its JSON shape, its parts (numerals, locators, sources), and that
``import minipi`` does not load it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.evidence import MAX_SOURCES, Evidence, check_evidence, extract_claims
from minipi.evidence.locate import json_pointer, line_column
from minipi.evidence.numerals import fold, parse_chinese, render_chinese
from minipi.evidence.sources import collect_sources
from minipi.files import ProjectFiles, create_project_tools
from support.files import Approvals

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"


def tool_run(
    root: Path,
    question: str,
    calls: list[tuple[str, dict[str, Any]]],
    approve: Approvals | None = None,
) -> list[Item]:
    """The items of a run whose calls the real project tools executed on ``root``."""
    items: list[Item] = [Message("system", "你是助手。9600"), Message("user", question)]
    with ProjectFiles(root) as files:
        tools = {tool.name: tool for tool in create_project_tools(files, approve)}
        for number, (name, arguments) in enumerate(calls, 1):
            result = tools[name].execute(arguments)
            call_id = f"call_{number}"
            items.append(FunctionCall(call_id, name, json.dumps(arguments)))
            items.append(
                FunctionCallOutput(
                    call_id, result.content, is_error=result.is_error, details=result.details
                )
            )
    return items


def daily_run() -> list[Item]:
    return tool_run(
        EXAMPLES / "sample_project",
        QUESTION,
        [
            ("list_files", {"path": "reports"}),
            ("read_file", {"path": "reports/daily-2026-09-06.json"}),
        ],
    )


def test_the_daily_report_answer_is_traced_to_its_three_fields() -> None:
    answer = "这份日报的日期是2026年9月6日，订单数为128，营收为9600元。"
    evidence = check_evidence(answer, daily_run())

    def source(pointer: str, line: int, column: int, start: int, end: int) -> dict[str, Any]:
        return {
            "call_id": "call_2",
            "tool": "read_file",
            "path": "reports/daily-2026-09-06.json",
            "origin": "content",
            "pointer": pointer,
            "line": line,
            "column": column,
            "range": [start, end],
        }

    assert evidence.to_json() == {
        "claims": [
            {
                "text": "2026年9月6日",
                "kind": "date",
                "value": "2026-09-06",
                "unit": None,
                "span": [8, 17],
                "status": "normalized",
                "sources": [source("/date", 2, 12, 13, 23)],
            },
            {
                "text": "128",
                "kind": "number",
                "value": "128",
                "unit": None,
                "span": [22, 25],
                "status": "exact",
                "sources": [source("/orders", 3, 13, 38, 41)],
            },
            {
                "text": "9600元",
                "kind": "number",
                "value": "9600",
                "unit": "元",
                "span": [29, 34],
                "status": "exact",
                "sources": [source("/revenue_yuan", 4, 19, 61, 65)],
            },
        ],
        "supported": 3,
        "unsupported": 0,
        "tool_results": 2,
    }
    for claim in evidence.claims:
        assert answer[slice(*claim.claim.span)] == claim.claim.text
    json.dumps(evidence.to_json())  # the shape is plain JSON


def test_a_wrong_daily_report_answer_names_the_figure_no_result_holds() -> None:
    answer = "日期是2026年9月6日，订单数为182，营收为9,600元。"
    evidence = check_evidence(answer, daily_run())
    assert [c.status for c in evidence.claims] == ["normalized", "unsupported", "normalized"]
    assert (evidence.supported, evidence.unsupported) == (2, 1)
    assert evidence.unsupported_figures() == ("182",)


def test_a_rounded_daily_report_answer_is_supported_as_rounded() -> None:
    evidence = check_evidence("9月6日订单约 130 笔，营收约 9.6k 元。", daily_run())
    assert [(c.claim.text, c.status) for c in evidence.claims] == [
        ("9月6日", "normalized"),
        ("130 笔", "rounded"),
        ("9.6k 元", "rounded"),
    ]
    assert [s.pointer for c in evidence.claims for s in c.sources] == [
        "/date",
        "/orders",
        "/revenue_yuan",
    ]


def test_the_date_of_a_listed_file_name_is_only_a_path() -> None:
    items = tool_run(EXAMPLES / "sample_project", QUESTION, [("list_files", {"path": "reports"})])
    evidence = check_evidence("日报是 2026-09-06 的。", items)
    (claim,) = evidence.claims
    assert claim.status == "path"
    # the source is the file listed (no line: the date is in its name), not the folder
    assert [(s.tool, s.path, s.origin, s.line, s.range) for s in claim.sources] == [
        ("list_files", "reports/daily-2026-09-06.json", "path", None, (14, 24))
    ]
    assert (evidence.supported, evidence.unsupported) == (0, 0)


def treasure_run() -> list[Item]:
    calls = [("read_file", {"path": f"step{n}.txt"}) for n in (1, 2, 3)]
    return tool_run(EXAMPLES / "treasure_hunt", "从 step1.txt 开始寻宝，告诉我完整密码。", calls)


def test_the_treasure_hunt_password_is_derived_from_its_two_quoted_halves() -> None:
    evidence = check_evidence("最终的完整密码是 'AgentLoop'。", treasure_run())
    (claim,) = evidence.claims
    assert (claim.claim.kind, claim.claim.value, claim.status) == ("quote", "AgentLoop", "derived")
    assert [(s.call_id, s.text, s.line, s.range) for s in claim.sources] == [
        ("call_2", "Agent", 1, (18, 23)),
        ("call_3", "Loop", 1, (14, 18)),
    ]
    assert evidence.to_json()["supported"] == 1


def test_the_treasure_hunt_halves_are_exact_and_an_unquoted_word_is_no_claim() -> None:
    answer = "前半部分是 'Agent'，后半部分是 'Loop'，合起来是 AgentLoop，下一步是 step2.txt。"
    evidence = check_evidence(answer, treasure_run())
    assert [(c.claim.text, c.status, c.sources[0].call_id) for c in evidence.claims] == [
        ("'Agent'", "exact", "call_2"),
        ("'Loop'", "exact", "call_3"),
        ("step2.txt", "exact", "call_1"),
    ]


def test_a_wrong_password_is_unsupported() -> None:
    evidence = check_evidence("密码是 'AgentLoops'", treasure_run())
    assert evidence.unsupported_figures() == ("'AgentLoops'",)


def test_the_shelter_answer_makes_no_false_alarm(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "shelter", tmp_path / "shelter")
    calls = [
        ("list_files", {"path": "inbox"}),
        ("read_file", {"path": "inbox/猫咪小花.txt"}),
        ("move_file", {"source": "inbox/猫咪小花.txt", "target": "archive"}),
    ]
    items = tool_run(tmp_path / "shelter", "把猫咪小花送去领养区。", calls, Approvals())
    answer = "已把 inbox/猫咪小花.txt 移到 archive/，它是 2 岁的中华田园猫。"
    evidence = check_evidence(answer, items)
    assert [(c.claim.kind, c.claim.text, c.status) for c in evidence.claims] == [
        ("change", answer, "exact"),  # the sentence: moved, as the move_file call did
        ("path", "inbox/猫咪小花.txt", "exact"),  # listed, read and moved
        ("path", "archive/", "exact"),  # the move's new path is in it
        ("number", "2 岁", "weak"),
        ("quote", "中华田园猫", "exact"),  # a value the read file gives a field: a name
    ]
    assert (evidence.supported, evidence.unsupported, evidence.tool_results) == (4, 0, 3)


EXTRACTED = [
    pytest.param(
        "1. 订单 128\n2. 营收 9600 [3]",
        [("128", "number", "128", None), ("9600", "number", "9600", None)],
        id="markers",
    ),
    pytest.param("① 营收 9600【2】，(1) 见上", [("9600", "number", "9600", None)], id="circled"),
    pytest.param("9,6", [("9", "number", "9", None), ("6", "number", "6", None)], id="9,6"),
    pytest.param(
        "分别为 128，256",
        [("128", "number", "128", None), ("256", "number", "256", None)],
        id="list",
    ),
    pytest.param("3-5 天", [("3", "number", "3", None), ("5 天", "number", "5", "天")], id="range"),
    pytest.param(
        "SKU-0042 和 A-17",
        [("SKU-0042", "identifier", "SKU-0042", None), ("A-17", "identifier", "A-17", None)],
        id="identifiers",
    ),
    pytest.param("a well-known AgentLoop，表现“良好”，一些、统一、几十万", [], id="no-claims"),
    pytest.param("“AgentLoop”", [("“AgentLoop”", "quote", "AgentLoop", None)], id="curly-quote"),
    pytest.param(
        "9.6k、1.2万、约 128、100多",
        [
            ("9.6k", "number", "9600", None),
            ("1.2万", "number", "12000", None),
            ("128", "number", "128", None),
            ("100多", "number", "100", None),
        ],
        id="magnitudes",
    ),
    pytest.param(
        "$9,600、12.5%、百分之十二、1,287 单",
        [
            ("$9,600", "number", "9600", "$"),
            ("12.5%", "number", "12.5", "%"),
            ("百分之十二", "number", "12", "%"),
            ("1,287 单", "number", "1287", "单"),
        ],
        id="units",
    ),
    pytest.param(
        "2026-09-06T10:30:00Z",
        [("2026-09-06", "date", "2026-09-06", None), ("10:30:00Z", "time", "10:30:00", None)],
        id="datetime",
    ),
    pytest.param(
        "9月6日、2026年9月、Sep 6",
        [
            ("9月6日", "date", "--09-06", None),
            ("2026年9月", "date", "2026-09", None),
            ("Sep 6", "date", "--09-06", None),
        ],
        id="partial-dates",
    ),
    pytest.param("2026-02-30", [("2026-02-30", "identifier", "2026-02-30", None)], id="no-date"),
    pytest.param(
        "－１２ 和 +15",
        [("－１２", "number", "-12", None), ("+15", "number", "15", None)],
        id="signs",
    ),
    pytest.param("10点30分", [("10点30分", "time", "10:30", None)], id="zh-time"),
    pytest.param("'9600' 元", [("9600", "number", "9600", None)], id="quoted-figure"),
]


@pytest.mark.parametrize(("answer", "claims"), EXTRACTED)
def test_the_claims_an_answer_makes(answer: str, claims: list[tuple[Any, ...]]) -> None:
    found = extract_claims(answer)
    assert [(c.text, c.kind, c.value, c.unit) for c in found] == claims
    for claim in found:
        assert answer[slice(*claim.span)] == claim.text


def test_weak_claims_are_shown_and_not_looked_up() -> None:
    evidence = check_evidence("2026年共 3 个文件，两个是日报，-5", daily_run())
    assert [(c.claim.text, c.status, c.sources) for c in evidence.claims] == [
        ("2026年", "weak", ()),
        ("3 个", "weak", ()),
        ("两个", "weak", ()),
        ("-5", "weak", ()),
    ]
    assert (evidence.supported, evidence.unsupported) == (0, 0)


@pytest.mark.parametrize(
    ("numeral", "value"),
    [
        ("一百二十八", 128),
        ("九千六百", 9600),
        ("两万", 20000),
        ("一百零八", 108),
        ("十二", 12),
        ("一万二", 12000),
        ("三千五", 3500),
        ("三亿五千万", 350_000_000),
        ("一千零五十", 1050),
        ("五六", None),
        ("二〇二六", None),
        ("百一千", None),
    ],
)
def test_chinese_numerals(numeral: str, value: int | None) -> None:
    assert parse_chinese(numeral) == value


@pytest.mark.parametrize(
    ("number", "numeral"),
    [
        (128, "一百二十八"),
        (9600, "九千六百"),
        (12, "十二"),
        (1005, "一千零五"),
        (20000, "二万"),
        (10005, "一万零五"),
    ],
)
def test_rendered_numerals_read_back(number: int, numeral: str) -> None:
    assert render_chinese(number) == numeral
    assert parse_chinese(numeral) == number


def test_folding_keeps_a_map_to_the_original() -> None:
    folded = fold("营收９，６００元①")
    assert folded.text == "营收9,600元•"
    assert folded.span(2, 7) == (2, 7)
    assert fold("128，256").text == "128、256"
    assert fold("plain ascii").origin is None


POINTED = json.dumps(
    {"a/b": 1, "m~n": {"items": [{"sku": "A-1"}, {"sku": "B-2"}, {"sku": "C-3"}]}, "z": [10, 20]},
    indent=2,
)


@pytest.mark.parametrize(
    ("needle", "pointer"),
    [
        ('"a/b"', "/a~1b"),
        ("1,", "/a~1b"),
        ('"C-3"', "/m~0n/items/2/sku"),
        ('"sku": "B', "/m~0n/items/1/sku"),
        ("20", "/z/1"),
    ],
)
def test_json_pointers(needle: str, pointer: str) -> None:
    assert json_pointer(POINTED, POINTED.index(needle)) == pointer


def test_a_json_cut_short_still_has_pointers_before_the_cut() -> None:
    text = '{\n  "date": "2026-09-06",\n  "rows": [\n    {"orders": 128},\n'
    assert json_pointer(text, text.index("128")) == "/rows/0/orders"
    assert json_pointer("[db]\nhost = 1.2.3.4", 12) is None
    minified = '{"a": 1, "rows": [{"n": 96}, {"note": "cut he'  # cut inside a string
    assert json_pointer(minified, minified.index("1")) == "/a"
    assert json_pointer(minified, minified.index("96")) == "/rows/0/n"
    assert json_pointer(minified, minified.index("cut")) == "/rows/1/note"


def test_line_and_column_are_one_based_code_points() -> None:
    text = "第一行\n营收 9600"
    assert line_column(text, text.index("9600")) == (2, 4)
    assert line_column("9600", 0) == (1, 1)


def test_read_file_notices_are_not_file_text(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 9)))
    items = tool_run(tmp_path, "q", [("read_file", {"path": "a.txt", "limit": 3})])
    output = items[-1]
    assert isinstance(output, FunctionCallOutput)
    assert "offset=4" in output.output  # the notice names 4: not a source of it
    (run_output,) = collect_sources(items).outputs
    assert run_output.origin_at(output.output.index("line 2")) == "content"
    assert run_output.origin_at(output.output.index("[truncated")) is None


def test_search_results_split_into_path_and_content(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/a.json").write_text('{\n\n\n  "x": 96\n}\n')
    items = tool_run(tmp_path, "q", [("search_files", {"query": '"x"'})])
    output = items[-1]
    assert isinstance(output, FunctionCallOutput)
    text = output.output
    (run_output,) = collect_sources(items).outputs
    assert run_output.origin_at(0) == "path"
    assert run_output.origin_at(text.index("96")) == "content"
    assert run_output.origin_at(text.index("4:")) is None


def test_a_ranged_read_gives_the_file_line(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("".join(f"第 {n} 行：订单 {n * 7}\n" for n in range(1, 40)))
    calls = [("read_file", {"path": "log.txt", "offset": 20, "limit": 5})]
    items = tool_run(tmp_path, "第 21 行的订单是多少？", calls)
    (claim,) = check_evidence("订单 147", items).claims
    (source,) = claim.sources
    output = items[-1]
    assert isinstance(output, FunctionCallOutput)
    assert (claim.status, source.line, source.column) == ("exact", 21, 11)
    assert output.output.splitlines()[21 - 20] == "第 21 行：订单 147"


def test_system_and_assistant_text_are_never_sources() -> None:
    items: list[Item] = [
        Message("system", "营收是 9600 元"),
        Message("user", "营收多少？"),
        Message("assistant", "我先读文件，营收大概是 9600。"),
        FunctionCall("c1", "read_file", '{"path": "a.json"}'),
        FunctionCallOutput("c1", '{"orders": 128}'),
    ]
    (claim,) = check_evidence("营收 9600 元", items).claims
    assert (claim.status, claim.sources) == ("unsupported", ())


def test_without_a_user_message_the_whole_history_is_the_run() -> None:
    items: list[Item] = [FunctionCallOutput("orphan", '{"n": 9600}')]
    evidence = check_evidence("9600", items)
    (claim,) = evidence.claims
    assert (claim.status, claim.sources[0].tool, claim.sources[0].pointer) == ("exact", None, "/n")


def test_an_ambiguous_figure_lists_at_most_max_sources() -> None:
    items: list[Item] = [Message("user", "q")]
    for n in range(MAX_SOURCES + 5):
        items.append(FunctionCall(f"c{n}", "read_file", json.dumps({"path": f"{n}.json"})))
        items.append(FunctionCallOutput(f"c{n}", '{"orders": 128}'))
    (claim,) = check_evidence("128", items).claims
    assert claim.status == "ambiguous"
    assert [s.call_id for s in claim.sources] == [f"c{n}" for n in range(MAX_SOURCES)]


def test_the_json_shape_keys_in_order() -> None:
    payload = check_evidence("营收 9,600 元", daily_run()).to_json()
    assert list(payload) == ["claims", "supported", "unsupported", "tool_results"]
    (claim,) = payload["claims"]
    assert list(claim) == ["text", "kind", "value", "unit", "span", "status", "sources"]
    assert list(claim["sources"][0]) == [
        "call_id",
        "tool",
        "path",
        "origin",
        "pointer",
        "line",
        "column",
        "range",
    ]


def test_unsupported_figures_are_listed_once_in_answer_order() -> None:
    evidence = check_evidence("订单 182，营收 9500 元，再说一次 182", daily_run())
    assert evidence.unsupported_figures() == ("182", "9500 元")
    assert evidence.unsupported_figures(limit=1) == ("182",)
    assert evidence.unsupported == 3


def test_the_check_is_pure() -> None:
    items = daily_run()
    before = list(items)
    first = check_evidence("订单 128，营收 9600", items)
    assert check_evidence("订单 128，营收 9600", items) == first
    assert items == before
    assert isinstance(first, Evidence)


def test_the_nearest_value_is_a_hint_only() -> None:
    (claim,) = check_evidence("营收 9500 元", daily_run()).claims
    assert claim.nearest is not None
    assert (claim.nearest.value, claim.nearest.source.pointer) == ("9600", "/revenue_yuan")
    assert claim.to_json()["sources"] == []
    assert Decimal(claim.claim.value) == 9500


def test_import_minipi_does_not_load_the_evidence_check() -> None:
    code = (
        "import sys, minipi, minipi.agent; "
        "print('minipi.evidence.check' in sys.modules, 'decimal' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
