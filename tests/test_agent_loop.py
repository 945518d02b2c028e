"""The loop itself, driven by the library's ScriptedModel and real tools on tmp_path.

Covers the seed's boundary checks (§九), its error table (§六), and the three exits of seed 002.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import (
    AgentConfig,
    AgentEvent,
    AgentTool,
    ToolResult,
    run_agent,
    tool_from_function,
)
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Message,
    ModelRequest,
    ModelResponse,
)
from minipi.errors import AgentError, ModelConnectionError
from minipi.files import ProjectFiles, create_project_tools

CONFIG = AgentConfig()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "reports").mkdir(parents=True)
    (root / "reports" / "daily-2026-09-06.json").write_text(
        '{"date": "2026-09-06", "orders": 128, "revenue_yuan": 9600}', encoding="utf-8"
    )
    return root


@pytest.fixture
def files(project: Path) -> Any:
    with ProjectFiles(project) as sandbox:
        yield sandbox


def outputs(request: ModelRequest) -> list[str]:
    return [i.output for i in request.items if isinstance(i, FunctionCallOutput)]


def test_daily_report_boundaries(files: ProjectFiles) -> None:
    """Request 2 carries the listing; the read path comes from it; request 3 carries both."""

    def read_what_was_listed(request: ModelRequest) -> ModelResponse:
        return reply_calls(("read_file", {"path": outputs(request)[-1]}))

    model = ScriptedModel(
        [
            reply_calls(("list_files", {"path": "reports"})),
            read_what_was_listed,
            reply_text("2026-09-06，128 笔，9600 元"),
        ]
    )
    result = run_agent(model, create_project_tools(files), CONFIG, "帮我看看 reports 目录里的日报")
    model.assert_complete()
    assert result.status == "succeeded"
    assert result.answer == "2026-09-06，128 笔，9600 元"
    assert (result.turns, result.tool_calls) == (3, 2)
    assert outputs(model.requests[1]) == ["reports/daily-2026-09-06.json"]
    third = outputs(model.requests[2])
    assert third[0] == "reports/daily-2026-09-06.json"
    assert json.loads(third[1])["orders"] == 128


def test_text_with_calls_is_not_an_answer(files: ProjectFiles) -> None:
    events: list[AgentEvent] = []
    model = ScriptedModel(
        [reply_calls(("list_files", {"path": "."}), text="我先看看目录"), reply_text("done")]
    )
    result = run_agent(model, create_project_tools(files), CONFIG, "q", events.append)
    assert result.answer == "done"
    assert [e.type for e in events if e.type in ("assistant_text", "tool_call")] == [
        "assistant_text",
        "tool_call",
        "assistant_text",
    ]


def test_model_items_replayed_before_results_in_call_id_order(files: ProjectFiles) -> None:
    model = ScriptedModel(
        [
            reply_calls(("list_files", {"path": "."}, "c1"), ("read_file", {"path": "nope"}, "c2")),
            reply_text("ok"),
        ]
    )
    run_agent(model, create_project_tools(files), CONFIG, "q")
    kinds = [(type(i).__name__, getattr(i, "call_id", "")) for i in model.requests[1].items]
    assert kinds == [
        ("Message", ""),
        ("FunctionCall", "c1"),
        ("FunctionCall", "c2"),
        ("FunctionCallOutput", "c1"),
        ("FunctionCallOutput", "c2"),
    ]


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (("delete_file", {"path": "a"}), "unknown_tool"),
        (("read_file", {"path": "reports/missing.json"}), "not_found"),
        (("read_file", {"path": "/etc/passwd"}), "absolute_path"),
        (("read_file", {"path": "../x"}), "parent_ref"),
        (("read_file", {"path": "reports"}), "is_directory"),
        (("read_file", {"pth": "a"}), "invalid_arguments"),
        (("read_file", '{"path": "a"'), "invalid_json"),
        (("read_file", "[]"), "invalid_arguments"),
        (("read_file", '{"path": NaN}'), "invalid_json"),
    ],
)
def test_error_table_tool_errors_are_fed_back(
    files: ProjectFiles, call: tuple[str, Any], code: str
) -> None:
    model = ScriptedModel([reply_calls(call), reply_text("sorry")])
    events: list[AgentEvent] = []
    result = run_agent(model, create_project_tools(files), CONFIG, "q", events.append)
    assert result.status == "succeeded"
    fed_back = outputs(model.requests[1])
    assert len(fed_back) == 1
    assert f"[{code}]" in fed_back[0]
    (tool_result,) = [e for e in events if e.type == "tool_result"]
    assert tool_result.result.code == code


def test_too_large_and_not_utf8_are_tool_errors(project: Path) -> None:
    (project / "big.txt").write_text("x" * 100, encoding="utf-8")
    (project / "bin.txt").write_bytes(b"caf\xe9")
    with ProjectFiles(project, max_bytes=50) as files:
        model = ScriptedModel(
            [
                reply_calls(("read_file", {"path": "big.txt"}), ("read_file", {"path": "bin.txt"})),
                reply_text("x"),
            ]
        )
        run_agent(model, create_project_tools(files), CONFIG, "q")
    big, binary = outputs(model.requests[1])
    assert "[too_large]" in big
    assert "[not_utf8]" in binary


def test_exit_budget_exhausted_after_last_turns_calls_run(files: ProjectFiles) -> None:
    script = [
        reply_calls(("list_files", {"path": "reports"})),
        reply_calls(("read_file", {"path": "reports/daily-2026-09-06.json"})),
    ]
    model = ScriptedModel(script)
    result = run_agent(model, create_project_tools(files), AgentConfig(max_turns=2), "q")
    assert result.status == "budget_exhausted"
    assert result.code == "max_turns"
    assert result.answer == ""
    assert result.tool_calls == 2
    assert isinstance(result.items[-1], FunctionCallOutput)
    assert [r.tool_choice for r in model.requests] == ["auto", "auto"]  # the seed's experiment
    told = ScriptedModel(script)
    config = AgentConfig(max_turns=2, answer_on_last_turn=True)
    again = run_agent(told, create_project_tools(files), config, "q")
    # the last request asked for the answer (a result followed the question); the model
    # called a tool anyway: it ran, and the run ended max_turns all the same
    assert [r.tool_choice for r in told.requests] == ["auto", "none"]
    assert again.code == "max_turns"


def test_the_last_turn_asks_for_the_answer_only_after_a_result(files: ProjectFiles) -> None:
    """Guided, the last request's grammar is the answer alone; with no result since the
    question (nothing to answer from), the last request is left as it is."""
    from minipi.guided import GuidedClient
    from minipi.guided.schema import ANSWER_BRANCH

    inner = ScriptedModel(
        [
            reply_text('{"tool": "list_files", "arguments": {"path": "reports"}}'),
            reply_text('{"answer": "reports holds one report"}'),
        ]
    )
    config = AgentConfig(max_turns=2, answer_on_last_turn=True)
    result = run_agent(
        GuidedClient(inner, answer="plain"), create_project_tools(files), config, "q"
    )
    assert result.status == "succeeded"
    assert inner.requests[1].options["response_format"]["schema"] == ANSWER_BRANCH
    lone = ScriptedModel([reply_calls(("list_files", {"path": "."}))])
    once = AgentConfig(max_turns=1, answer_on_last_turn=True)
    ended = run_agent(lone, create_project_tools(files), once, "q")
    assert ended.code == "max_turns"
    assert [r.tool_choice for r in lone.requests] == ["auto"]


def test_exit_failed_on_endpoint_error_keeps_history_valid(files: ProjectFiles) -> None:
    def down(request: ModelRequest) -> ModelResponse:
        raise ModelConnectionError("cannot connect to http://x — is the server running?")

    model = ScriptedModel([reply_calls(("list_files", {"path": "."})), down])
    result = run_agent(model, create_project_tools(files), CONFIG, "q")
    assert result.status == "failed"
    assert result.code == "endpoint_unreachable"
    assert "is the server running" in (result.error or "")


def test_empty_reply_is_retried_once_then_fails(files: ProjectFiles) -> None:
    model = ScriptedModel([reply_text(""), reply_text("<think>hmm</think>")])
    result = run_agent(model, create_project_tools(files), CONFIG, "q")
    assert (result.status, result.code, result.turns) == ("failed", "empty_output", 2)


def test_empty_then_answer_succeeds(files: ProjectFiles) -> None:
    model = ScriptedModel([reply_text(""), reply_text("<think>x</think>\n\nhello")])
    result = run_agent(model, create_project_tools(files), CONFIG, "q")
    assert (result.status, result.answer) == ("succeeded", "hello")
    assert len(model.requests[1].items) == 1  # the empty reply is not replayed


def test_truncated_reply_is_not_executed(files: ProjectFiles) -> None:
    cut = ModelResponse(
        items=(FunctionCall("c1", "read_file", '{"path": "re'),), finish_reason="length"
    )
    model = ScriptedModel([cut, cut])
    result = run_agent(model, create_project_tools(files), CONFIG, "q")
    assert (result.status, result.code, result.tool_calls) == ("failed", "truncated", 0)
    assert len(model.requests) == 2  # asked once more, then given up
    assert not any(isinstance(i, FunctionCall) for i in result.items)  # never kept nor run


def test_truncated_reply_is_asked_again_with_a_higher_limit(files: ProjectFiles) -> None:
    cut = ModelResponse(items=(Message("assistant", "The answer is"),), finish_reason="length")
    model = ScriptedModel([cut, reply_text("The answer is 42.")])
    config = AgentConfig(request_options={"max_output_tokens": 64})
    result = run_agent(model, create_project_tools(files), config, "q")
    assert (result.status, result.answer) == ("succeeded", "The answer is 42.")
    assert [r.options["max_output_tokens"] for r in model.requests] == [64, 128]
    assert [i for i in result.items if isinstance(i, Message)] == [
        Message("user", "q"),
        *[i for i in result.items if isinstance(i, Message) and i.text.endswith("42.")],
    ]  # the cut-off text was not kept


def test_required_tool_policy(files: ProjectFiles) -> None:
    model = ScriptedModel(
        [
            reply_calls(("list_files", {"path": "nope"})),
            reply_calls(("list_files", {"path": "reports"})),
            reply_text("ok"),
        ]
    )
    config = AgentConfig(required_tools=("list_files",))
    run_agent(model, create_project_tools(files), config, "q")
    assert [r.tool_choice for r in model.requests] == ["list_files", "list_files", "auto"]


def test_misconfiguration_raises_before_any_request(files: ProjectFiles) -> None:
    tools = create_project_tools(files)
    model = ScriptedModel([])
    with pytest.raises(AgentError, match="not registered"):
        run_agent(model, tools, AgentConfig(required_tools=("nope",)), "q")
    with pytest.raises(AgentError, match="tools"):
        run_agent(model, tools, AgentConfig(request_options={"tools": []}), "q")
    with pytest.raises(AgentError, match="unique"):
        run_agent(model, [*tools, tools[0]], CONFIG, "q")
    assert model.requests == []


def _counting_tool(
    calls: list[str],
    *,
    mutating: bool = False,
    name: str = "probe",
    delay: float = 0.0,
    changed: bool = False,
) -> AgentTool:
    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        calls.append(str(arguments.get("x")))
        time.sleep(delay)
        return ToolResult(f"{name}:{arguments.get('x')}", changed=changed)

    schema = {
        "type": "object",
        "properties": {"x": {"type": "string"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    return AgentTool(name, "probe", schema, handler, mutating)


def test_identical_call_is_not_executed_twice() -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            reply_calls(("probe", {"x": "a"}, "c1")),
            reply_calls(("probe", '{"x":  "a"}', "c2")),
            reply_text("ok"),
        ]
    )
    run_agent(model, [_counting_tool(ran)], CONFIG, "q")
    assert ran == ["a"]
    notice = outputs(model.requests[2])[-1]
    assert "[duplicate_call]" in notice
    assert "c1" in notice


def test_a_change_makes_reads_runnable_again() -> None:
    ran: list[str] = []
    tools = [_counting_tool(ran), _counting_tool(ran, name="write", mutating=True, changed=True)]
    model = ScriptedModel(
        [
            reply_calls(("probe", {"x": "a"})),
            reply_calls(("write", {"x": "w"})),
            reply_calls(("probe", {"x": "a"})),
            reply_text("ok"),
        ]
    )
    assert run_agent(model, tools, CONFIG, "q").status == "succeeded"
    assert ran == ["a", "w", "a"]


@pytest.mark.reliability
def test_stuck_loop_and_repeated_errors_fail() -> None:
    ran: list[str] = []
    same = [reply_calls(("probe", {"x": "a"})) for _ in range(5)]
    result = run_agent(ScriptedModel(same), [_counting_tool(ran)], CONFIG, "q")
    assert (result.status, result.code, ran) == ("failed", "stuck_loop", ["a"])
    bad = [reply_calls(("probe", {"y": 1})) for _ in range(5)]
    result = run_agent(ScriptedModel(bad), [_counting_tool(ran)], CONFIG, "q")
    assert (result.status, result.code, result.turns) == ("failed", "repeated_tool_error", 3)


@pytest.mark.reliability
def test_tool_call_budget() -> None:
    ran: list[str] = []
    model = ScriptedModel([reply_calls(("probe", {"x": "a"}), ("probe", {"x": "b"}))])
    result = run_agent(model, [_counting_tool(ran)], AgentConfig(max_tool_calls=1), "q")
    assert (result.status, result.code, ran) == ("budget_exhausted", "max_tool_calls", ["a"])


def test_parallel_calls_run_together_results_in_model_order() -> None:
    ran: list[str] = []
    names = [str(i) for i in range(4)]
    model = ScriptedModel([reply_calls(*[("probe", {"x": n}) for n in names]), reply_text("ok")])
    started = time.perf_counter()
    run_agent(model, [_counting_tool(ran, delay=0.3)], CONFIG, "q")
    elapsed = time.perf_counter() - started
    assert outputs(model.requests[1]) == [f"probe:{n}" for n in names]
    assert elapsed < 1.0  # 4 x 0.3 s sequentially would be 1.2 s


def test_sequential_tools_run_alone_in_order() -> None:
    active = 0
    overlap: list[int] = []
    lock = threading.Lock()

    def handler(arguments: Mapping[str, Any]) -> str:
        nonlocal active
        with lock:
            active += 1
            overlap.append(active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return str(arguments["x"])

    schema = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    tool = AgentTool("write", "w", schema, handler, mutating=True)
    model = ScriptedModel(
        [reply_calls(*[("write", {"x": str(i)}) for i in range(3)]), reply_text("ok")]
    )
    run_agent(model, [tool], CONFIG, "q")
    assert max(overlap) == 1
    assert outputs(model.requests[1]) == ["0", "1", "2"]


def test_cancel_closes_open_calls() -> None:
    def interrupt(arguments: Mapping[str, Any]) -> str:
        raise KeyboardInterrupt

    schema = {"type": "object", "properties": {}}
    tool = AgentTool("slow", "s", schema, interrupt, mutating=True)
    script = [reply_calls(("slow", {}, "a"), ("slow", {"x": 1}, "b"))]
    result = run_agent(ScriptedModel(script), [tool], CONFIG, "q")
    assert result.status == "cancelled"
    closed = {i.call_id: i.output for i in result.items if isinstance(i, FunctionCallOutput)}
    # "a" had begun: it may have done its work; "b" never started
    assert closed == {
        "a": "interrupted: outcome unknown, verify before retrying",
        "b": "not executed: interrupted before it ran",
    }


def test_history_continues_a_conversation(files: ProjectFiles) -> None:
    first = run_agent(ScriptedModel([reply_text("one")]), [], CONFIG, "q1")
    model = ScriptedModel([reply_text("two")])
    run_agent(model, [], CONFIG, [*first.items, Message("user", "q2")])
    texts = [i.text for i in model.requests[0].items if isinstance(i, Message)]
    assert texts == ["q1", "one", "q2"]


def test_tool_from_function_schema_and_validation() -> None:
    def add(a: int, b: int = 2, note: str | None = None) -> dict[str, int]:
        """Add two numbers.

        Args:
            a: the first number
            b: the second number
        """
        return {"sum": a + b}

    tool = tool_from_function(add)
    assert tool.description == "Add two numbers."
    assert tool.parameters["required"] == ["a"]
    assert tool.parameters["properties"]["a"] == {
        "type": "integer",
        "description": "the first number",
    }
    assert tool.execute({"a": 1}).content == '{"sum": 3}'
    extra = tool.execute({"a": 1, "c": 2, "d": 3})
    assert extra.code == "invalid_arguments"
    assert "unexpected field(s) 'c', 'd'" in extra.content
    wrong = tool.execute({"a": "1"})
    assert wrong.content == 'error [invalid_arguments]: add: a: "1" must be integer'
    assert "'a' is required" in tool.execute({"b": 1}).content


def test_tool_executing_comes_only_after_the_arguments_passed_the_schema(
    files: ProjectFiles,
) -> None:
    from minipi.agent import ToolExecuting

    events: list[Any] = []
    model = ScriptedModel(
        [
            reply_calls(
                ("read_file", {"path": ["reports"]}, "bad"), ("list_files", {"path": "."}, "ok")
            ),
            reply_text("done"),
        ]
    )
    run_agent(model, create_project_tools(files), CONFIG, "q", events.append)
    assert [e.call_id for e in events if isinstance(e, ToolExecuting)] == ["ok"]
    bad, ok = outputs(model.requests[1])
    assert bad.startswith("error [invalid_arguments]: read_file: path:")
    assert "invalid_arguments" not in ok


def test_a_reply_without_a_finish_reason_is_not_an_answer(files: ProjectFiles) -> None:
    """RELIABILITY defaults 8/9: text alone never succeeds without a finish: asked once more,
    then the run fails ``unfinished``."""
    odd = ModelResponse((Message("assistant", "The answer is 42."),), "unknown")
    model = ScriptedModel([odd, odd])
    result = run_agent(model, create_project_tools(files), CONFIG, "q")
    assert (result.status, result.code, result.answer) == ("failed", "unfinished", "")
    assert len(model.requests) == 2
    assert [i for i in result.items if isinstance(i, Message)] == [Message("user", "q")]
    model = ScriptedModel([odd, reply_text("The answer is 42.")])
    result = run_agent(model, create_project_tools(files), CONFIG, "q")
    assert (result.status, result.answer) == ("succeeded", "The answer is 42.")


def test_needs_approval_asks_before_each_run_in_order_and_a_no_runs_nothing() -> None:
    from minipi.agent import ApprovalRequest, needs_approval

    ran: list[str] = []

    def publish(title: str) -> str:
        """Publish a post."""
        ran.append(title)
        return f"published {title}"

    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        if request.details["title"] == '"boom"':
            raise EOFError  # a closed input is a refusal
        return request.details["title"] != '"no"'

    tool = needs_approval(tool_from_function(publish), approver)
    assert tool.mutating
    script = [
        reply_calls(("publish", {"title": "yes"}), ("publish", {"title": "no"})),
        reply_calls(("publish", {"title": "boom"}), ("publish", {"title": 5})),
        reply_text("done"),
    ]
    model = ScriptedModel(script)
    result = run_agent(model, [tool], CONFIG, "q")
    assert ran == ["yes"]
    # the "no" ends the run once its reply is answered: the next reply is never asked for
    assert [r.details["title"] for r in asked] == ['"yes"', '"no"']
    assert asked[0].summary == "run publish"
    assert len(model.requests) == 1
    assert (result.status, result.code) == ("failed", "user_denied")
    model = ScriptedModel(script[1:])
    result = run_agent(model, [tool], CONFIG, "q")
    assert [r.details["title"] for r in asked[2:]] == ['"boom"']  # a closed input; not for 5
    assert (result.status, result.code) == ("failed", "user_denied")
    assert len(model.requests) == 1


def test_a_sink_that_fails_ends_the_run_with_its_code(files: ProjectFiles) -> None:
    """A MiniPiError from on_event (a session that could not be saved) is a RunResult, not an
    exception; the run stops before its next step and the sink still sees the end."""
    from minipi.agent import RunEnd, ToolExecuting
    from minipi.errors import MiniPiError

    seen: list[Any] = []

    def sink(event: Any) -> None:
        seen.append(event)
        if isinstance(event, ToolExecuting):
            raise MiniPiError("the store is full", code="session_write_failed")

    model = ScriptedModel([reply_calls(("list_files", {"path": "."}, "c1")), reply_text("no")])
    result = run_agent(model, create_project_tools(files), CONFIG, "q", sink)
    assert (result.status, result.code, result.error) == (
        "failed",
        "session_write_failed",
        "the store is full",
    )
    assert len(model.requests) == 1  # stopped before the tool ran and before asking again
    closed = [i for i in result.items if isinstance(i, FunctionCallOutput)]
    assert [c.output for c in closed] == ["not executed: the store is full"]
    assert isinstance(seen[-1], RunEnd)


def test_each_unusable_reply_is_asked_again_once_counting_in_a_row(files: ProjectFiles) -> None:
    """Once more per unusable reply, not once per run: a cut-off, a good turn, another
    cut-off still succeed; two unusable replies in a row (whatever kind) fail."""
    cut = ModelResponse((Message("assistant", "The ans"),), "length")
    empty = reply_text("")
    config = AgentConfig(request_options={"max_output_tokens": 64})
    listing = reply_calls(("list_files", {"path": "."}))
    model = ScriptedModel([cut, listing, cut, reply_text("ok")])
    result = run_agent(model, create_project_tools(files), config, "q")
    assert (result.status, result.answer) == ("succeeded", "ok")
    assert [r.options["max_output_tokens"] for r in model.requests] == [64, 128, 128, 128]
    model = ScriptedModel([empty, cut, reply_text("never")])
    result = run_agent(model, create_project_tools(files), config, "q")
    assert (result.status, result.code) == ("failed", "truncated")


def test_a_rule_can_nudge_an_answer_once_and_the_model_answers_again() -> None:
    from minipi.agent import Nudge, Rule, RunView

    class OnlyWithFigures(Rule):
        nudged = False

        def accept(self, answer: str, view: RunView) -> Nudge | None:
            if any(ch.isdigit() for ch in answer) or self.nudged:
                return None
            self.nudged = True
            return Nudge("give the figures", "the answer had no figures")

    events: list[Any] = []
    model = ScriptedModel([reply_text("it is fine"), reply_text("128 orders")])
    config = AgentConfig(rules=[OnlyWithFigures])
    result = run_agent(model, [], config, "how many orders?", events.append)
    assert (result.status, result.answer, result.turns) == ("succeeded", "128 orders", 2)
    sent = model.requests[1].items
    assert [type(i).__name__ for i in sent] == ["Message", "Message", "Message"]
    assert sent[-1] == Message("user", "give the figures", by_minipi=True)
    assert any(getattr(e, "code", "") == "nudge" for e in events)
    again = run_agent(ScriptedModel([reply_text("fine"), reply_text("ok")]), [], config, "q")
    assert again.answer == "ok"  # a fresh rule per run: it nudges again


def test_a_sink_that_fails_at_the_run_start_ends_the_run_with_its_code(
    files: ProjectFiles,
) -> None:
    """Even the first event (``RunStart``) failing to save is a RunResult, not an exception
    escaping ``run_agent``; nothing is asked."""
    from minipi.agent import RunEnd, RunStart
    from minipi.errors import MiniPiError

    seen: list[Any] = []

    def sink(event: Any) -> None:
        seen.append(event)
        if isinstance(event, RunStart):
            raise MiniPiError("the store is full", code="session_write_failed")

    model = ScriptedModel([reply_text("never")])
    result = run_agent(model, create_project_tools(files), CONFIG, "q", sink)
    assert (result.status, result.code) == ("failed", "session_write_failed")
    assert model.requests == []
    assert isinstance(seen[-1], RunEnd)
