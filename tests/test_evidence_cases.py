"""The evidence check, case by case: an answer, the tool results of its run, and for one claim
of the answer its status and every source with its locator (pointer, line, range).

Each result is built as the real tool would return it (``read_file``: the file text exactly,
then its notice lines; ``list_files``: one path per line, said by ``details["output"] ==
"paths"``; ``search_files``: ``path:line: text``).
An expected source names the result it is in and the text it points at; its range is where
that text stands in the output (the ``nth`` time it occurs), written out by the helper, so a
case fails if the check points anywhere else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.evidence import CheckedClaim, Source, Status, check_evidence

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DAILY = (EXAMPLES / "sample_project/reports/daily-2026-09-06.json").read_text(encoding="utf-8")
DAILY_PATH = "reports/daily-2026-09-06.json"
STEPS = [(EXAMPLES / f"treasure_hunt/step{n}.txt").read_text(encoding="utf-8") for n in (1, 2, 3)]
QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
PATH_TOOLS = ("list_files", "move_file")
"""The file tools whose outputs are one path a line."""
_NOTICE = re.compile(r"\[(?:truncated|note|not searched|search stopped)[^\n]*\]")
_HIT = re.compile(r'("(?:[^"\\\n]|\\.)*"|[^\n]*?):(\d+): ')


def tool_output(
    call_id: str, tool: str, output: str, *, is_error: bool = False
) -> FunctionCallOutput:
    """A result as minipi's tool returns it, with the marks (``details["marks"]``) that tool
    gives its output: the fixture's notice lines, ``no matches`` and line numbers are not
    marked; any other tool's result has none (it is content as a whole)."""
    marks: list[list[Any]] = []
    lines = [(m.start(), m.end()) for m in re.finditer(r"[^\n]+", output)]
    words = [(a, b) for a, b in lines if _NOTICE.fullmatch(output, a, b)]
    if tool in PATH_TOOLS:
        marks = [[a, b, "path"] for a, b in lines if (a, b) not in words]
    elif tool == "read_file":
        end = words[0][0] - 1 if words and words[-1][1] == len(output.rstrip()) else len(output)
        marks = [[0, max(end, 0), "content"]] if not output.startswith("(empty file") else []
    elif tool == "search_files":
        for a, b in lines:
            hit = _HIT.match(output, a, b)
            if hit is not None:
                marks += [[a, hit.end(1), "path"], [hit.end(), b, "content"]]
    else:
        return FunctionCallOutput(call_id, output, is_error=is_error)
    return FunctionCallOutput(call_id, output, is_error=is_error, details={"marks": marks})


@dataclass(frozen=True)
class Result:
    """One tool call of the run and what it returned."""

    tool: str
    arguments: dict[str, Any]
    output: str
    is_error: bool = False


def read(path: str, text: str, *, error: bool = False) -> Result:
    return Result("read_file", {"path": path}, text, error)


def listing(path: str, text: str) -> Result:
    return Result("list_files", {"path": path}, text)


def search(query: str, text: str) -> Result:
    return Result("search_files", {"query": query}, text)


def as_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


@dataclass(frozen=True)
class At:
    """An expected source: the ``nth`` occurrence of ``text`` in result ``call`` (1-based;
    None: the question); ``argument``: in that call's ``path`` argument."""

    call: int | None
    text: str
    pointer: str | None = None
    line: int | None = None
    nth: int = 0
    origin: str = "content"
    argument: bool = False


@dataclass(frozen=True)
class Case:
    answer: str
    results: tuple[Result, ...]
    claim: str
    status: Status
    sources: tuple[At, ...] = ()
    nearest: At | None = None
    question: str = QUESTION
    earlier: tuple[Result, ...] = ()
    tool_results: int | None = None


def history(case: Case) -> list[Item]:
    """An earlier run (if any), then this run: the question, then each call and its result."""
    items: list[Item] = []
    for number, results in ((0, case.earlier), (1, case.results)):
        if number == 1 or results:
            question = case.question if number else "上一个问题"
            items.append(Message("user", question))
        prefix = "call_" if number else "old_"
        for index, result in enumerate(results, 1):
            call_id = f"{prefix}{index}"
            items.append(FunctionCall(call_id, result.tool, json.dumps(result.arguments)))
            items.append(tool_output(call_id, result.tool, result.output, is_error=result.is_error))
        if number == 0 and results:
            items.append(Message("assistant", "上一个回答：9600、128、2026-09-06。"))
    return items


def expected(at: At, case: Case) -> tuple[Any, ...]:
    """(call_id, origin, pointer, line, range, text) of an expected source."""
    if at.call is None:
        where, call_id, origin = case.question, None, "question"
    else:
        result = case.results[at.call - 1]
        where = result.arguments["path"] if at.argument else result.output
        call_id, origin = f"call_{at.call}", at.origin
    start = -1
    for _ in range(at.nth + 1):
        start = where.index(at.text, start + 1)
    return (call_id, origin, at.pointer, at.line, (start, start + len(at.text)), at.text)


def located(source: Source) -> tuple[Any, ...]:
    return (source.call_id, source.origin, source.pointer, source.line, source.range, source.text)


def claim_of(case: Case) -> CheckedClaim:
    evidence = check_evidence(case.answer, history(case))
    if case.tool_results is not None:
        assert evidence.tool_results == case.tool_results
    found = [c for c in evidence.claims if c.claim.text == case.claim]
    texts = [c.claim.text for c in evidence.claims]
    assert len(found) == 1, f"claim {case.claim!r} not found once in {texts}"
    return found[0]


R = read(DAILY_PATH, DAILY)
LIST = listing("reports", DAILY_PATH)
REV = At(1, "9600", "/revenue_yuan", 4)
ORDERS = At(1, "128", "/orders", 3)
DATE = At(1, "2026-09-06", "/date", 2)


def case(id: str, *args: Any, **kwargs: Any) -> Any:
    return pytest.param(Case(*args, **kwargs), id=id)


NUMBERS = [
    case("zh-unit-exact", "营收为9600元。", (R,), "9600元", "exact", (REV,)),
    case("en-plain-exact", "Revenue was 9600 yuan.", (R,), "9600", "exact", (REV,)),
    case("zh-thousands-normalized", "营收 9,600 元", (R,), "9,600 元", "normalized", (REV,)),
    case("fullwidth-digits", "营收９６００元", (R,), "９６００元", "normalized", (REV,)),
    case("fullwidth-thousands", "营收９，６００元", (R,), "９，６００元", "normalized", (REV,)),
    case(
        "fullwidth-in-source",
        "营收 9600 元",
        (read("a.txt", "营收：９６００ 元"),),
        "9600 元",
        "normalized",
        (At(1, "９６００", line=1),),
    ),
    case("zh-numeral-128", "订单一百二十八笔", (R,), "一百二十八笔", "normalized", (ORDERS,)),
    case("zh-numeral-9600", "营收九千六百元", (R,), "九千六百元", "normalized", (REV,)),
    case(
        "zh-numeral-liang-wan",
        "客流两万",
        (read("v.json", as_json({"visitors": 20000})),),
        "两万",
        "normalized",
        (At(1, "20000", "/visitors", 1),),
    ),
    case(
        "zh-numeral-colloquial",
        "会员一万二",
        (read("m.json", as_json({"members": 12000})),),
        "一万二",
        "normalized",
        (At(1, "12000", "/members", 1),),
    ),
    case(
        "zh-numeral-in-source",
        "共 128 笔",
        (read("a.txt", "本日订单一百二十八笔。"),),
        "128 笔",
        "normalized",
        (At(1, "一百二十八", line=1),),
    ),
    case(
        "zh-percent-words",
        "退款率百分之十二",
        (read("r.json", as_json({"refund_rate": 0.12})),),
        "百分之十二",
        "normalized",
        (At(1, "0.12", "/refund_rate", 1),),
    ),
    case(
        "percent-exact",
        "转化率 12.5%",
        (read("r.json", as_json({"rate": "12.5%"})),),
        "12.5%",
        "exact",
        (At(1, "12.5", "/rate", 1),),
    ),
    case(
        "percent-as-fraction",
        "转化率 12.5%",
        (read("r.json", as_json({"conversion": 0.125})),),
        "12.5%",
        "normalized",
        (At(1, "0.125", "/conversion", 1),),
    ),
    case(
        "en-fraction-as-percent",
        "The conversion was 0.125.",
        (read("r.txt", "conversion: 12.5%"),),
        "0.125",
        "normalized",
        (At(1, "12.5", line=1),),
    ),
    case(
        "percent-rounded",
        "转化率 12.5%",
        (read("r.json", as_json({"conversion": 0.1248})),),
        "12.5%",
        "rounded",
        (At(1, "0.1248", "/conversion", 1),),
    ),
    case(
        "negative-exact",
        "环比 -5.2%",
        (read("c.json", as_json({"change": -5.2})),),
        "-5.2%",
        "exact",
        (At(1, "-5.2", "/change", 1),),
    ),
    case(
        "negative-minus-sign",
        "环比 −5.2%",
        (read("c.json", as_json({"change": -5.2})),),
        "−5.2%",
        "normalized",
        (At(1, "-5.2", "/change", 1),),
    ),
    case(
        "sign-differs-unsupported",
        "下降 5.2%",
        (read("c.json", as_json({"change": -5.2})),),
        "5.2%",
        "unsupported",
        nearest=At(1, "-5.2", "/change", 1),
    ),
    case(
        "negative-not-supported-by-positive",
        "环比 -5.2%",
        (read("c.json", as_json({"change": 5.2})),),
        "-5.2%",
        "unsupported",
        nearest=At(1, "5.2", "/change", 1),
    ),
    case(
        "trailing-zeros",
        "营收 9600 元",
        (read("a.json", '{"revenue": 9600.00}'),),
        "9600 元",
        "normalized",
        (At(1, "9600.00", "/revenue", 1),),
    ),
    case(
        "rounds-a-precise-value",
        "均价 128 元",
        (read("p.json", as_json({"avg_price": 127.6})),),
        "128 元",
        "rounded",
        (At(1, "127.6", "/avg_price", 1),),
    ),
    case("scaled-k-centre", "营收约 9.6k", (R,), "9.6k", "rounded", (REV,)),
    case(
        "scaled-k-off-centre",
        "revenue about 9.6k",
        (read("a.json", as_json({"revenue": 9587})),),
        "9.6k",
        "rounded",
        (At(1, "9587", "/revenue", 1),),
    ),
    case(
        "scaled-wan",
        "营收 1.2万",
        (read("a.json", as_json({"revenue": 11800})),),
        "1.2万",
        "rounded",
        (At(1, "11800", "/revenue", 1),),
    ),
    case(
        "scaled-out-of-interval",
        "营收 9.6k",
        (read("a.json", as_json({"revenue": 9700})),),
        "9.6k",
        "unsupported",
        nearest=At(1, "9700", "/revenue", 1),
    ),
    case(
        "scaled-as-written",
        "revenue 9.6k",
        (read("a.md", "| revenue | 9.6k |"),),
        "9.6k",
        "exact",
        (At(1, "9.6k", line=1),),
    ),
    case(
        "approximate-rounded",
        "营收约 9600 元",
        (read("a.json", as_json({"revenue": 9587})),),
        "9600 元",
        "rounded",
        (At(1, "9587", "/revenue", 1),),
    ),
    case("approximate-exact", "about 128 orders", (R,), "128", "exact", (ORDERS,)),
    case(
        "more-than",
        "订单 100多笔",
        (read("a.json", as_json({"orders": 137})),),
        "100多笔",
        "rounded",
        (At(1, "137", "/orders", 1),),
    ),
    case(
        "million",
        "1.2 million users",
        (read("u.json", as_json({"users": 1200000})),),
        "1.2 million",
        "rounded",
        (At(1, "1200000", "/users", 1),),
    ),
    case("dollar-prefix", "Revenue: $9,600.", (R,), "$9,600", "normalized", (REV,)),
    case("rmb-prefix", "营收 RMB 9600", (R,), "RMB 9600", "exact", (REV,)),
    case(
        "search-result-line",
        "营收 9600 元",
        (search("revenue", f'{DAILY_PATH}:4:   "revenue_yuan": 9600'),),
        "9600 元",
        "exact",
        (At(1, "9600", line=4),),  # the line of the file the hit is in
    ),
]

TRAPS = [
    case(
        "9600-not-inside-19600",
        "营收 9600 元",
        (read("a.json", as_json({"last_year": 19600, "revenue": 9600})),),
        "9600 元",
        "exact",
        (At(1, "9600", "/revenue", 1, nth=1),),
    ),
    case(
        "9600-only-inside-19600",
        "营收 9600 元",
        (read("a.json", as_json({"last_year": 19600})),),
        "9600 元",
        "unsupported",
    ),
    case(
        "12-not-inside-128",
        "有 12 家门店",
        (read("a.json", as_json({"orders": 128, "stores": 12})),),
        "12 家",
        "exact",
        (At(1, "12", "/stores", 1, nth=1),),
    ),
    case("12-only-inside-128", "有 12 家门店", (R,), "12 家", "unsupported"),
    case("year-alone-zh", "这是2026年的日报", (R,), "2026年", "weak"),
    case("year-alone-en", "In 2026 the shop opened.", (R,), "2026", "weak"),
    case("small-integer", "共 3 个文件", (R,), "3 个", "weak"),
    case("lone-liang", "读了两个文件", (R,), "两个", "weak"),
    case(
        "figure-only-in-a-file-name",
        "日报的日期是2026年9月6日。",
        (LIST,),
        "2026年9月6日",
        "path",
        (At(1, "2026-09-06", origin="path"),),  # in a listed name: no line
    ),
    case(
        "figure-only-in-a-path-argument",
        "日期是2026年9月6日",
        (read(DAILY_PATH, as_json({"orders": 128})),),
        "2026年9月6日",
        "path",
        (At(1, "2026-09-06", origin="path", argument=True),),
    ),
    case(
        "figure-only-in-the-question",
        "订单数超过 100。",
        (R,),
        "100",
        "from_question",
        (At(None, "100", line=1),),
        question="订单数超过100了吗？",
    ),
    case(
        "question-and-content-content-wins",
        "订单数是 128",
        (R,),
        "128",
        "exact",
        (ORDERS,),
        question="订单数是128吗？",
    ),
    case(
        "two-files-same-value",
        "订单 128 笔",
        (read("a.json", as_json({"orders": 128})), read("b.json", as_json({"orders": 128}))),
        "128 笔",
        "ambiguous",
        (At(1, "128", "/orders", 1), At(2, "128", "/orders", 1)),
    ),
    case(
        "one-file-two-fields",
        "数量 128",
        (read("a.json", '{\n  "orders": 128,\n  "items": [{"qty": 128}]\n}'),),
        "128",
        "ambiguous",
        (At(1, "128", "/orders", 2), At(1, "128", "/items/0/qty", 3, nth=1)),
    ),
    case(
        "9,6-is-two-small-numbers",
        "增长 9,6",
        (read("a.json", as_json({"a": 96, "b": 9.6})),),
        "9",
        "weak",
    ),
    case(
        "12,34-is-not-1234",
        "共 12,34 笔",
        (read("a.json", as_json({"n": 1234})),),
        "34 笔",
        "unsupported",
    ),
    case(
        "full-width-comma-lists-in-source",
        "订单 128 笔",
        (read("a.txt", "两天的订单：128，256 笔"),),
        "128 笔",
        "exact",
        (At(1, "128", line=1),),
    ),
    case(
        "same-file-read-twice-is-one-place",
        "营收 9600 元",
        (R, R),
        "9600 元",
        "exact",
        (REV,),
    ),
    case(
        "error-result-does-not-count",
        "营收 9600 元",
        (read("a.json", "read_file failed: revenue 9600 (code=not_utf8)", error=True),),
        "9600 元",
        "unsupported",
        tool_results=0,
    ),
    case(
        "earlier-run-not-ambiguous",
        "营收 9600 元",
        (read("b.json", as_json({"revenue": 9600})),),
        "9600 元",
        "exact",
        (At(1, "9600", "/revenue", 1),),
        earlier=(R,),
        tool_results=1,
    ),
    case(
        "unsupported-with-nearest-value",
        "营收 9500 元",
        (R,),
        "9500 元",
        "unsupported",
        nearest=REV,
    ),
    case("no-tool-result", "营收 9600 元", (), "9600 元", "unsupported", tool_results=0),
    case(
        "number-inside-identifier",
        "SKU-0042 卖了 42 件",
        (read("s.json", as_json({"sku": "SKU-0042", "qty": 42})),),
        "42 件",
        "exact",
        (At(1, "42", "/qty", 1, nth=1),),
    ),
    case(
        "identifier-in-source-is-no-number",
        "卖了 42 件",
        (read("s.txt", "货号 SKU-0042"),),
        "42 件",
        "unsupported",
    ),
    case(
        "number-glued-to-letters-in-source",
        "卖了 42 件，共 128 个",
        (read("s.txt", "货号 SKU-42，编号 x128、y_128、128_z"),),
        "42 件",
        "unsupported",
    ),
    case(
        "number-glued-to-letters-in-source-2",
        "卖了 42 件，共 128 个",
        (read("s.txt", "货号 SKU-42，编号 x128、y_128、128_z"),),
        "128 个",
        "unsupported",
    ),
    case(
        "truncation-notice-is-not-content",
        "请看第 201 行",
        (
            read(
                "a.json",
                DAILY + "[truncated: 412 more lines; call read_file again with offset=201]",
            ),
        ),
        "201 行",
        "unsupported",
    ),
    case(
        "json-before-a-notice-line",
        "营收 9600 元",
        (read(DAILY_PATH, DAILY + "[note: this file has 2 hard links]"),),
        "9600 元",
        "exact",
        (REV,),
    ),
    case(
        "search-without-matches",
        "营收 9600 元",
        (search("9600", "no matches for '9600'"),),
        "9600 元",
        "unsupported",
    ),
    case(
        "end-of-a-range",
        "运费 200 元",
        (read("f.txt", "运费 100-200 元"),),
        "200 元",
        "exact",
        (At(1, "200", line=1),),
    ),
    case(
        "phone-number-part",
        "是 1234",
        (read("p.txt", "电话 138-1234-5678"),),
        "1234",
        "unsupported",
    ),
    case(
        "minutes-of-a-time",
        "用了 30 分钟",
        (read("t.txt", "开始 10:30"),),
        "30 分钟",
        "unsupported",
    ),
    case("version-part", "版本 1.2", (read("v.txt", "version 1.2.3"),), "1.2", "unsupported"),
]

DATES = [
    case("iso-exact", "日期 2026-09-06", (R,), "2026-09-06", "exact", (DATE,)),
    case("zh-normalized", "日期是2026年9月6日", (R,), "2026年9月6日", "normalized", (DATE,)),
    case("zh-padded", "日期是2026年09月06日", (R,), "2026年09月06日", "normalized", (DATE,)),
    case("slashes", "date 2026/09/06", (R,), "2026/09/06", "normalized", (DATE,)),
    case("dots", "日期 2026.9.6", (R,), "2026.9.6", "normalized", (DATE,)),
    case("month-day-no-year", "9月6日的日报", (R,), "9月6日", "normalized", (DATE,)),
    case("year-month", "2026年9月的日报", (R,), "2026年9月", "normalized", (DATE,)),
    case("han-numerals", "二〇二六年九月六日", (R,), "二〇二六年九月六日", "normalized", (DATE,)),
    case(
        "en-month-day-year",
        "on September 6, 2026",
        (R,),
        "September 6, 2026",
        "normalized",
        (DATE,),
    ),
    case("en-short", "on Sep 6 2026", (R,), "Sep 6 2026", "normalized", (DATE,)),
    case(
        "en-day-month-year", "on 6 September 2026", (R,), "6 September 2026", "normalized", (DATE,)
    ),
    case(
        "english-in-source",
        "日期 2026-09-06",
        (read("r.txt", "Report date: September 6, 2026"),),
        "2026-09-06",
        "normalized",
        (At(1, "September 6, 2026", line=1),),
    ),
    case("wrong-day", "日期是2026年9月7日", (R,), "2026年9月7日", "unsupported"),
    case(
        "source-without-the-year",
        "日期是2026年9月6日",
        (read("r.txt", "日报日期：9月6日"),),
        "2026年9月6日",
        "unsupported",
    ),
    case(
        "inside-a-timestamp",
        "日期 2026-09-06",
        (read("e.json", as_json({"at": "2026-09-06T10:30:00Z"})),),
        "2026-09-06",
        "exact",
        (At(1, "2026-09-06", "/at", 1),),
    ),
    case(
        "compact-in-a-batch-name",
        "日期是2026年9月6日",
        (read("b.txt", "batch 20260906 done"),),
        "2026年9月6日",
        "normalized",
        (At(1, "20260906", line=1),),
    ),
]

TIMES = [
    case(
        "time-exact",
        "10:30 开始",
        (read("t.txt", "任务\n开始 10:30\n"),),
        "10:30",
        "exact",
        (At(1, "10:30", line=2),),
    ),
    case(
        "time-with-seconds",
        "started at 10:30",
        (read("t.txt", "start=10:30:00"),),
        "10:30",
        "normalized",
        (At(1, "10:30:00", line=1),),
    ),
    case(
        "time-zh",
        "10点30分开始",
        (read("t.txt", "开始 10:30"),),
        "10点30分",
        "normalized",
        (At(1, "10:30", line=1),),
    ),
    case(
        "time-padding",
        "9:05 结束",
        (read("t.txt", "结束 09:05"),),
        "9:05",
        "normalized",
        (At(1, "09:05", line=1),),
    ),
    case(
        "time-of-a-timestamp",
        "at 2026-09-06T10:30:00Z",
        (read("e.json", as_json({"at": "2026-09-06T10:30:00Z"})),),
        "10:30:00Z",
        "exact",
        (At(1, "10:30:00", "/at", 1),),
    ),
    case(
        "time-zh-in-source",
        "10:30 开始",
        (read("t.txt", "上午10点30分开始"),),
        "10:30",
        "normalized",
        (At(1, "10点30分", line=1),),
    ),
    case("time-wrong", "10:35 开始", (read("t.txt", "开始 10:30"),), "10:35", "unsupported"),
]

TEXTS = [
    case(
        "identifier-exact",
        "在货架 A-17 上",
        (read("s.txt", "货架 A-17 空"),),
        "A-17",
        "exact",
        (At(1, "A-17", line=1),),
    ),
    case(
        "identifier-case",
        "code blueharbor42",
        (read("c.txt", "code: BlueHarbor42"),),
        "blueharbor42",
        "normalized",
        (At(1, "BlueHarbor42", line=1),),
    ),
    case(
        "identifier-width",
        "货号ＳＫＵ－００４２",
        (read("c.txt", "sku SKU-0042"),),
        "ＳＫＵ－００４２",
        "normalized",
        (At(1, "SKU-0042", line=1),),
    ),
    case(
        "identifier-never-fuzzy",
        "货号 SKU-0043",
        (read("c.txt", "sku SKU-0042"),),
        "SKU-0043",
        "unsupported",
    ),
    case(
        "identifier-boundaries",
        "在货架 A-17 上",
        (read("s.txt", "XA-17 A-170 A-17-B"),),
        "A-17",
        "unsupported",
    ),
    case(
        "identifier-json-key",
        "字段 revenue_yuan",
        (R,),
        "revenue_yuan",
        "exact",
        (At(1, "revenue_yuan", "/revenue_yuan", 4),),
    ),
    case(
        "identifier-only-listed",
        "见 daily-2026-09-06.json",
        (LIST,),
        "daily-2026-09-06.json",
        "exact",
        (At(1, "daily-2026-09-06.json", origin="path"),),
    ),
    case(
        "quote-exact",
        "前半部分是 'Agent'",
        (read("step2.txt", STEPS[1]),),
        "'Agent'",
        "exact",
        (At(1, "Agent", line=1),),
    ),
    case(
        "quote-derived-from-two-pieces",
        "最终的完整密码是 'AgentLoop'。",
        tuple(read(f"step{n}.txt", STEPS[n - 1]) for n in (1, 2, 3)),
        "'AgentLoop'",
        "derived",
        (At(2, "Agent", line=1), At(3, "Loop", line=1)),
    ),
    case(
        "quote-not-derivable",
        "密码是 'AgentLoops'",
        tuple(read(f"step{n}.txt", STEPS[n - 1]) for n in (1, 2, 3)),
        "'AgentLoops'",
        "unsupported",
    ),
    case(
        "backticks",
        "下一步读 `step2.txt`",
        (read("step1.txt", STEPS[0]),),
        "step2.txt",
        "exact",
        (At(1, "step2.txt", line=1),),
    ),
    case(
        "corner-brackets",
        "门店「北京朝阳店」",
        (read("s.json", as_json({"store": "北京朝阳店"})),),
        "「北京朝阳店」",
        "exact",
        (At(1, "北京朝阳店", "/store", 1),),
    ),
    case(
        "digit-groups-as-written",
        "host 192.168.1.10",
        (read("c.ini", "[db]\nhost = 192.168.1.10"),),
        "192.168.1.10",
        "exact",
        (At(1, "192.168.1.10", line=2),),
    ),
]


@pytest.mark.parametrize("case", NUMBERS + TRAPS + DATES + TIMES + TEXTS)
def test_claim_status_and_sources(case: Case) -> None:
    checked = claim_of(case)
    assert checked.status == case.status
    assert [located(s) for s in checked.sources] == [expected(a, case) for a in case.sources]
    if case.nearest is None:
        assert checked.nearest is None
    else:
        assert checked.nearest is not None
        assert located(checked.nearest.source) == expected(case.nearest, case)
        assert checked.nearest.value == case.nearest.text


def test_the_table_is_large_enough() -> None:
    assert len(NUMBERS + TRAPS + DATES + TIMES + TEXTS) >= 60
