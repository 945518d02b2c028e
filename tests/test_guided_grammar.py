"""The facts an answer may cite and the GBNF grammar of guided replies (``guided_grammar``).

The grammar is data (``Grammar``); ``matches`` below runs text through the same rules that
``Grammar.gbnf()`` renders for llama.cpp, so what is asserted here is what the engine enforces
(that llama.cpp reads the rendering is asserted by ``test_guided_engine.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, JsonObject, Message, ToolSpec
from minipi.files import ProjectFiles, create_project_tools
from minipi.guided.grammar import (
    MAX_PICKS,
    Chars,
    Facts,
    Grammar,
    digit_literals,
    guided_facts,
    guided_grammar,
)
from minipi.guided.schema import guided_schema

REPORT = "reports/daily-2026-09-06.json"
DAILY_JSON = '{\n  "date": "2026-09-06",\n  "orders": 128,\n  "revenue_yuan": 9600\n}'
QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"


def matches(grammar: Grammar, text: str) -> bool:
    """Whether ``grammar`` (from ``root``) derives exactly ``text``."""

    @cache
    def ends(name: str, start: int) -> frozenset[int]:
        found: set[int] = set()
        for alternative in grammar.rules[name]:
            positions = {start}
            for symbol in alternative:
                positions = {end for p in positions for end in step(symbol, p)}
            found |= positions
        return frozenset(found)

    def step(symbol: object, at: int) -> frozenset[int]:
        if isinstance(symbol, str):
            return frozenset((at + len(symbol),)) if text.startswith(symbol, at) else frozenset()
        if isinstance(symbol, Chars):
            ok = at < len(text) and symbol.matches(text[at])
            return frozenset((at + 1,)) if ok else frozenset()
        return ends(symbol.name, at)  # type: ignore[attr-defined]

    return len(text) in ends("root", 0)


def call(name: str, arguments: JsonObject, call_id: str) -> FunctionCall:
    return FunctionCall(call_id, name, json.dumps(arguments))


def daily(question: str = QUESTION) -> list[Item]:
    """The README task's history up to the answer: list ., list reports, read the report."""
    return [
        Message("user", question),
        call("list_files", {"path": "."}, "c1"),
        FunctionCallOutput(
            "c1", "reports/", details={"choices": {"dir": ["reports"]}, "output": "paths"}
        ),
        call("list_files", {"path": "reports"}, "c2"),
        FunctionCallOutput(
            "c2", REPORT, details={"choices": {"file": [REPORT]}, "output": "paths"}
        ),
        call("read_file", {"path": REPORT}, "c3"),
        FunctionCallOutput("c3", DAILY_JSON),
    ]


def read(path: str, text: str, call_id: str) -> list[Item]:
    """A read_file call and its result, marked as the tool marks it: the file's text is
    content, a notice line after it (``[truncated: …]``) is not."""
    content = text.split("\n[", 1)[0]
    marks = [[0, len(content), "content"]]
    output = FunctionCallOutput(call_id, text, details={"marks": marks})
    return [call("read_file", {"path": path}, call_id), output]


def answer(facts: Sequence[str], text: str) -> str:
    """A reply in the grammar's one layout (that of ``json.dumps``)."""
    return json.dumps({"facts": list(facts), "answer": text}, ensure_ascii=False)


@pytest.fixture
def specs(tmp_path: Path) -> list[ToolSpec]:
    with ProjectFiles(tmp_path) as files:
        return [t.spec() for t in create_project_tools(files)]


# --- the facts ---------------------------------------------------------------------------


def test_the_daily_report_gives_its_leaves_then_the_listed_paths() -> None:
    facts = guided_facts(daily())
    assert facts.content == ("date: 2026-09-06", "orders: 128", "revenue_yuan: 9600")
    assert facts.paths == (REPORT, "reports/")  # newest listing first
    # the Chinese question shares no word with the English keys, and no translation is
    # guessed: no fact leads, any may be the first pick
    assert facts.leading == 0
    assert dict(facts.origins) == dict.fromkeys(facts.content, REPORT)


def test_newest_results_first_and_content_before_paths() -> None:
    items = [
        Message("user", "q"),
        *read("a.txt", "alpha 1\nbeta 2", "c1"),
        call("list_files", {"path": "."}, "c2"),
        FunctionCallOutput("c2", "a.txt\nb.txt", details={"output": "paths"}),
        *read("b.txt", "gamma 3", "c3"),
    ]
    facts = guided_facts(items)
    assert facts.all == ("gamma 3", "alpha 1", "beta 2", "a.txt", "b.txt")


def test_facts_sharing_words_with_the_question_lead() -> None:
    items = [
        Message("user", "inbox 里哪只宠物爱晒太阳？"),
        *read("inbox/a.txt", "名字：猫咪小花\n性格：亲人，爱晒太阳", "c1"),
        *read("inbox/b.txt", "名字：狗狗旺财\n性格：活泼，爱散步", "c2"),
    ]
    facts = guided_facts(items)
    assert facts.content[0] == "性格：亲人，爱晒太阳"
    assert facts.leading == 1
    assert facts.content[1:] == ("名字：狗狗旺财", "性格：活泼，爱散步", "名字：猫咪小花")
    english = guided_facts(daily("What revenue does the daily report in reports/ show?"))
    assert english.content[: english.leading] == ("revenue_yuan: 9600",)


def test_successful_results_newest_question_first_and_no_notices_are_facts() -> None:
    items = [
        Message("user", "first question"),
        *read("old.txt", "old 1", "c0"),
        Message("user", "q"),
        call("read_file", {"path": "gone.txt"}, "c1"),
        FunctionCallOutput("c1", "error [not_found]: gone.txt 404", is_error=True),
        *read("a.txt", "kept 7\n[truncated: 12 more lines; call again with offset=3]", "c2"),
        call("search_files", {"query": "x"}, "c3"),
        FunctionCallOutput(
            "c3",
            "b.txt:4: found 8 here\nc.txt:9: other 5",
            details={
                "marks": [[0, 5, "path"], [9, 21, "content"], [22, 27, "path"], [31, 38, "content"]]
            },
        ),
    ]
    facts = guided_facts(items)
    # this question's results first (search text, not its line), then an earlier question's
    assert facts.content == ("found 8 here", "other 5", "kept 7", "old 1")
    assert facts.paths == ("b.txt", "c.txt")  # where the search found it: a path
    assert dict(facts.origins) == {
        "kept 7": "a.txt",
        "old 1": "old.txt",
    }  # files read, not searched


def test_json_values_are_verbatim_or_left_out() -> None:
    document = '{"price": 1.50, "big": 1e3, "ok": true, "none": null, "quote": "a\\"b",\n'
    document += ' "items": [{"sku": "SKU-0042", "qty": 3}, 7], "nested": {"deep": {"x": "y"}}}'
    facts = guided_facts([Message("user", "q"), *read("d.json", document, "c1")])
    assert facts.content == (
        "price: 1.50",
        "big: 1e3",
        "ok: true",
        "none: null",
        "sku: SKU-0042",
        "qty: 3",
        "items: 7",
        "x: y",
    )  # the escaped string is not in the document as written: left out


def test_a_deep_or_broken_json_document_falls_back_to_lines() -> None:
    deep = "[" * 5000 + "]" * 5000  # json.loads raises RecursionError: read as a line
    assert guided_facts([Message("user", "q"), *read("deep.json", deep, "c1")]).content == (
        "[" * 80 + "…",
    )
    broken = '{"orders": 128,\n"revenue'
    facts = guided_facts([Message("user", "q"), *read("b.json", broken, "c1")])
    assert facts.content == ('{"orders": 128,', '"revenue')


def test_bounds_and_cuts_never_split_a_figure() -> None:
    line = "营收合计 " + "x" * 3 + " 96001234 元 end"
    facts = guided_facts([Message("user", "q"), *read("a.txt", line, "c1")], width=12)
    assert facts.content == ("营收合计 xxx…",)  # the cut falls before the number, not in it
    many = "\n".join(f"line {n}" for n in range(50))
    listed: list[Item] = [
        call("list_files", {"path": "."}, "c2"),
        FunctionCallOutput("c2", "a.txt", details={"output": "paths"}),
    ]
    items: list[Item] = [Message("user", "q"), *read("a.txt", many, "c1"), *listed]
    bounded = guided_facts(items, limit=10)
    assert len(bounded.all) == 10
    assert bounded.paths == ()  # content first: the paths are cut first
    assert bounded.content == tuple(f"line {n}" for n in range(10))
    assert len(guided_facts(items, limit=51).paths) == 1
    one_token = "9" * 200
    assert guided_facts([Message("user", "q"), *read("n.txt", one_token, "c1")]).content == ()


def test_every_fact_is_in_a_result() -> None:
    """No fact outside the results: each is an output's text (a line, a path), or a key and
    a value that both stand in the output; a cut one is a prefix of such a text."""
    texts = [DAILY_JSON, "reports/", REPORT, "名字：猫咪小花\n性格：亲人，爱晒太阳"]
    items: list[Item] = [*daily(), *read("a.txt", texts[-1], "c9")]
    for fact in guided_facts(items).all:
        key, _, value = fact.partition(": ")
        assert any(fact in t or (key in t and value and value in t) for t in texts), fact


def test_digit_literals_are_the_tokens_with_digits() -> None:
    facts = ("date: 2026-09-06", "revenue_yuan: 9600", "线索2：读 step3.txt", "no digits")
    assert digit_literals(facts) == ("2026-09-06", "9600", "2", "step3.txt")


# --- the grammar -------------------------------------------------------------------------


def facts_grammar(specs: Sequence[ToolSpec], items: Sequence[Item], form: str = "facts") -> Grammar:
    schema = guided_schema(specs, items)
    return guided_grammar(schema, guided_facts(items), form)  # type: ignore[arg-type]


def test_facts_are_an_ordered_subset(specs: Sequence[ToolSpec]) -> None:
    grammar = facts_grammar(specs, daily())
    date, orders, revenue = "date: 2026-09-06", "orders: 128", "revenue_yuan: 9600"
    assert matches(grammar, answer([date, orders, revenue], "9600 元"))
    assert matches(grammar, answer([date, revenue, REPORT], "x"))  # a path may follow content
    assert matches(grammar, answer([revenue], "x"))  # no fact leads: any is a first pick
    assert not matches(grammar, answer([revenue, date], "x"))  # out of order
    assert not matches(grammar, answer([date, date], "x"))  # twice
    assert not matches(grammar, answer([date, orders, date], "x"))
    assert not matches(grammar, answer([orders, REPORT, date], "x"))
    assert not matches(grammar, answer([], "x"))  # at least one
    assert not matches(grammar, answer([REPORT], "x"))  # the first pick is content
    assert not matches(grammar, answer(["orders: 129"], "x"))  # never a fact not offered
    assert not matches(grammar, answer([date], ""))  # the text is not empty
    assert not matches(grammar, '{"answer": "x"}')  # facts come first


def test_at_most_max_picks_facts(specs: Sequence[ToolSpec]) -> None:
    text = "\n".join(f"line {n}" for n in range(MAX_PICKS + 2))
    items = [Message("user", "q"), *read("a.txt", text, "c1")]
    grammar = facts_grammar(specs, items)
    lines = [f"line {n}" for n in range(MAX_PICKS + 2)]
    assert matches(grammar, answer(lines[:MAX_PICKS], "x"))
    assert matches(grammar, answer(lines[2 : 2 + MAX_PICKS], "x"))
    assert not matches(grammar, answer(lines[: MAX_PICKS + 1], "x"))


def test_the_first_pick_comes_from_the_leading_facts(specs: Sequence[ToolSpec]) -> None:
    items = daily("What revenue does the daily report in reports/ show?")
    grammar = facts_grammar(specs, items)
    assert matches(grammar, answer(["revenue_yuan: 9600", REPORT], "x"))
    assert not matches(grammar, answer(["date: 2026-09-06"], "x"))
    # only what bears on the question is cited: the date and orders do not, here
    assert not matches(grammar, answer(["revenue_yuan: 9600", "date: 2026-09-06"], "x"))


def test_the_latest_or_first_stamp_the_question_asks_for_ranks_first() -> None:
    log = "\n".join(
        [
            "2026-01-14 08:01:00 INFO ok",
            "2026-01-14 08:07:00 ERROR job failed code=E1",
            "2026-01-14 08:09:00 ERROR job failed code=E2",
        ]
    )
    first = guided_facts(
        [Message("user", "When did the first ERROR happen?"), *read("w.log", log, "c")]
    )
    assert first.content[0] == "2026-01-14 08:07:00 ERROR job failed code=E1"
    assert "2026-01-14 08:01:00 INFO ok" not in first.citable  # shares no word, no cue
    changes = "# Changelog\n## 1.2.0 - 2026-03-01\n## 1.10.0 - 2026-05-02\n## 1.9.1 - 2026-04-01"
    latest = guided_facts(
        [Message("user", "CHANGELOG.md 里最新的版本是多少?"), *read("CHANGELOG.md", changes, "c")]
    )
    assert latest.content[0] == "## 1.10.0 - 2026-05-02"  # dates compared first, then versions


def test_the_tool_branches_allow_what_the_schema_allows(specs: Sequence[ToolSpec]) -> None:
    items: list[Item] = [
        Message("user", "q"),
        call("list_files", {"path": "."}, "c1"),
        FunctionCallOutput(
            "c1",
            "a.txt\nd/",
            details={"choices": {"file": ["a.txt"], "dir": ["d"]}, "output": "paths"},
        ),
    ]
    schema = guided_schema(specs, items, free_text=True)
    grammar = guided_grammar(schema, guided_facts(items), "facts")
    validator = Draft202012Validator(schema)
    candidates: list[JsonObject] = [
        {"tool": tool, "arguments": {"path": path}}
        for tool in ("list_files", "read_file", "move_file")
        for path in (".", "d", "a.txt", "b.txt")
    ]
    candidates += [
        {"tool": "search_files", "arguments": {"query": "orders 128"}},
        {"tool": "search_files", "arguments": {"query": 5}},
        {"answer": "a.txt"},  # the plain answer branch is replaced by the facts one
    ]
    for reply in candidates:
        expected = validator.is_valid(reply) and "answer" not in reply
        assert matches(grammar, json.dumps(reply, ensure_ascii=False)) is expected, reply
    assert matches(grammar, answer(["a.txt"], "一个文件"))  # only paths: any may lead
    assert not matches(grammar, '{"tool":"read_file","arguments":{"path":"a.txt"}}')  # layout


def test_digits_come_only_from_the_results(specs: Sequence[ToolSpec]) -> None:
    grammar = facts_grammar(specs, daily(), "digits")
    assert matches(grammar, '{"answer": "日期 2026-09-06，128 笔，营收 9600 元"}')
    assert matches(grammar, '{"answer": "没有数字\\n也可以"}')
    assert matches(grammar, '{"answer": "9600"}')
    assert not matches(grammar, '{"answer": "营收 960 元"}')  # not a literal
    assert not matches(grammar, '{"answer": "营收 1289600 元"}')  # two literals glued
    assert not matches(grammar, '{"answer": "营收 96000 元"}')  # a literal and a digit
    assert not matches(grammar, '{"answer": "９６００"}')  # full-width digits are digits
    assert not matches(grammar, '{"answer": "\\u0039600"}')  # nor hidden in an escape
    both = facts_grammar(specs, daily(), "facts_digits")
    assert matches(both, answer(["date: 2026-09-06", "orders: 128"], "128 笔"))
    assert not matches(both, answer(["date: 2026-09-06", "orders: 128"], "129 笔"))
    no_results = guided_grammar(
        guided_schema(specs, [Message("user", "q")], "none"), Facts(), "digits"
    )
    assert matches(no_results, '{"answer": "不知道"}')
    assert not matches(no_results, '{"answer": "1"}')


def test_plain_facts_without_results_is_the_plain_answer(specs: Sequence[ToolSpec]) -> None:
    grammar = guided_grammar(guided_schema(specs, [Message("user", "q")], "none"), Facts(), "facts")
    assert matches(grammar, '{"answer": "x"}')
    assert not matches(grammar, answer(["x"], "x"))
    plain = facts_grammar(specs, daily(), "plain")
    assert matches(plain, '{"answer": "x"}')
    assert not matches(plain, answer(["orders: 128"], "x"))


def test_the_gbnf_rendering(specs: Sequence[ToolSpec]) -> None:
    text = facts_grammar(specs, daily()).gbnf()
    lines = text.splitlines()
    assert lines[0].startswith("root ::= ")
    assert 'fact-1 ::= "\\x22orders: 128\\x22"' in lines
    rules = {line.split(" ::= ")[0] for line in lines}
    used = {w for line in lines for w in line.split(" ::= ")[1].split() if w[0].isalpha()}
    assert used <= rules  # every rule referred to is defined
    assert "value" not in rules  # JSON basics that nothing uses are left out
    # Special characters are hex escapes in classes and literals (llama.cpp has no \- or \^).
    grammar = Grammar({"root": (('a"b\\c\n',), (Chars((("-", "-"), ("^", "^"), ("]", "]"))),))})
    assert grammar.gbnf() == 'root ::= "a\\x22b\\x5Cc\\x0A" | [\\x2D\\x5E\\x5D]\n'


def test_a_fact_from_a_folder_the_question_names_ranks_first() -> None:
    """``In reports/``: the report's orders lead, the draft's (read last, so newest) follow."""
    items = [
        Message("user", "In reports/, how many orders are there?"),
        *read("reports/wuhan.json", '{"orders": 128}', "c1"),
        *read("drafts/wuhan.json", '{"orders": 145}', "c2"),
    ]
    facts = guided_facts(items)
    assert facts.content == ("orders: 128", "orders: 145")
    assert facts.leading == 1
