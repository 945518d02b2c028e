"""A runaway answer is checked up to a bound, and says where the check stopped.

No timing here (bench/perf_evidence.py prints what a huge answer costs): the bounds are what
keep it small, so they are what is asserted.
"""

from __future__ import annotations

import json

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.evidence import MAX_ANSWER_CHARS, MAX_CLAIMS, check_evidence
from minipi.evidence.check import MAX_WORK


def _run() -> list[Item]:
    report = '{\n  "date": "2026-09-06",\n  "orders": 128,\n  "revenue_yuan": 9600\n}\n'
    return [
        Message("user", "日报的订单数和营收？"),
        FunctionCall("call_1", "read_file", json.dumps({"path": "daily.json"})),
        FunctionCallOutput("call_1", report),
    ]


def test_a_figure_dense_answer_of_megabytes_checks_at_most_max_claims() -> None:
    answer = "订单 128，营收 9,600 元，另有 1357 件。" * 120_000  # about 3 MiB of UTF-8
    evidence = check_evidence(answer, _run())
    assert len(evidence.claims) == MAX_CLAIMS
    assert evidence.unchecked_from is not None
    between = answer[evidence.claims[-1].claim.span[1] : evidence.unchecked_from]
    assert not any(c.isdigit() for c in between)
    assert answer[evidence.unchecked_from].isdigit()
    assert evidence.to_json()["unchecked_from"] == evidence.unchecked_from
    assert [c.status for c in evidence.claims[:3]] == ["exact", "normalized", "unsupported"]


def test_an_answer_past_the_limit_is_cut_at_a_blank_before_it() -> None:
    head = "see " * (MAX_ANSWER_CHARS // 4 - 1) + "ok 128"  # 128 ends past the limit
    answer = head + " and 9600 " + "words " * 500_000
    evidence = check_evidence(answer, _run())
    assert head.index(" 128") < MAX_ANSWER_CHARS < head.index("128") + 3
    assert evidence.unchecked_from == head.index(" 128")
    assert evidence.claims == ()  # neither 128 (it straddles the limit) nor a piece of it


def test_a_chinese_answer_is_cut_at_its_punctuation() -> None:
    head = "好" * (MAX_ANSWER_CHARS - 6) + "，营收9600元"  # 9600 straddles the limit
    evidence = check_evidence(head + "。" * 100_000, _run())
    assert head.index("9600") < MAX_ANSWER_CHARS < head.index("9600") + 4
    assert evidence.unchecked_from == head.index("，")
    assert evidence.claims == ()


def test_an_answer_without_blanks_is_cut_at_the_limit() -> None:
    answer = "x" * (MAX_ANSWER_CHARS - 10) + "营收9600元" + "y" * 3_000_000
    evidence = check_evidence(answer, _run())
    assert evidence.unchecked_from == MAX_ANSWER_CHARS
    assert [c.claim.text for c in evidence.claims] == ["9600元"]


def test_an_answer_within_the_bounds_is_checked_whole() -> None:
    answer = "营收 9600 元。" * (MAX_CLAIMS // 2)
    evidence = check_evidence(answer, _run())
    assert len(evidence.claims) == MAX_CLAIMS // 2
    assert evidence.unchecked_from is None
    assert "unchecked_from" not in evidence.to_json()


def test_a_number_of_thousands_of_digits_is_matched_as_written() -> None:
    """``int()`` refuses more than 4300 digits: such a run is no quantity, it is text."""
    digits = "9" * 10_000
    run = _run()
    run[-1] = FunctionCallOutput("call_1", f"serial: {digits}\n")
    evidence = check_evidence(f"序列号 {digits}，还有 {'8' * 5_000}.5 和 -{'7' * 40}", run)
    assert [(c.claim.kind, c.status) for c in evidence.claims] == [
        ("identifier", "exact"),
        ("identifier", "unsupported"),
        ("identifier", "unsupported"),
    ]
    assert evidence.claims[0].sources[0].range == (8, 10_008)
    assert evidence.claims[2].claim.text == "7" * 40  # the sign is no part of text
    grouped = check_evidence("1,000" * 3000, run)  # one grouped number of 12,000 digits
    assert grouped.claims[0].claim.kind == "number"  # split: 1,0001,... is no grouping


def _reads(*texts: str) -> list[Item]:
    items: list[Item] = [Message("user", "多少？")]
    for index, text in enumerate(texts):
        items.append(FunctionCall(f"c{index}", "read_file", json.dumps({"path": f"f{index}"})))
        items.append(FunctionCallOutput(f"c{index}", text))
    return items


def test_figures_past_the_work_bound_are_reported_unexamined() -> None:
    """Each unsupported figure costs a search of every result: over megabytes, the check
    stops at its work bound and says where the figures it did not examine begin."""
    size = MAX_WORK // 200  # a number's searches cost about 6 ns a character
    run = _reads("订单 128 笔。\n" + "x" * size)
    answer = "，".join(f"{31337 + i * 7919} 元" for i in range(MAX_CLAIMS))
    evidence = check_evidence(answer, run)
    examined = len(evidence.claims)
    assert 0 < examined < MAX_CLAIMS
    assert all(c.status == "unsupported" for c in evidence.claims)
    assert evidence.unchecked_from == answer.index(f"{31337 + examined * 7919} 元")
    assert evidence.to_json()["unchecked_from"] == evidence.unchecked_from


def test_a_repeated_figure_and_a_weak_one_cost_nothing_more() -> None:
    run = _reads("x" * (MAX_WORK // 200))
    answer = "营收 96345 元，" * 50 + "共 3 家。"
    evidence = check_evidence(answer, run)
    assert len(evidence.claims) == 51
    assert evidence.unchecked_from is None


def test_a_quote_almost_derived_from_thousands_of_pieces_is_judged() -> None:
    """``'AAAAX'`` is not made of the ``'A'`` pieces: each piece's text is tried once at each
    position (it was tried at each position once a piece: thousands to the fourth power)."""
    evidence = check_evidence("密码是 'AAAAX'", _reads("'A' " * 5_000))
    assert [c.status for c in evidence.claims] == ["unsupported"]
