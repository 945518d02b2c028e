"""Guided tool calling: the schema each turn, the rewritten request, the translated reply.

The inner client is the library's ScriptedModel (or the real chat wire against the HTTP fake);
the loop is the real one. The real-engine run is in ``test_guided_engine.py``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fakeserver import FakeServer, Turn
from minipi.agent import AgentConfig, AgentEvent, ToolCallStarted, run_agent
from minipi.ai import Endpoint, connect
from minipi.ai.testing import ScriptedModel
from minipi.ai.types import (
    FinishReason,
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ToolSpec,
    Usage,
)
from minipi.errors import ConfigError
from minipi.files import ProjectFiles, create_project_tools
from minipi.local.guided import (
    ANSWER_BRANCH,
    GuidedClient,
    guided_instructions,
    guided_schema,
)

QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
REPORT = "reports/daily-2026-09-06.json"


@pytest.fixture
def files(tmp_path: Path) -> Iterator[ProjectFiles]:
    (tmp_path / "reports").mkdir()
    (tmp_path / REPORT).write_text(
        '{"date": "2026-09-06", "orders": 128, "revenue_yuan": 9600}', encoding="utf-8"
    )
    with ProjectFiles(tmp_path) as sandbox:
        yield sandbox


@pytest.fixture
def specs(files: ProjectFiles) -> tuple[ToolSpec, ...]:
    return tuple(t.spec() for t in create_project_tools(files, approve=lambda _: True))


def call(name: str, arguments: JsonObject, call_id: str) -> FunctionCall:
    return FunctionCall(call_id, name, json.dumps(arguments))


def result(call_id: str, output: str = "", **choices: tuple[str, ...]) -> FunctionCallOutput:
    return FunctionCallOutput(call_id, output, choices)


def branches(schema: JsonObject) -> dict[str, JsonObject]:
    """Tool name (or "answer") -> the arguments schema of its branch."""
    found: dict[str, JsonObject] = {}
    for branch in schema.get("anyOf", [schema]):
        properties = branch["properties"]
        if "answer" in properties:
            found["answer"] = branch
        else:
            found[properties["tool"]["const"]] = properties["arguments"]
    return found


def enum(schema: JsonObject, tool: str, parameter: str = "path") -> list[str]:
    values: list[str] = branches(schema)[tool]["properties"][parameter]["enum"]
    return values


def allows(schema: JsonObject, reply: JsonObject) -> bool:
    return Draft202012Validator(schema).is_valid(reply)


# --- the schema ------------------------------------------------------------------------


def test_turn_one_offers_only_the_root_and_no_answer(specs: Sequence[ToolSpec]) -> None:
    schema = guided_schema(specs, [Message("user", QUESTION)])
    assert set(branches(schema)) == {"list_files", "search_files"}  # no file known, no evidence
    assert enum(schema, "list_files") == ["."]  # `always` for dirs
    assert branches(schema)["search_files"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    }
    assert allows(schema, {"tool": "list_files", "arguments": {"path": "."}})
    assert not allows(schema, {"tool": "list_files", "arguments": {"path": "reports"}})
    assert not allows(schema, {"answer": "2026-09-06"})


def test_enums_come_from_shown_choices_and_repeats_are_not_expressible(
    specs: Sequence[ToolSpec],
) -> None:
    items: list[Item] = [
        Message("user", QUESTION),
        call("list_files", {"path": "."}, "c1"),
        result("c1", "reports/\nREADME.md", dir=("reports",), file=("README.md",)),
    ]
    schema = guided_schema(specs, items)
    assert enum(schema, "list_files") == ["reports"]  # "." was listed already
    assert enum(schema, "read_file") == ["README.md"]
    assert "answer" in branches(schema)  # a result follows the question
    assert not allows(schema, {"tool": "list_files", "arguments": {"path": "."}})

    items += [call("list_files", {"path": "reports"}, "c2"), result("c2", REPORT, file=(REPORT,))]
    items += [call("read_file", {"path": REPORT}, "c3"), result("c3", "{...}")]
    schema = guided_schema(specs, items)
    assert "list_files" not in branches(schema)  # empty enum: branch dropped
    assert enum(schema, "read_file") == ["README.md"]
    assert not allows(schema, {"tool": "read_file", "arguments": {"path": REPORT}})


def test_optional_parameters_are_dropped(specs: Sequence[ToolSpec]) -> None:
    items: list[Item] = [Message("user", "q"), call("list_files", {"path": "."}, "c1")]
    items.append(result("c1", "a.txt", file=("a.txt",)))
    read = branches(guided_schema(specs, items))["read_file"]
    assert read["required"] == ["path"]
    assert set(read["properties"]) == {"path"}  # offset/limit are not offered
    assert "offset" not in guided_instructions(None, specs)


def test_several_choice_parameters_are_enums_without_exclusion(specs: Sequence[ToolSpec]) -> None:
    move = {"source": "a.txt", "target": "archive"}
    items: list[Item] = [
        Message("user", "q"),
        call("list_files", {"path": "."}, "c1"),
        result("c1", "", file=("a.txt",), dir=("archive",)),
        call("move_file", move, "c2"),
        result("c2", "error [user_denied]: denied"),
    ]
    schema = guided_schema(specs, items)
    assert branches(schema)["move_file"]["properties"] == {
        "source": {"type": "string", "enum": ["a.txt"]},
        "target": {"type": "string", "enum": ["archive"]},  # ChoiceSpec("dir"): no "."
    }
    assert allows(schema, {"tool": "move_file", "arguments": move})


def test_a_mutating_call_makes_earlier_calls_possible_again(specs: Sequence[ToolSpec]) -> None:
    items: list[Item] = [
        Message("user", "q"),
        call("list_files", {"path": "."}, "c1"),
        result("c1", "", file=("a.txt",), dir=("archive",)),
        call("move_file", {"source": "a.txt", "target": "archive"}, "c2"),
        result("c2", "moved a.txt -> archive/a.txt"),
    ]
    assert enum(guided_schema(specs, items), "list_files") == ["archive"]
    changed = guided_schema(specs, items, mutating=frozenset({"move_file"}))
    assert enum(changed, "list_files") == [".", "archive"]


def test_a_free_text_tool_that_repeated_itself_is_dropped(specs: Sequence[ToolSpec]) -> None:
    items: list[Item] = [Message("user", "q")]
    for n in (1, 2):
        items += [call("search_files", {"query": "x"}, f"c{n}"), result(f"c{n}", "no matches")]
        assert ("search_files" in branches(guided_schema(specs, items))) is (n == 1)


def test_answer_gating(specs: Sequence[ToolSpec]) -> None:
    first: list[Item] = [Message("user", "q")]
    assert "answer" not in branches(guided_schema(specs, first))
    assert "answer" in branches(guided_schema(specs, first, answer_needs_evidence=False))
    answered = [*first, call("list_files", {"path": "."}, "c1"), result("c1", "(empty)")]
    assert "answer" in branches(guided_schema(specs, answered))
    follow_up = [*answered, Message("assistant", "empty"), Message("user", "and now?")]
    assert "answer" not in branches(guided_schema(specs, follow_up))  # evidence for *this* one
    # Nothing left to call: the answer is the only branch, evidence or not.
    assert guided_schema([specs[1]], first) == ANSWER_BRANCH


def test_tool_choice_forms(specs: Sequence[ToolSpec]) -> None:
    items: list[Item] = [Message("user", "q"), call("list_files", {"path": "."}, "c1")]
    items.append(result("c1", "", file=("a.txt",), dir=("d",)))
    assert guided_schema(specs, items, "none") == ANSWER_BRANCH
    only = guided_schema(specs, items, "read_file")
    assert set(branches(only)) == {"read_file"}
    assert only["properties"]["tool"] == {"const": "read_file"}  # one branch: no anyOf
    assert set(branches(guided_schema(specs, items, "required"))) == {
        "list_files",
        "read_file",
        "search_files",
        "move_file",
    }
    assert set(branches(guided_schema(specs, items, "auto"))) == {
        "list_files",
        "read_file",
        "search_files",
        "move_file",
        "answer",
    }
    # The named tool has nothing left to call: answering is all that remains.
    assert guided_schema(specs, [Message("user", "q")], "read_file") == ANSWER_BRANCH


# --- the rewritten request and the translated reply ----------------------------------------


def reply(text: str, finish: FinishReason = "stop") -> ModelResponse:
    return ModelResponse((Message("assistant", text),), finish, Usage(requests=1))


def guided_run(
    files: ProjectFiles, script: list[ModelResponse], **options: Any
) -> tuple[Any, ScriptedModel, list[AgentEvent]]:
    inner = ScriptedModel(script)
    events: list[AgentEvent] = []
    config = AgentConfig("m", instructions="Be brief.", request_options=options)
    outcome = run_agent(
        GuidedClient(inner), create_project_tools(files), config, QUESTION, events.append
    )
    return outcome, inner, events


DAILY_TEXTS = [
    '{"tool": "list_files", "arguments": {"path": "."}}',
    '{"tool":"list_files","arguments":{"path":"reports"}}',
    json.dumps({"tool": "read_file", "arguments": {"path": REPORT}}),
    '{"answer": "2026-09-06，128 笔，9600 元"}',
]
DAILY = [reply(text) for text in DAILY_TEXTS]


def test_daily_report_through_the_real_loop(files: ProjectFiles) -> None:
    outcome, inner, events = guided_run(files, DAILY, temperature=0)
    inner.assert_complete()
    assert (outcome.status, outcome.answer) == ("succeeded", "2026-09-06，128 笔，9600 元")
    started = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallStarted)]
    assert started == [
        ("list_files", {"path": "."}),
        ("list_files", {"path": "reports"}),
        ("read_file", {"path": REPORT}),
    ]
    for request in inner.requests:
        assert request.tools == ()  # no native tools: declarations are in the system prompt
        assert request.options["temperature"] == 0
        assert request.options["response_format"]["type"] == "json_object"
    schemas = [r.options["response_format"]["schema"] for r in inner.requests]
    assert enum(schemas[1], "list_files") == ["reports"]
    assert enum(schemas[2], "read_file") == [REPORT]
    assert "answer" not in branches(schemas[0])


def test_history_is_rendered_as_plain_messages(files: ProjectFiles) -> None:
    _, inner, _ = guided_run(files, DAILY)
    last = inner.requests[-1]
    assert all(isinstance(i, Message) for i in last.items)
    shown = [(i.role, i.text) for i in last.items if isinstance(i, Message)]
    assert shown[:3] == [
        ("user", QUESTION),
        ("assistant", '{"tool": "list_files", "arguments": {"path": "."}}'),
        ("user", 'Result of list_files {"path": "."}:\nreports/'),
    ]
    assert shown[-1] == (
        "user",
        f'Result of read_file {{"path": "{REPORT}"}}:\n'
        + ('{"date": "2026-09-06", "orders": 128, "revenue_yuan": 9600}'),
    )
    assert last.instructions is not None
    assert last.instructions.startswith("Be brief.\n\nYou can use these tools:\n- list_files(")
    assert '{"answer": "<your answer>"}' in last.instructions


def test_system_prompt_and_rendered_history_are_stable_across_turns(files: ProjectFiles) -> None:
    _, inner, _ = guided_run(files, DAILY)
    requests = inner.requests
    assert len({r.instructions for r in requests}) == 1
    for before, after in itertools.pairwise(requests):
        assert len(after.items) == len(before.items) + 2
        assert all(a is b for a, b in zip(before.items, after.items, strict=False))


def test_the_prefix_sent_over_http_is_byte_stable(files: ProjectFiles) -> None:
    with FakeServer([Turn(text) for text in DAILY_TEXTS]) as server:
        inner = connect(Endpoint(server.base_url, "fake-model", wire="chat"))
        config = AgentConfig("fake-model", request_options={"temperature": 0})
        outcome = run_agent(GuidedClient(inner), create_project_tools(files), config, QUESTION)
        inner.close()
    assert outcome.status == "succeeded"
    bodies = [r.raw for r in server.requests]
    for before, after in itertools.pairwise(bodies):
        history = before[: before.index(b'],"temperature":')]  # everything up to the options
        assert after.startswith(history)
    sent = server.requests[0].body
    assert sent is not None
    assert "tools" not in sent
    assert sent["messages"][0]["role"] == "system"
    assert sent["response_format"]["schema"]["anyOf"][0]["properties"]["tool"] == {
        "const": "list_files"
    }


def test_json_schema_style(files: ProjectFiles) -> None:
    inner = ScriptedModel([reply('{"tool": "list_files", "arguments": {"path": "."}}')])
    client = GuidedClient(inner, style="json_schema")
    request = ModelRequest(
        "m", [Message("user", "q")], tools=[t.spec() for t in create_project_tools(files)]
    )
    response = client.create(request)
    sent = inner.requests[0].options["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == guided_schema(request.tools, request.items)
    assert response.finish_reason == "tool_calls"


def test_reply_translation(files: ProjectFiles) -> None:
    tools = [t.spec() for t in create_project_tools(files)]
    request = ModelRequest("m", [Message("user", "q")], tools=tools)
    inner = ScriptedModel(
        [
            reply(' { "tool" : "list_files", "arguments" : { "path" : "."}}'),
            reply('{"tool": "list_files", "arguments": {"path": "."}}'),
            reply('{"answer": "done"}'),
            reply('{"answer": "cut', "length"),
            reply(""),
            reply('{"answer": " "}'),
        ]
    )
    client = GuidedClient(inner)
    first, second = client.create(request), client.create(request)
    assert first.finish_reason == "tool_calls"
    (item,) = first.items
    assert isinstance(item, FunctionCall)
    assert (item.name, json.loads(item.arguments)) == ("list_files", {"path": "."})
    assert isinstance(second.items[0], FunctionCall)
    assert second.items[0].call_id != item.call_id  # fresh, unique ids
    answer = client.create(request)
    assert (answer.items, answer.finish_reason) == ((Message("assistant", "done"),), "stop")
    cut = client.create(request)
    assert cut.finish_reason == "length"  # passed through: the loop ends the run truncated
    assert client.create(request).items == ()  # empty: the loop's retry-once rule applies
    assert client.create(request).items == ()  # a blank answer counts as empty too


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I will list the files.", "guided_invalid_json"),
        ('{"tool": "list_files", "arguments": {"path": "."}', "guided_invalid_json"),
        ('{"tool": "list_files"}', "guided_invalid_reply"),
        ('{"answer": 42}', "guided_invalid_reply"),
        ('["list_files"]', "guided_invalid_reply"),
    ],
)
def test_a_reply_that_escaped_the_grammar_is_a_protocol_error(
    files: ProjectFiles, text: str, code: str
) -> None:
    outcome, _, _ = guided_run(files, [reply(text)])
    assert (outcome.status, outcome.code) == ("failed", code)
    assert outcome.error is not None
    assert "response_format" in outcome.error


def test_response_format_in_the_options_is_refused(files: ProjectFiles) -> None:
    client = GuidedClient(ScriptedModel([]))
    request = ModelRequest("m", [Message("user", "q")], options={"response_format": {}})
    with pytest.raises(ConfigError, match="guided mode"):
        client.create(request)


def test_close_closes_the_inner_client() -> None:
    closed: list[bool] = []

    class Inner(ScriptedModel):
        def close(self) -> None:
            closed.append(True)

    GuidedClient(Inner([])).close()
    assert closed == [True]


def test_reasoning_and_think_are_not_replayed() -> None:
    inner = ScriptedModel([reply('{"answer": "ok"}')])
    items: list[Item] = [
        Message("user", "q"),
        Reasoning("thinking"),
        Message("assistant", "<think>hmm</think>earlier answer"),
        Message("user", "again"),
    ]
    GuidedClient(inner).create(ModelRequest("m", items))
    sent = [(i.role, i.text) for i in inner.requests[0].items if isinstance(i, Message)]
    assert sent == [
        ("user", "q"),
        ("assistant", '{"answer": "earlier answer"}'),
        ("user", "again"),
    ]
