"""Tool calls written as ``<tool_call>`` text (D12, "Defaults decided" 3): the parser alone,
then end to end through the real HTTP fake on both wires and the real loop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import (
    AgentConfig,
    AgentEvent,
    AssistantText,
    RunResult,
    ToolCallStarted,
    ToolResultReady,
    run_agent,
)
from minipi.ai import FunctionCall, Message, ModelClient, ModelRequest, Wire
from minipi.ai.textcalls import INVALID_CALL_NAME, find_text_calls
from minipi.ai.types import ToolSpec
from minipi.files import ProjectFiles, create_project_tools
from support.fake import Call, FakeServer, Turn

pytestmark = pytest.mark.reliability

NAMES = frozenset({"read_file", "list_files"})


def block(name: str, arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


# --- the parser ----------------------------------------------------------------------------


def test_a_valid_block_is_a_call() -> None:
    found = find_text_calls(block("read_file", {"path": "a.txt"}), NAMES)
    assert found is not None
    (call,) = found.calls
    assert (call.name, json.loads(call.arguments), call.problem, call.known) == (
        "read_file",
        {"path": "a.txt"},
        None,
        True,
    )
    assert call.call_id.startswith("call_local_")


def test_two_blocks_are_two_calls_in_order_with_fresh_ids() -> None:
    text = block("list_files", {"path": "."}) + "\n" + block("read_file", {"path": "a.txt"})
    found = find_text_calls(text, NAMES)
    assert found is not None
    assert [c.name for c in found.calls] == ["list_files", "read_file"]
    assert found.calls[0].call_id != found.calls[1].call_id


def test_arguments_may_be_a_json_string_passed_on_as_sent() -> None:
    text = '<tool_call>{"name": "read_file", "arguments": "{\\"path\\": \\"a\\"}"}</tool_call>'
    found = find_text_calls(text, NAMES)
    assert found is not None
    assert found.calls[0].arguments == '{"path": "a"}'


def test_a_block_inside_think_is_ignored() -> None:
    thought = f"<think>maybe {block('read_file', {'path': 'a'})}</think>The answer is 4."
    assert find_text_calls(thought, NAMES) is None
    opened_by_template = f"maybe {block('read_file', {'path': 'a'})}</think>4"
    assert find_text_calls(opened_by_template, NAMES) is None
    unclosed_think = f"<think>maybe {block('read_file', {'path': 'a'})}"
    assert find_text_calls(unclosed_think, NAMES) is None


def test_prose_beside_a_block_makes_the_reply_an_answer() -> None:
    text = "<think>plan</think>Let me read it.\n" + block("read_file", {"path": "a"}) + "\nThen."
    assert find_text_calls(text, NAMES) is None
    assert find_text_calls("Let me read it.\n" + block("read_file", {"path": "a"}), NAMES) is None
    alone = f"<think>plan</think>\n{block('read_file', {'path': 'a'})}\n"
    found = find_text_calls(alone, NAMES)
    assert found is not None
    assert [c.name for c in found.calls] == ["read_file"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('<tool_call>{"name": "read_file", "arguments": {"path": "a"}</tool_call>', "valid JSON"),
        ('<tool_call>{"name": "read_file", "arguments": {"path": NaN}}</tool_call>', "valid JSON"),
        ('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}', "closing"),
        ("<tool_call>[1, 2]</tool_call>", "not a JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', '"name"'),
        ('<tool_call>{"name": "read_file"}</tool_call>', '"arguments"'),
        ('<tool_call>{"name": "read_file", "arguments": 5}</tool_call>', '"arguments"'),
        ("<tool_call></tool_call>", "valid JSON"),
    ],
)
def test_a_malformed_block_is_a_call_that_cannot_run(text: str, problem: str) -> None:
    found = find_text_calls(text, NAMES)
    assert found is not None
    (call,) = found.calls
    assert call.name == INVALID_CALL_NAME
    assert call.problem is not None
    assert problem in call.problem
    assert not call.known


def test_an_unknown_name_is_kept_as_sent() -> None:
    found = find_text_calls(block("delete_file", {"path": "a"}), NAMES)
    assert found is not None
    assert (found.calls[0].name, found.calls[0].known, found.calls[0].problem) == (
        "delete_file",
        False,
        None,
    )


def test_nothing_is_parsed_without_tools_or_without_a_block() -> None:
    assert find_text_calls(block("read_file", {"path": "a"}), ()) is None
    assert find_text_calls("plain answer with </tool_call> only", NAMES) is None


# --- the forms Qwen2.5-Coder writes (real replies, ../shared/bench/bfcl/results-2026-12-01) ---

HYPOT = frozenset({"math_hypot"})
FENCED = (
    '```json\n{\n  "name": "math_hypot",\n  "arguments": {\n    "x": 4,\n    "y": 5\n  }\n}\n```'
)


def calls_of(text: str, names: frozenset[str]) -> list[tuple[str, Any]]:
    found = find_text_calls(text, names)
    assert found is not None
    return [(c.name, json.loads(c.arguments)) for c in found.calls]


def test_a_fenced_json_call_is_a_call() -> None:  # 0.5B, simple_python_2
    found = find_text_calls(FENCED, HYPOT)
    assert found is not None
    assert [(c.name, json.loads(c.arguments), c.known) for c in found.calls] == [
        ("math_hypot", {"x": 4, "y": 5}, True)
    ]


def test_a_bare_json_reply_is_a_call() -> None:  # 0.5B, multiple_44
    text = (
        '{"name": "calculate_weight_in_space", '
        '"arguments": {"weight_earth_kg": 70, "planet": "Mars"}}'
    )
    assert calls_of(text, frozenset({"calculate_weight_in_space"})) == [
        ("calculate_weight_in_space", {"weight_earth_kg": 70, "planet": "Mars"})
    ]


def test_a_call_in_doubled_braces_is_a_call() -> None:  # 1.5B, irrelevance_84
    text = (
        '{{"name": "get_stock_data", '
        '"arguments": {"company_name": "Lakers", "date": "2023-10-05"}}}'
    )
    assert calls_of(text, frozenset({"get_stock_data"})) == [
        ("get_stock_data", {"company_name": "Lakers", "date": "2023-10-05"})
    ]


def test_prose_around_a_fenced_call_makes_the_reply_an_answer() -> None:  # 0.5B, irrelevance_92
    text = (
        "To find the most popular lawyer in New York, you can use the following function:\n\n"
        '```json\n{\n  "name": "lawyer_finder",\n  "arguments": {\n    "area": "New York"\n'
        "  }\n}\n```\n\nThis function will search for lawyers in New York."
    )
    assert find_text_calls(text, frozenset({"lawyer_finder"})) is None


def test_one_fence_per_call_is_several_calls_in_order() -> None:  # 1.5B, parallel_138
    fence = '```json\n{{\n  "name": "calculate_BMI",\n  "arguments": {{"weight_kg": {}}}\n}}\n```'
    text = "\n\n".join(fence.format(w) for w in (85, 60, 75))
    assert calls_of(text, frozenset({"calculate_BMI"})) == [
        ("calculate_BMI", {"weight_kg": 85}),
        ("calculate_BMI", {"weight_kg": 60}),
        ("calculate_BMI", {"weight_kg": 75}),
    ]


def test_a_list_of_calls_and_parameters_for_arguments() -> None:
    text = (
        '[{"name": "math_hypot", "arguments": {"x": 1}}, '
        '{"name": "math_hypot", "parameters": {"x": 2}}]'
    )
    assert calls_of(text, HYPOT) == [("math_hypot", {"x": 1}), ("math_hypot", {"x": 2})]


def test_a_call_cut_at_the_token_limit_is_an_invalid_call() -> None:  # 1.5B, parallel_90
    text = FENCED + '\n\n```json\n{\n  "name": "math_hypot",\n  "argument'
    found = find_text_calls(text, HYPOT)
    assert found is not None
    assert [c.name for c in found.calls] == ["math_hypot", INVALID_CALL_NAME]
    bare = find_text_calls('{"name": "math_hypot", "arguments": {"x": 4', HYPOT)
    assert bare is not None
    assert [c.name for c in bare.calls] == [INVALID_CALL_NAME]


def test_qwen3_coder_xml_in_tags_is_a_call() -> None:
    text = (
        "<tool_call>\n<function=read_file>\n<parameter=path>\nnotes 1.txt\n</parameter>\n"
        "<parameter=offset>\n20\n</parameter>\n</function>\n</tool_call>"
    )
    assert calls_of(text, NAMES) == [("read_file", {"path": "notes 1.txt", "offset": 20})]


@pytest.mark.parametrize(
    "text",
    [
        "The report says 128 orders.",
        '{"date": "2026-09-06", "orders": 128}',  # an answer that shows a file's JSON
        '```json\n{"name": "Ann", "age": 31}\n```',  # a record, not a call
        '```json\n{"name": "Ann", "role": "x", "arguments": {}}\n```',  # undeclared, extra keys
        "```python\nprint({'name': 1})\n```",
        '```json\n{"broken": \n```',
    ],
)
def test_json_that_is_not_a_call_stays_text(text: str) -> None:
    assert find_text_calls(text, NAMES | HYPOT) is None


def test_a_call_object_naming_an_undeclared_tool_is_kept_as_sent() -> None:
    found = find_text_calls('```json\n{"name": "draw_circle", "arguments": {"r": 5}}\n```', HYPOT)
    assert found is not None
    assert [(c.name, c.known) for c in found.calls] == [("draw_circle", False)]


def test_json_calls_inside_think_are_ignored() -> None:
    assert find_text_calls(f"<think>{FENCED}</think>It is 6.4.", HYPOT) is None


# --- both wire decoders --------------------------------------------------------------------


SPECS = [ToolSpec(n, n, {"type": "object", "properties": {}}) for n in sorted(NAMES)]


def test_decoders_make_calls_only_when_the_request_has_tools(
    fake_server: FakeServer, model_client: ModelClient
) -> None:
    text = block("read_file", {"path": "a"})
    fake_server.add(Turn(text), Turn(text))
    question = [Message("user", "q")]
    with_tools = model_client.create(ModelRequest(question, tools=SPECS))
    without = model_client.create(ModelRequest(question))
    assert with_tools.finish_reason == "tool_calls"
    kinds = [
        (type(i).__name__, getattr(i, "text", getattr(i, "name", ""))) for i in with_tools.items
    ]
    assert kinds == [("FunctionCall", "read_file")]
    assert without.finish_reason == "stop"
    assert [type(i).__name__ for i in without.items] == ["Message"]


def test_native_calls_win_over_text(fake_server: FakeServer, model_client: ModelClient) -> None:
    fake_server.add(Turn(block("list_files", {"path": "."}), calls=[Call("read_file", {})]))
    question = [Message("user", "q")]
    response = model_client.create(ModelRequest(question, tools=SPECS))
    calls = [i.name for i in response.items if isinstance(i, FunctionCall)]
    assert calls == ["read_file"]


# --- end to end: real HTTP fake, real loop, real tools -------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Iterator[ProjectFiles]:
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("beta\n", encoding="utf-8")
    with ProjectFiles(tmp_path) as sandbox:
        yield sandbox


def run(
    server: FakeServer, client: ModelClient, files: ProjectFiles, *turns: Turn, max_turns: int = 8
) -> tuple[RunResult, list[AgentEvent]]:
    server.add(*turns)
    events: list[AgentEvent] = []
    config = AgentConfig(max_turns=max_turns)
    result = run_agent(client, create_project_tools(files), config, "q", events.append)
    return result, events


def tool_events(events: list[AgentEvent]) -> list[tuple[str, str | None]]:
    return [(e.name, e.result.code) for e in events if isinstance(e, ToolResultReady)]


def test_a_text_call_runs_and_the_replay_is_consistent(
    fake_server: FakeServer, model_client: ModelClient, wire: Wire, files: ProjectFiles
) -> None:
    text = block("read_file", {"path": "a.txt"})
    result, events = run(fake_server, model_client, files, Turn(text), Turn("It says alpha."))
    assert (result.status, result.answer) == ("succeeded", "It says alpha.")
    assert tool_events(events) == [("read_file", None)]
    (started,) = [e for e in events if isinstance(e, ToolCallStarted)]
    body = fake_server.requests[1].body
    assert body is not None
    if wire == "chat":
        assistant, tool = body["messages"][1:]
        assert assistant == {"role": "assistant", "content": text}  # verbatim, as the model wrote
        assert tool == {"role": "tool", "tool_call_id": started.call_id, "content": "alpha\n"}
    else:
        call, output = body["input"][1:]
        assert call == {
            "type": "function_call",
            "call_id": started.call_id,
            "name": "read_file",
            "arguments": '{"path": "a.txt"}',
        }
        assert output["call_id"] == started.call_id


def test_two_blocks_run_in_order(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    text = block("read_file", {"path": "a.txt"}) + block("read_file", {"path": "b.txt"})
    result, events = run(fake_server, model_client, files, Turn(text), Turn("alpha, beta"))
    assert result.status == "succeeded"
    started = [json.loads(e.arguments) for e in events if isinstance(e, ToolCallStarted)]
    assert started == [{"path": "a.txt"}, {"path": "b.txt"}]


def test_a_block_inside_think_is_not_executed(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    text = f"<think>{block('read_file', {'path': 'a.txt'})}</think>Nothing to read."
    result, events = run(fake_server, model_client, files, Turn(text))
    assert (result.status, result.answer) == ("succeeded", "Nothing to read.")
    assert tool_events(events) == []


def test_a_block_in_the_reasoning_field_is_not_executed(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    turn = Turn("No call needed.", reasoning=block("read_file", {"path": "a.txt"}))
    result, events = run(fake_server, model_client, files, turn)
    assert (result.status, result.answer) == ("succeeded", "No call needed.")
    assert tool_events(events) == []


@pytest.mark.parametrize(
    ("text", "name", "code"),
    [
        ('<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>', None, None),
        ('<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}', None, None),
        (
            '<tool_call>{"name": "read_file", "arguments": "{\'path\'"}</tool_call>',
            "read_file",
            "invalid_json",
        ),
        (block("delete_file", {"path": "a.txt"}), "delete_file", "unknown_tool"),
    ],
)
def test_a_malformed_block_is_answered_with_a_tool_error_and_the_run_goes_on(
    fake_server: FakeServer,
    model_client: ModelClient,
    files: ProjectFiles,
    text: str,
    name: str | None,
    code: str | None,
) -> None:
    result, events = run(fake_server, model_client, files, Turn(text), Turn("Sorry, done."))
    assert (result.status, result.answer) == ("succeeded", "Sorry, done.")
    assert result.tool_calls == 0  # nothing executed
    expected = (name or INVALID_CALL_NAME, code or "invalid_tool_call")
    assert tool_events(events) == [expected]
    shown = [e.text for e in events if isinstance(e, AssistantText)]
    assert shown == ["Sorry, done."]  # the block was never shown as text


def test_a_text_block_is_never_the_final_answer_and_counts_toward_budgets(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    broken = Turn("<tool_call>{oops}</tool_call>")
    result, _ = run(fake_server, model_client, files, broken, broken, max_turns=2)
    assert (result.status, result.code, result.answer) == ("budget_exhausted", "max_turns", "")


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{\n  "name": "read_file",\n  "arguments": {\n    "path": "a.txt"\n  }\n}\n```',
        '{"name": "read_file", "arguments": {"path": "a.txt"}}',
    ],
)
def test_a_json_call_runs_and_is_never_shown_as_the_answer(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles, text: str
) -> None:
    result, events = run(fake_server, model_client, files, Turn(text), Turn("It says alpha."))
    assert (result.status, result.answer) == ("succeeded", "It says alpha.")
    assert tool_events(events) == [("read_file", None)]
    shown = [e.text for e in events if isinstance(e, AssistantText)]
    assert shown == ["It says alpha."]


def test_prose_beside_a_call_is_an_answer_and_nothing_runs(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    text = "I will read a.txt first.\n" + block("read_file", {"path": "a.txt"})
    result, events = run(fake_server, model_client, files, Turn(text))
    assert (result.status, result.answer) == ("succeeded", text)
    assert tool_events(events) == []
