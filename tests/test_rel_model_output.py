"""RELIABILITY group D (malformed model output), through the real client, the real loop and
the real project tools, on both wires, against ``FakeServer`` (real HTTP on 127.0.0.1); and
through ``minipi ask --json``, whose ``tool_result`` events carry each refusal's ``code``.

What every case checks: a malformed call is answered with a tool error the model can act on
(a stable code, a short message) and the loop goes on; nothing runs from a malformed call,
and no approval is even asked for one; success comes from what ran, never from the text.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minipi.agent import (
    AgentConfig,
    AgentEvent,
    AgentTool,
    AssistantText,
    RunResult,
    ToolResult,
    ToolResultReady,
    run_agent,
    tool_from_function,
)
from minipi.ai import (
    ClientConfig,
    Endpoint,
    FunctionCall,
    FunctionCallOutput,
    Message,
    ModelRequest,
    Wire,
    connect,
    output_text,
    parse_function_calls,
)
from minipi.files import ProjectFiles, create_project_tools
from support.cli import json_lines, tool_outputs
from support.fake import Call, FakeServer, Turn
from support.faults import Cut, Edited, Events, Split, data, sse_recording
from support.files import Approvals, snapshot
from support.rel import ask_cli

pytestmark = pytest.mark.reliability

FAST = ClientConfig(
    connect_timeout=1.0,
    read_timeout=5.0,
    stream_idle_timeout=0.5,
    max_retries=1,
    backoff_base=0.01,
)
ALPHA = "alpha\n"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake_server:
        yield fake_server


@pytest.fixture(params=[False, True], ids=["plain", "streamed"])
def stream(request: pytest.FixtureRequest) -> bool:
    """Each case with the client asking for a plain reply, then for a stream."""
    return bool(request.param)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """``proj/`` (the root: a.txt, archive/) and its sibling ``outside/``."""
    root = tmp_path / "proj"
    (root / "archive").mkdir(parents=True)
    (root / "a.txt").write_text(ALPHA, encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET\n", encoding="utf-8")
    return tmp_path


@dataclass
class Run:
    result: RunResult
    events: list[AgentEvent]
    approvals: Approvals
    server: FakeServer
    ran: list[str]
    """Names of the tools whose handler ran, in order."""

    @property
    def results(self) -> list[ToolResultReady]:
        return [e for e in self.events if isinstance(e, ToolResultReady)]

    @property
    def codes(self) -> list[str | None]:
        return [r.result.code for r in self.results]

    def sent_back(self, request: int = 1) -> list[str]:
        """The tool outputs request ``request`` carried to the model."""
        return tool_outputs(self.server.requests[request].body)


def run(
    server: FakeServer,
    wire: Wire,
    base: Path,
    stream: bool = False,
    *,
    approve: bool = False,
    extra: tuple[AgentTool, ...] = (),
    config: AgentConfig | None = None,
) -> Run:
    approvals = Approvals(approve)
    events: list[AgentEvent] = []
    ran: list[str] = []
    endpoint = Endpoint(server.base_url, "fake-model", wire=wire)
    client_config = replace(FAST, stream=stream)
    with (
        ProjectFiles(base / "proj") as files,
        closing(connect(endpoint, client_config)) as client,
    ):
        tools = [spied(t, ran) for t in (*create_project_tools(files, approvals), *extra)]
        result = run_agent(client, tools, config or AgentConfig(), "q", events.append)
    return Run(result, events, approvals, server, ran)


def spied(tool: AgentTool, ran: list[str]) -> AgentTool:
    """``tool``, noting its name in ``ran`` whenever its handler is called."""
    handler = tool.handler

    def spy(arguments: Mapping[str, Any]) -> str | ToolResult:
        ran.append(tool.name)
        return handler(arguments)

    return replace(tool, handler=spy)


def calls(*entries: Call) -> Turn:
    return Turn(calls=list(entries))


def edit_calls(turn: Turn, change: Callable[[dict[str, Any]], None]) -> Edited:
    """``turn`` with ``change`` applied to each call as the wire sends it (chat: the
    ``tool_calls`` entry; Responses: the ``function_call`` output item)."""

    def edit(data: dict[str, Any]) -> dict[str, Any]:
        if "choices" in data:
            entries = data["choices"][0]["message"]["tool_calls"]
        else:
            entries = [i for i in data["output"] if i["type"] == "function_call"]
        for entry in entries:
            change(entry)
        return data

    return Edited(turn, edit)


def set_arguments(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(entry: dict[str, Any]) -> None:
        target = entry.get("function", entry)
        if value is _MISSING:
            del target["arguments"]
        else:
            target["arguments"] = value

    return change


_MISSING = object()


# --- D1: arguments that are not a JSON object ----------------------------------------------

BAD_ARGUMENTS = {
    "empty": "",
    "unclosed": '{"path": "a.txt"',
    "null": "null",
    "list": "[]",
    "string": '"a.txt"',
    "nan": '{"path": NaN}',
    "infinity": '{"n": Infinity}',
    "trailing-garbage": '{"path": "a.txt"} {"path": "b"}',
    "single-quotes": "{'path': 'a.txt'}",
    "double-encoded": json.dumps(json.dumps({"path": "a.txt"})),
    "code-fence": '```json\n{"path": "a.txt"}\n```',
    "duplicate-keys": '{"path": "a.txt", "path": "archive"}',
    "duplicate-nested-keys": '{"path": "a.txt", "source": {"a": 1, "a": 2}}',
}


@pytest.mark.parametrize("case", BAD_ARGUMENTS)
def test_d1_bad_arguments_are_answered_and_nothing_runs(
    server: FakeServer, wire: Wire, base: Path, stream: bool, case: str
) -> None:
    bad = BAD_ARGUMENTS[case]
    server.add(
        calls(Call("read_file", bad), Call("move_file", bad)),
        Turn("I could not do it."),
    )
    before = snapshot(base)
    outcome = run(server, wire, base, stream, approve=True)
    assert outcome.result.status == "succeeded"
    assert outcome.ran == []
    assert outcome.approvals.requests == []  # a malformed write is never even shown
    assert snapshot(base) == before
    for result in outcome.results:
        assert result.result.is_error
        assert result.result.code in ("invalid_json", "invalid_arguments")
        assert len(result.result.content) < 200  # brief, for a small model
        if case.startswith("duplicate"):
            assert "twice" in result.result.content
    sent = outcome.sent_back()
    assert len(sent) == 2
    assert all(s.startswith(("error [invalid_json]", "error [invalid_arguments]")) for s in sent)
    assert outcome.result.tool_calls == 0


def test_d1_parser_messages_say_what_is_wrong(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(
        calls(*(Call("read_file", BAD_ARGUMENTS[c]) for c in ("unclosed", "null", "nan"))),
        Turn("ok"),
    )
    contents = [r.result.content for r in run(server, wire, base, stream).results]
    assert "not valid JSON" in contents[0]
    assert "must be a JSON object, got null" in contents[1]
    assert "NaN" in contents[2]


def test_d1_empty_arguments_are_an_empty_object_for_a_tool_without_parameters(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    def clock() -> str:
        """The time."""
        return "12:00"

    server.add(calls(Call("clock", ""), Call("read_file", "")), Turn("It is 12:00."))
    outcome = run(server, wire, base, stream, extra=(tool_from_function(clock),))
    assert outcome.codes == [None, "invalid_json"]
    assert outcome.ran == ["clock"]
    assert outcome.sent_back()[0] == "12:00"


# --- D2: arguments as an object (Ollama), or as something else ------------------------------


def test_d2_arguments_sent_as_an_object_are_accepted(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(
        edit_calls(calls(Call("read_file", "{}")), set_arguments({"path": "a.txt"})), Turn("ok")
    )
    outcome = run(server, wire, base, stream)
    assert outcome.codes == [None]
    assert outcome.sent_back() == [ALPHA]


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (["a.txt"], "invalid_arguments"),
        (None, "invalid_arguments"),
        (7, "invalid_arguments"),
        ({"path": ["a.txt"]}, "invalid_arguments"),
        (_MISSING, "invalid_json"),
    ],
    ids=["list", "null", "number", "object-with-a-list", "missing"],
)
def test_d2_arguments_of_another_kind_are_answered(
    server: FakeServer, wire: Wire, base: Path, stream: bool, value: Any, code: str
) -> None:
    server.add(
        edit_calls(calls(Call("read_file", "{}"), Call("move_file", "{}")), set_arguments(value)),
        Turn("ok"),
    )
    outcome = run(server, wire, base, stream, approve=True)
    assert outcome.codes == [code, code]
    assert outcome.ran == []
    assert outcome.approvals.requests == []
    assert outcome.result.status == "succeeded"


# --- D5: schema violations ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (Call("move_file", {"source": "a.txt"}), "'target' is required"),
        (Call("move_file", {}), "'source' is required"),
        (Call("read_file", {"path": 5}), "path: 5 must be string"),
        (Call("read_file", {"path": "a.txt", "mode": "r"}), "unexpected field(s) 'mode'"),
        (Call("read_file", {"path": {"p": "a"}}), 'path: {"p": "a"} must be string'),
        (Call("read_file", {"path": "a.txt", "offset": 0}), "offset"),
        (Call("move_file", {"source": "a.txt", "target": ["archive/"]}), "target"),
    ],
    ids=["missing-target", "empty", "number", "extra-key", "nested", "below-minimum", "list"],
)
def test_d5_schema_violations_name_the_field_and_nothing_runs(
    server: FakeServer, wire: Wire, base: Path, stream: bool, call: Call, named: str
) -> None:
    server.add(calls(call), Turn("ok"))
    before = snapshot(base)
    outcome = run(server, wire, base, stream, approve=True)
    assert outcome.codes == ["invalid_arguments"]
    content = outcome.results[0].result.content
    assert named in content
    assert content.startswith(f"error [invalid_arguments]: {call.name}: ")
    assert len(content) < 200
    assert outcome.ran == []
    assert outcome.approvals.requests == []
    assert snapshot(base) == before


# --- D6: unknown tool names ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["read_fle", "delete_file", " read_file ", "functions.read_file", "READ_FILE"]
)
def test_d6_unknown_names_get_the_list_of_tools(
    server: FakeServer, wire: Wire, base: Path, stream: bool, name: str
) -> None:
    server.add(calls(Call(name, {"path": "a.txt"})), Turn("ok"))
    outcome = run(server, wire, base, stream)
    assert outcome.codes == ["unknown_tool"]
    content = outcome.results[0].result.content
    for tool in ("list_files", "read_file", "search_files", "move_file"):
        assert tool in content
    assert outcome.ran == []
    assert outcome.result.status == "succeeded"


def test_d6_unknown_names_count_toward_the_budgets(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(*[calls(Call("delete_file", {"path": "a.txt"}))] * 4)
    outcome = run(server, wire, base, stream)
    assert outcome.result.status == "failed"
    assert outcome.result.code == "repeated_tool_error"
    assert server.posts == 3
    server.add(*[calls(Call(f"tool_{n}", {})) for n in range(3)], Turn("never"))
    outcome = run(server, wire, base, stream, config=AgentConfig(max_turns=3))
    assert outcome.result.status == "budget_exhausted"
    assert outcome.result.answer == ""


@pytest.mark.parametrize("name", ["", None])
def test_d6_a_call_without_a_name_ends_the_run_with_a_clear_code(
    server: FakeServer, wire: Wire, base: Path, stream: bool, name: str | None
) -> None:
    """README's documented policy (RELIABILITY says TE ``unknown_tool``): a nameless call
    cannot be answered, so the run ends ``malformed_call``; nothing runs."""

    def change(entry: dict[str, Any]) -> None:
        entry.get("function", entry)["name"] = name

    server.add(edit_calls(calls(Call("read_file", {"path": "a.txt"})), change), Turn("never"))
    outcome = run(server, wire, base, stream)
    assert outcome.result.status == "failed"
    assert outcome.result.code == "malformed_call"
    assert "without a name" in (outcome.result.error or "")
    assert outcome.ran == []
    assert server.posts == 1


# --- D7: call ids missing, empty, None, or repeated -----------------------------------------


def _pairs(body: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """The call ids of the assistant's calls, and those of the tool results, in a request."""
    assert body is not None
    if "messages" in body:
        asked = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
        answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    else:
        items = body["input"]
        asked = [i["call_id"] for i in items if i.get("type") == "function_call"]
        answered = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    return asked, answered


@pytest.mark.parametrize("call_id", [None, "", "same"], ids=["missing", "empty", "duplicated"])
def test_d7_a_unique_id_is_made_and_used_on_both_sides(
    server: FakeServer, wire: Wire, base: Path, stream: bool, call_id: str | None
) -> None:
    first = Call("read_file", {"path": "a.txt"}, call_id=call_id)
    second = Call("list_files", {"path": "."}, call_id=call_id)
    server.add(calls(first, second), Turn("ok"))
    outcome = run(server, wire, base, stream)
    assert outcome.codes == [None, None]
    ids = [r.call_id for r in outcome.results]
    assert all(ids)
    assert len(set(ids)) == 2
    asked, answered = _pairs(server.requests[1].body)
    assert asked == answered == ids


def test_d7_none_ids_through_the_raw_json(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    def change(entry: dict[str, Any]) -> None:
        entry["call_id" if "call_id" in entry else "id"] = None

    server.add(edit_calls(calls(Call("read_file", {"path": "a.txt"})), change), Turn("ok"))
    outcome = run(server, wire, base, stream)
    assert outcome.codes == [None]
    asked, answered = _pairs(server.requests[1].body)
    assert asked == answered == [outcome.results[0].call_id]
    assert asked[0]


# --- D9, D11: streamed calls in pieces ------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return data({"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def call_delta(arguments: str, **fields: Any) -> dict[str, Any]:
    function = {"arguments": arguments}
    if "name" in fields:
        function["name"] = fields.pop("name")
    return {"tool_calls": [{**fields, "function": function}]}


D9_STREAMS = {
    "d9": [
        call_delta("", index=0, id="c1", type="function", name="read_file"),
        call_delta('{"pa', index=0, id=None),
        call_delta('th":"a.txt"}', index=0),
    ],
    "no-index-later": [
        call_delta("", index=0, id="c1", name="read_file"),
        call_delta('{"path"'),
        call_delta(':"a.txt"}'),
    ],
    "id-every-chunk": [
        call_delta("", index=0, id="c1", name="read_file"),
        call_delta('{"path":', index=0, id="c1"),
        call_delta('"a.txt"}', index=0, id="c1"),
    ],
    "no-id-at-all": [
        call_delta('{"path":', index=0, name="read_file"),
        call_delta('"a.txt"}', index=0),
    ],
    "object-arguments": [
        {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_file"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": {"path": "a.txt"}}}]},
    ],
}


@pytest.mark.parametrize("case", D9_STREAMS)
def test_d9_chat_call_deltas_make_one_call(server: FakeServer, base: Path, case: str) -> None:
    frames = [chunk({"role": "assistant", "content": None})]
    frames += [chunk(delta) for delta in D9_STREAMS[case]]
    server.add(Events(*frames, chunk({}, "tool_calls"), "data: [DONE]"), Turn("It says alpha."))
    outcome = run(server, "chat", base, True)
    assert outcome.ran == ["read_file"]
    assert outcome.sent_back() == [ALPHA]
    asked, answered = _pairs(server.requests[1].body)
    assert asked == answered
    assert len(asked) == 1
    if case != "no-id-at-all":
        assert asked == ["c1"]
    assert outcome.result.answer == "It says alpha."


def test_d9_parallel_calls_all_at_index_0_are_told_apart_by_id(
    server: FakeServer, base: Path
) -> None:
    deltas = [
        call_delta("", index=0, id="c1", name="read_file"),
        call_delta('{"path": "a.txt"}', index=0),
        call_delta("", index=0, id="c2", name="list_files"),
        call_delta('{"path": "."}', index=0),
    ]
    frames = [chunk(delta) for delta in deltas]
    server.add(Events(*frames, chunk({}, "tool_calls"), "data: [DONE]"), Turn("ok"))
    outcome = run(server, "chat", base, True)
    assert outcome.ran == ["read_file", "list_files"]
    assert [r.call_id for r in outcome.results] == ["c1", "c2"]


def test_d9_responses_completed_without_output_uses_the_items_it_streamed(
    server: FakeServer, base: Path
) -> None:
    turn = calls(Call("read_file", {"path": "a.txt"}, call_id="c1"))
    frames = sse_recording(turn, "responses").decode().split("\n\n")[:-1]
    name, _, payload = frames[-1].partition("\ndata: ")
    completed = json.loads(payload)
    completed["response"]["output"] = []
    server.add(Events(*frames[:-1], f"{name}\n{data(completed)}"), Turn("ok"))
    outcome = run(server, "responses", base, True)
    assert outcome.ran == ["read_file"]
    assert [r.call_id for r in outcome.results] == ["c1"]


D11_TURN = Turn(
    "看一下 a.txt « and list » ",
    calls=[
        Call("read_file", {"path": "a.txt", "note": '"quoted" \\ 中文 \u2028'}),
        Call("list_files", {"path": "."}),
    ],
)


def _awkward_cuts(recording: bytes) -> list[int]:
    """Offsets that split a UTF-8 character, or a CR from its LF."""
    inside = [i for i, b in enumerate(recording) if 0x80 <= b < 0xC0]
    return inside + [i + 1 for i in range(len(recording) - 1) if recording[i : i + 2] == b"\r\n"]


@settings(
    max_examples=30,
    deadline=None,
    # the wire fixture stays the same for every example; too_slow as in the profile (conftest)
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(crlf=st.booleans(), draw=st.data())
def test_d11_a_stream_split_anywhere_gives_the_same_reply(
    wire: Wire, crlf: bool, draw: st.DataObject
) -> None:
    recording = sse_recording(D11_TURN, wire)
    if crlf:
        recording = recording.replace(b"\n", b"\r\n")
    offset = st.one_of(
        st.integers(1, len(recording) - 1), st.sampled_from(_awkward_cuts(recording))
    )
    cuts = draw.draw(st.lists(offset, max_size=30))
    with FakeServer([Split(recording, tuple(cuts))]) as server:
        endpoint = Endpoint(server.base_url, "fake-model", wire=wire)
        with closing(connect(endpoint, replace(FAST, stream=True))) as client:
            response = client.create(ModelRequest([Message("user", "q")]))
    assert output_text(response.items) == D11_TURN.text.strip()
    got = [(c.name, json.loads(c.arguments)) for c in parse_function_calls(response.items)]
    assert got == [(c.name, c.arguments) for c in D11_TURN.calls]
    assert response.finish_reason == "tool_calls"


# --- D12: calls written as text ------------------------------------------------------------

TEXT_CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'


def test_d12_a_text_call_is_parsed_strictly_and_never_the_answer(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(Turn(TEXT_CALL), Turn("It says alpha."))
    outcome = run(server, wire, base, stream)
    assert outcome.codes == [None]
    assert outcome.sent_back() == [ALPHA]
    assert outcome.result.answer == "It says alpha."
    assert server.posts == 2


def test_d12_a_text_call_beside_an_empty_tool_calls_list(
    server: FakeServer, base: Path, stream: bool
) -> None:
    def empty_calls(data: dict[str, Any]) -> dict[str, Any]:
        data["choices"][0]["message"]["tool_calls"] = []
        return data

    server.add(Edited(Turn(TEXT_CALL), empty_calls), Turn("It says alpha."))
    outcome = run(server, "chat", base, stream)
    assert outcome.ran == ["read_file"]
    assert outcome.result.answer == "It says alpha."


@pytest.mark.parametrize(
    "block",
    [
        '{"name": "read_file", "name": "move_file", "arguments": {"path": "a.txt"}}',
        '{"name": "read_file", "arguments": {"path": "a.txt", "path": "archive"}}',
        '{"name": "read_file", "arguments": {"path": "a.txt"}, "arguments": {"path": "b"}}',
    ],
    ids=["two-names", "two-paths", "two-argument-objects"],
)
def test_d12_an_ambiguous_text_call_runs_nothing(
    server: FakeServer, wire: Wire, base: Path, stream: bool, block: str
) -> None:
    """Duplicate keys: parsers disagree on which one wins, so nothing may be chosen."""
    server.add(Turn(f"<tool_call>{block}</tool_call>"), Turn("ok"))
    outcome = run(server, wire, base, stream, approve=True)
    assert outcome.ran == []
    assert outcome.approvals.requests == []
    assert outcome.codes == ["invalid_tool_call"]


def test_d12_a_malformed_text_call_is_a_nudge_not_an_answer(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(
        Turn('<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>'), Turn("ok")
    )
    outcome = run(server, wire, base, stream)
    assert outcome.codes == ["invalid_tool_call"]
    assert "read_file" in outcome.results[0].result.content
    assert outcome.ran == []
    assert outcome.result.answer == "ok"


def test_d12_a_text_call_inside_think_is_not_acted_on_nor_shown(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(Turn(f"<think>{TEXT_CALL}</think>"), Turn(f"<think>{TEXT_CALL}</think>"))
    outcome = run(server, wire, base, stream)
    assert outcome.ran == []
    assert outcome.result.status == "failed"
    assert outcome.result.code == "empty_output"
    assert outcome.result.answer == ""
    assert "tool_call" not in (outcome.result.error or "")


def test_d12_a_text_write_still_needs_approval(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    arguments = {"source": "a.txt", "target": "archive/"}
    move = f"<tool_call>{json.dumps({'name': 'move_file', 'arguments': arguments})}</tool_call>"
    server.add(Turn(move), Turn("Moved."))
    before = snapshot(base)
    outcome = run(server, wire, base, stream, approve=False)
    assert [r.tool for r in outcome.approvals.requests] == ["move_file"]
    assert outcome.codes == ["user_denied"]
    assert snapshot(base) == before
    assert outcome.result.status == "failed"


# --- D13: <think> only, reasoning fields ---------------------------------------------------


def test_d13_think_only_is_asked_again_once_then_fails_empty_output(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(Turn("<think>hmm</think>"), Turn("<think>still thinking</think>\n"), Turn("x"))
    outcome = run(server, wire, base, stream)
    assert outcome.result.status == "failed"
    assert outcome.result.code == "empty_output"
    assert server.posts == 2


def test_d13_think_then_answer_succeeds_on_the_retry(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(Turn("<think>hmm</think>"), Turn("<think>ok</think>The answer."))
    outcome = run(server, wire, base, stream)
    assert outcome.result.answer == "The answer."


@pytest.mark.parametrize("field_name", ["reasoning_content", "reasoning"])
def test_d13_chat_reasoning_fields_are_never_the_answer(
    server: FakeServer, base: Path, field_name: str
) -> None:
    def move_reasoning(data: dict[str, Any]) -> dict[str, Any]:
        message = data["choices"][0]["message"]
        message[field_name] = message.pop("reasoning_content")
        return data

    server.add(
        Edited(Turn("", reasoning="SECRET PLAN"), move_reasoning),
        Edited(Turn("Done.", reasoning="SECRET PLAN"), move_reasoning),
    )
    outcome = run(server, "chat", base)
    assert outcome.result.answer == "Done."
    assert server.posts == 2  # reasoning alone was an empty reply


# --- D14: cut off at the token limit -------------------------------------------------------


CUT_MOVES = ['{"source": "a.txt", "tar', '{"source": "a.txt", "target": "archive/"}']


@pytest.mark.parametrize("arguments", CUT_MOVES, ids=["half", "whole"])
def test_d14_a_call_cut_off_at_the_limit_never_runs(
    server: FakeServer, wire: Wire, base: Path, stream: bool, arguments: str
) -> None:
    cut = Turn(calls=[Call("move_file", arguments)], finish="length")
    server.add(cut, cut, Turn("never"))
    before = snapshot(base)
    outcome = run(server, wire, base, stream, approve=True)
    assert outcome.result.status == "failed"
    assert outcome.result.code == "truncated"
    assert "max_output_tokens" in (outcome.result.error or "")
    assert server.posts in (1, 2)  # asked once more at most
    assert outcome.approvals.requests == []
    assert outcome.ran == []
    assert snapshot(base) == before
    assert_valid_history(outcome.result)


@pytest.mark.parametrize("then", ["close", "reset", "stall"])
def test_d14_a_stream_broken_off_mid_arguments_never_runs(
    server: FakeServer, wire: Wire, base: Path, then: Any
) -> None:
    move = calls(Call("move_file", {"source": "a.txt", "target": "archive/"}))
    mid_arguments = {"chat": 4, "responses": 5}[wire]  # the call's head and a first piece
    cut = Cut(move, mid_arguments, then=then)
    server.add(cut, cut, Turn("never"))
    before = snapshot(base)
    outcome = run(server, wire, base, True, approve=True)
    assert outcome.result.status == "failed"
    assert outcome.result.code in ("stream_incomplete", "stream_stalled")
    assert outcome.approvals.requests == []
    assert outcome.ran == []
    assert snapshot(base) == before
    assert server.posts == 2  # asked once more, never more
    assert_valid_history(outcome.result)


def test_d14_after_a_cut_off_the_retry_asks_for_more_tokens(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(
        Turn(calls=[Call("move_file", CUT_MOVES[0])], finish="length"),
        calls(Call("read_file", {"path": "a.txt"})),
        Turn("It says alpha."),
    )
    config = AgentConfig(request_options={"max_output_tokens": 100})
    outcome = run(server, wire, base, stream, approve=True, config=config)
    assert outcome.ran in ([], ["read_file"])
    assert outcome.approvals.requests == []
    if outcome.result.code == "truncated":  # the policy that does not retry
        assert server.posts == 1
        return
    assert outcome.result.answer == "It says alpha."
    limits = [limit_of(r.body) for r in server.requests]
    assert limits[0] == 100
    assert limits[1] > 100
    assert_valid_history(outcome.result)


def limit_of(body: dict[str, Any] | None) -> int:
    assert body is not None
    value = body.get("max_tokens", body.get("max_output_tokens"))
    assert isinstance(value, int)
    return value


def test_d14_a_text_cut_off_at_the_limit_is_not_an_answer(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(Turn("The revenue was 96", finish="length"))
    server.add(Turn("The revenue was 96", finish="length"))
    outcome = run(server, wire, base, stream)
    assert outcome.result.status == "failed"
    assert outcome.result.code == "truncated"
    assert outcome.result.answer == ""
    assert all(not isinstance(e, AssistantText) for e in outcome.events)


def assert_valid_history(result: RunResult) -> None:
    """Every call in the history has exactly one result, after it (the history can be sent
    again), and every result answers a call."""
    calls_seen: list[str] = []
    answered: list[str] = []
    for item in result.items:
        if isinstance(item, FunctionCall):
            calls_seen.append(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            assert item.call_id in calls_seen
            answered.append(item.call_id)
    assert sorted(answered) == sorted(calls_seen)
    assert len(set(answered)) == len(answered)


# --- D15: huge and deep arguments ----------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "code", "words"),
    [
        ('{"path": "' + "a" * 1_000_000 + '"}', "arguments_too_large", "limit"),
        ("[" * 100_000 + "]" * 100_000, "arguments_too_large", "limit"),
        ('{"path": ' + "[" * 20_000 + "]" * 20_000 + "}", "invalid_json", "nested too deeply"),
    ],
    ids=["1MB", "100k-deep", "20k-deep"],
)
def test_d15_huge_or_deep_arguments_are_refused_before_parsing(
    server: FakeServer, wire: Wire, base: Path, stream: bool, arguments: str, code: str, words: str
) -> None:
    server.add(calls(Call("read_file", arguments)), Turn("ok"))
    outcome = run(server, wire, base, stream)
    assert outcome.codes == [code]
    assert words in outcome.results[0].result.content
    assert len(outcome.sent_back()[0]) < 200
    assert outcome.result.status == "succeeded"


def test_d15_deep_json_in_a_text_call(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    server.add(
        Turn(f'<tool_call>{{"name": "read_file", "arguments": {deep}}}</tool_call>'), Turn("ok")
    )
    outcome = run(server, wire, base, stream)
    assert outcome.codes == ["invalid_tool_call"]
    assert outcome.ran == []


# --- D16, D17: text beside calls; claims; spurious calls ------------------------------------


def test_d16_text_beside_calls_is_not_the_answer(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(
        Turn("I moved the file.", calls=[Call("read_file", {"path": "a.txt"})]),
        Turn("It says alpha."),
    )
    outcome = run(server, wire, base, stream)
    assert outcome.ran == ["read_file"]
    assert outcome.result.answer == "It says alpha."


def test_d16_a_claim_without_a_call_changes_nothing_and_the_record_shows_it(
    server: FakeServer, wire: Wire, base: Path, tmp_path: Path
) -> None:
    server.add(Turn("I moved a.txt into archive/."), Turn("I moved a.txt into archive/."))
    before = snapshot(base)  # told once that no tool made it, the model says it again
    proc = ask_cli(server, wire, base / "proj", "--approve", "all")
    assert proc.returncode == 1  # the claim is checked: no tool moved anything (issue 21)
    assert "change_not_made" in proc.stderr
    assert "nothing was changed" in proc.stderr
    assert snapshot(base) == before
    assert "0 tool calls" in proc.stderr  # the machine-made summary next to the claim


def test_d17_a_spurious_read_is_harmless_and_a_spurious_write_asks(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    server.add(
        calls(Call("read_file", {"path": "a.txt"})),
        calls(Call("move_file", {"source": "a.txt", "target": "archive/"})),
        Turn("done"),
    )
    before = snapshot(base)
    outcome = run(server, wire, base, stream, approve=False)
    assert outcome.codes == [None, "user_denied"]
    request = outcome.approvals.requests[0]
    assert dict(request.details) == {"source": "a.txt", "destination": "archive/a.txt"}
    assert snapshot(base) == before
    assert outcome.result.status == "failed"
    assert outcome.result.code == "user_denied"


# --- through the CLI ----------------------------------------------------------------------


def tool_results(proc: subprocess.CompletedProcess[str]) -> list[Mapping[str, Any]]:
    return [e for e in json_lines(proc.stdout) if e["type"] == "tool_result"]


def test_cli_json_reports_each_malformed_call_with_its_code(
    server: FakeServer, wire: Wire, base: Path
) -> None:
    server.add(
        Turn(TEXT_CALL.replace("a.txt", "archive")),  # text calls: before any native one
        calls(
            Call("read_file", '{"path": "a.txt"'),
            Call("read_fle", {"path": "a.txt"}),
            Call("read_file", {"path": 5}),
            Call("move_file", "null"),
            Call("read_file", {"path": "a.txt"}, call_id=None),
        ),
        Turn("It says alpha."),
    )
    proc = ask_cli(server, wire, base / "proj", "--json", "--approve", "all")
    assert proc.returncode == 0, proc.stderr
    results = tool_results(proc)
    codes = [r["code"] for r in results]
    assert codes == [
        "is_directory",
        "invalid_json",
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
        None,
    ]
    ids = [r["call_id"] for r in results]
    assert all(ids)
    assert len(set(ids)) == len(ids)
    assert json_lines(proc.stdout)[-1]["answer"] == "It says alpha."


def test_cli_truncated_call_exits_1_and_runs_nothing(
    server: FakeServer, wire: Wire, base: Path
) -> None:
    cut = Turn(calls=[Call("move_file", CUT_MOVES[0])], finish="length")
    server.add(cut, cut)
    before = snapshot(base)
    proc = ask_cli(server, wire, base / "proj", "--json", "--approve", "all")
    assert proc.returncode == 1
    end = json_lines(proc.stdout)[-1]
    assert end["status"] == "failed"
    assert end["code"] == "truncated"
    assert tool_results(proc) == []
    assert snapshot(base) == before


def test_cli_nameless_call_exits_1_with_a_message(
    server: FakeServer, wire: Wire, base: Path
) -> None:
    def change(entry: dict[str, Any]) -> None:
        entry.get("function", entry)["name"] = None

    def answer(body: dict[str, Any]) -> Edited:
        return edit_calls(calls(Call("read_file", {"path": "a.txt"})), change)

    server.add(answer)
    proc = ask_cli(server, wire, base / "proj", "--no-stream")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "without a name" in proc.stderr


def test_d_arguments_are_never_echoed_unbounded(
    server: FakeServer, wire: Wire, base: Path, stream: bool
) -> None:
    huge = json.dumps({"path": "a.txt", "pad": "x" * 100_000})
    server.add(calls(Call("read_file", huge)), Turn("ok"))
    outcome = run(server, wire, base, stream)
    assert outcome.codes == ["arguments_too_large"]
    assert len(outcome.sent_back()[0]) < 200
