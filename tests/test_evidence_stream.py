"""A streamed answer is checked as a whole one is: through the real loop over a streamed
HTTP reply, the run's evidence is the check of the final answer against the results read
before it (a figure written before a read is judged with the read's result)."""

from __future__ import annotations

import json
from pathlib import Path

from minipi.agent import AgentConfig, AgentEvent, ModelDelta, run_agent
from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message, Wire
from minipi.evidence import check_evidence
from minipi.files import ProjectFiles, create_project_tools
from support.fake import Call, FakeServer, Turn


def test_a_figure_is_judged_as_the_answer_has_it() -> None:
    """``128`` is one figure (not the ``12`` that a reply cut short would end with)."""
    items: list[Item] = [
        Message("user", "orders?"),
        FunctionCall("c1", "read_file", '{"path": "r.json"}'),
        FunctionCallOutput("c1", '{"orders": 12, "total": 128}'),
    ]
    evidence = check_evidence("x" * 12 + " the orders are 128", items)
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
