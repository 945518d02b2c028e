"""The check fed an answer while it streams gives what the check of the whole answer gives:
on every case of the table, on generated runs cut into pieces of every size, and through
the real loop over a streamed HTTP reply, where a new tool result makes a new check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.agent import AgentConfig, AgentEvent, ModelDelta, run_agent
from minipi.agent.evidence import EvidenceCheck, check_evidence
from minipi.agent.evidence.check import _STEP, _UNSETTLED
from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message, Wire
from minipi.files import ProjectFiles, create_project_tools
from support.fake import Call, FakeServer, Turn
from test_evidence_cases import DATES, NUMBERS, TEXTS, TIMES, TRAPS, Case, history
from test_evidence_properties import generated_runs, history_of


def _streamed(answer: str, items: list[Item], size: int) -> EvidenceCheck:
    check = EvidenceCheck(items)
    for start in range(0, len(answer), size):
        check.feed(answer[start : start + size])
    return check


@pytest.mark.parametrize("size", [1, 3, 8, 40])
@pytest.mark.parametrize("case", NUMBERS + TRAPS + DATES + TIMES + TEXTS, ids=str)
def test_streamed_check_is_the_check(case: Case, size: int) -> None:
    items = history(case)
    answer = case.answer + " and so on, until the text is long enough to be looked at twice."
    expected = check_evidence(answer, items)
    assert _streamed(answer, items, size).check(answer) == expected


@settings(max_examples=300, deadline=None)
@given(
    run=generated_runs(),
    size=st.integers(1, 50),
    tail=st.text(alphabet="0123456789.,万 ", max_size=8),
)
def test_streamed_check_is_the_check_on_generated_runs(
    run: tuple[str, str, list[tuple[str, str, str, bool]]], size: int, tail: str
) -> None:
    """``tail`` ends the answer with what may extend a figure fed early (``12`` → ``128``)."""
    answer, question, results = run
    answer = answer * 3 + tail  # long enough for several looks
    items = history_of(question, results)
    assert _streamed(answer, items, size).check(answer) == check_evidence(answer, items)


def test_a_figure_cut_mid_stream_is_judged_as_the_answer_ends() -> None:
    items: list[Item] = [
        Message("user", "orders?"),
        FunctionCall("c1", "read_file", '{"path": "r.json"}'),
        FunctionCallOutput("c1", '{"orders": 12, "total": 128}'),
    ]
    prefix = "x" * (_STEP + _UNSETTLED) + " the orders are 12"
    check = EvidenceCheck(items)
    check.feed(prefix)  # "12" is near the end: not judged yet, it may grow
    check.feed("8" + " " * (_STEP + _UNSETTLED))
    evidence = check.check(prefix + "8")
    assert [(c.claim.text, c.status) for c in evidence.claims] == [("128", "exact")]
    assert evidence.claims[0].sources[0].pointer == "/total"


def test_the_loop_checks_a_streamed_answer_as_it_checks_one_at_once(
    fake_server: FakeServer, wire: Wire, tmp_path: Path
) -> None:
    """Over real HTTP (SSE) with the real file tools: the answer streams in pieces after a
    read; the run's evidence is the check of the final answer, traced to that result."""
    (tmp_path / "daily.json").write_text(
        json.dumps({"date": "2026-09-06", "orders": 128, "revenue_yuan": 9600})
    )
    answer = "日报日期为 2026-09-06，订单数 128 单，营收 9600 元；另有 77 件退货。" * 3
    fake_server.add(Turn(calls=[Call("read_file", {"path": "daily.json"})]), Turn(answer))
    deltas: list[str] = []

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ModelDelta) and event.delta.kind == "text":
            deltas.append(event.delta.text)

    endpoint = Endpoint(fake_server.base_url, "fake-model", wire=wire)
    client = connect(endpoint, ClientConfig(stream=True))
    with ProjectFiles(tmp_path) as files:
        tools = create_project_tools(files)
        result = run_agent(client, tools, AgentConfig(), "日报？", on_event=on_event)
    client.close()
    assert result.status == "succeeded"
    assert len(deltas) > 1
    assert "".join(deltas) == answer
    assert result.evidence == check_evidence(result.answer, result.items)
    assert result.evidence is not None
    assert result.evidence.unsupported_figures() == ("77 件",)
    assert {c.status for c in result.evidence.claims} == {"exact", "unsupported"}


@pytest.mark.parametrize(
    "answer",
    [
        "「" + "9" * 20_000,  # one figure of 20,000 digits, no break anywhere
        "1," * 10_000,  # thousands of figures and no break
        "１，" * 10_000,
        "「" + "a 1 " * 5_000,  # a quote that never closes
        "一二" * 10_000,
    ],
    ids=["digits", "commas", "full-width", "open-quote", "numerals"],
)
def test_a_runaway_stream_is_checked_as_a_whole_answer_is(answer: str) -> None:
    items = history_of("多少？", [("read_file", "a.txt", "9" * 20_000 + " 1, 2, a 1", False)])
    assert _streamed(answer, items, 3).check(answer) == check_evidence(answer, items)


def test_a_figure_judged_before_a_read_is_judged_again_after_it(
    fake_server: FakeServer, wire: Wire, tmp_path: Path
) -> None:
    """The model writes 128 while it asks for the read (unsupported then), then answers with
    it (in the result now): the answer's check is of the run with the result."""
    (tmp_path / "daily.json").write_text(json.dumps({"orders": 128}))
    before = "Let me see whether the 128 orders I expect are there: reading daily.json now."
    fake_server.add(
        Turn(before, calls=[Call("read_file", {"path": "daily.json"})]),
        Turn("The report shows 128 orders, as the file says."),
    )
    client = connect(
        Endpoint(fake_server.base_url, "fake-model", wire=wire), ClientConfig(stream=True)
    )
    with ProjectFiles(tmp_path) as files:
        result = run_agent(client, create_project_tools(files), AgentConfig(), "orders?")
    client.close()
    assert result.status == "succeeded"
    assert result.evidence is not None
    assert [(c.claim.text, c.status) for c in result.evidence.claims] == [("128", "exact")]
