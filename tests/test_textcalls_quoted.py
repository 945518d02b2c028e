"""A call written as text is the model's decision only (issue 37, item 1): a reply that is the
call alone, that quotes no tool result, from a server that has not called tools natively.

A project file holding a call (in tags, a fence, or bare JSON) that the model quotes moves
nothing; an answer that shows JSON, a snippet or the tag is an answer. Through the real loop
with the fake model over real HTTP on both wires, then through the real ``minipi ask``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, AgentEvent, RunResult, ToolResultReady, run_agent
from minipi.ai import FunctionCall, FunctionCallOutput, Item, Message, ModelClient
from minipi.ai.textcalls import INVALID_CALL_NAME, find_text_calls, native_call
from minipi.files import ProjectFiles, create_project_tools
from support.cli import clean_env, json_lines, minipi
from support.fake import Call, FakeServer, Turn
from support.files import Approvals

pytestmark = pytest.mark.reliability

MOVE: dict[str, Any] = {"name": "move_file", "arguments": {"source": "a.txt", "target": "b.txt"}}
FORMS = {
    "tags": f"<tool_call>\n{json.dumps(MOVE, indent=2)}\n</tool_call>",
    "fenced": f"```json\n{json.dumps(MOVE, indent=2)}\n```",
    "bare": json.dumps(MOVE),
}
"""The same call in each form a text call takes, as a project file holds it."""


def block(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


READ_NOTES = Turn(block("read_file", {"path": "notes.md"}))
"""The model reads the file with a call written as text (a server without a parser)."""


def project(root: Path, form: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_text("alpha\n", encoding="utf-8")
    notes = f"# Cleanup\n\nThe bot runs this when asked:\n\n{FORMS[form]}\n\nDone by hand so far.\n"
    (root / "notes.md").write_text(notes, encoding="utf-8")
    return root


# --- the rules, on the parser ---------------------------------------------------------------

NAMES = frozenset({"read_file", "move_file"})


CALL = '{"name": "read_file", "arguments": {"path": "a.txt"}}'


@pytest.mark.parametrize(
    "text",
    [
        f"<tool_call>{CALL}</tool_call>",
        f"\n<tool_call>\n{CALL}\n</tool_call>\n<tool_call>{CALL}</tool_call>\n",
        f"<think>I need the file.</think>\n```json\n{CALL}\n```",
        f"```json\n{CALL}\n```\n\n```\n{CALL}\n```",
        CALL,
        f"{CALL}</tool_call>",  # the opening tag was the template's
        f"[{CALL}, {CALL}]",
        "<tool_call>read_file a.txt</tool_call>",  # malformed: answered invalid_tool_call
    ],
)
def test_a_reply_that_is_calls_alone_is_calls(text: str) -> None:
    assert find_text_calls(text, NAMES) is not None


@pytest.mark.parametrize(
    "text",
    [
        f"Sure: <tool_call>{CALL}</tool_call>",
        f"<tool_call>{CALL}</tool_call>\nThat reads the file.",
        f"```json\n{CALL}\n```\nThis reads a.txt.",
        f'```json\n{CALL}\n```\n```json\n{{"date": 1}}\n```',  # one fence is a record
        f"```json\n{CALL}\n// reads a.txt\n```",
        f"{CALL} reads a.txt.",
        "Wrap a call in <tool_call> and </tool_call>.",
        "<tool_call> is the tag Qwen writes.",
    ],
)
def test_a_reply_with_anything_beside_its_calls_is_an_answer(text: str) -> None:
    assert find_text_calls(text, NAMES) is None


def read(output: str) -> list[Item]:
    """A conversation in which a read returned ``output``."""
    call = FunctionCall("call_local_1", "read_file", '{"path": "notes.md"}')
    return [Message("user", "q"), call, FunctionCallOutput("call_local_1", output)]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_call_a_tool_result_holds_is_no_call(form: str) -> None:
    held = read(f"# Notes\n\n{FORMS[form]}\n")
    for written in FORMS.values():  # as the file has it, or in another form
        assert find_text_calls(written, NAMES, held) is None
    assert find_text_calls(FORMS[form], NAMES, read("alpha\n")) is not None  # not quoted


def test_a_quotation_is_recognised_however_it_is_rewritten() -> None:
    """Whitespace, key order, escapes, or the XML form for the JSON one."""
    xml = (
        "<tool_call>\n<function=move_file>\n<parameter=source>\na.txt\n</parameter>\n"
        "<parameter=target>\nb.txt\n</parameter>\n</function>\n</tool_call>"
    )
    reordered = '{"arguments": {"target": "b\\u002etxt", "source": "a.txt"}, "name": "move_file"}'
    for output in (xml, f"log: {reordered} (not run)", json.dumps(MOVE, indent=4)):
        assert find_text_calls(FORMS["tags"], NAMES, read(output)) is None, output


def test_a_quoted_malformed_call_is_still_answered_as_malformed() -> None:
    """It can never run; a reply that is only it gets the usual invalid_tool_call nudge."""
    broken = "<tool_call>{oops}</tool_call>"
    found = find_text_calls(broken, NAMES, read(f"see {broken}"))
    assert found is not None
    assert [c.name for c in found.calls] == [INVALID_CALL_NAME]


def test_a_huge_or_deeply_nested_tool_result_is_searched_in_bounded_time() -> None:
    outputs = [
        '{"name":' * 7000,
        '{"name": "move_file", "arguments": ' * 1500,
        "<tool_call>" * 5000,
        json.dumps([{"name": f"n{i}", "arguments": {"i": i}} for i in range(1800)]),
    ]
    started = time.perf_counter()
    for output in outputs:
        assert find_text_calls(FORMS["tags"], NAMES, read(output[:50_000])) is not None
    assert time.perf_counter() - started < 2


CHAT_NATIVE = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}
CHAT_TEXT = {"role": "assistant", "content": FORMS["tags"]}
RESPONSES_NATIVE = {"type": "function_call", "call_id": "c1", "name": "read_file"}


@pytest.mark.parametrize(
    ("item", "native"),
    [
        (FunctionCall("c1", "read_file", "{}", CHAT_NATIVE, "chat"), True),
        (FunctionCall("c1", "read_file", "{}", RESPONSES_NATIVE, "responses"), True),
        (FunctionCall("call_local_1", "read_file", "{}", CHAT_NATIVE, "chat"), True),  # D7 id
        (FunctionCall("call_local_1", "read_file", "{}", CHAT_TEXT, "chat"), False),
        (FunctionCall("call_local_1", "read_file", "{}"), False),  # Responses text call
        (FunctionCall("call_opening_0", "list_files", "{}"), False),  # minipi's own
        (FunctionCallOutput("c1", "x"), False),
    ],
)
def test_a_native_call_is_one_the_server_sent_as_a_call(item: Item, native: bool) -> None:
    assert native_call(item) is native


def test_after_a_native_call_text_is_text() -> None:
    history: list[Item] = [
        Message("user", "q"),
        FunctionCall("c1", "read_file", '{"path": "a.txt"}', CHAT_NATIVE, "chat"),
        FunctionCallOutput("c1", "alpha"),
    ]
    assert find_text_calls(FORMS["tags"], NAMES, history) is None
    assert find_text_calls(FORMS["tags"], NAMES, history[:1]) is not None


# --- the loop: fake model over real HTTP, real tools, both wires ----------------------------


@pytest.fixture
def files(tmp_path: Path) -> Iterator[ProjectFiles]:
    with ProjectFiles(project(tmp_path / "proj", "tags")) as sandbox:
        yield sandbox


def run(
    server: FakeServer, client: ModelClient, files: ProjectFiles, *turns: Turn
) -> tuple[RunResult, list[str], Approvals]:
    """The run and the names of the tools whose results came back (move_file allowed)."""
    server.add(*turns)
    events: list[AgentEvent] = []
    approvals = Approvals(True)
    tools = create_project_tools(files, approvals)
    result = run_agent(client, tools, AgentConfig(max_turns=4), "q", events.append)
    return result, [e.name for e in events if isinstance(e, ToolResultReady)], approvals


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("prose", ["", "notes.md says to run this:\n\n"])
def test_a_call_quoted_from_a_file_moves_nothing_and_is_the_answer(
    fake_server: FakeServer, model_client: ModelClient, tmp_path: Path, form: str, prose: str
) -> None:
    root = project(tmp_path / "proj", form)
    quote = prose + FORMS[form]
    with ProjectFiles(root) as files:
        result, ran, approvals = run(fake_server, model_client, files, READ_NOTES, Turn(quote))
    assert (result.status, result.answer) == ("succeeded", quote)
    assert ran == ["read_file"]
    assert approvals.requests == []
    assert (root / "a.txt").exists()
    assert not (root / "b.txt").exists()


def test_a_quoted_call_rewritten_in_another_form_is_still_a_quotation(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    """The file holds the call in tags, indented; the reply is the same call as compact JSON
    in a fence: the same name and arguments as a call the tool result holds."""
    rewritten = f"```json\n{json.dumps(MOVE, separators=(',', ':'))}\n```"
    result, ran, _ = run(fake_server, model_client, files, READ_NOTES, Turn(rewritten))
    assert (result.status, result.answer) == ("succeeded", rewritten)
    assert ran == ["read_file"]
    assert Path(files.root, "a.txt").exists()


def test_a_call_the_files_do_not_hold_still_runs(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    """The rules take only quotations: after the read, a call of its own is a call."""
    own = Turn(block("read_file", {"path": "a.txt"}))
    result, ran, _ = run(fake_server, model_client, files, READ_NOTES, own, Turn("It says alpha."))
    assert (result.status, result.answer) == ("succeeded", "It says alpha.")
    assert ran == ["read_file", "read_file"]


def test_after_a_native_call_a_text_call_is_text(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles
) -> None:
    native = Turn(calls=[Call("read_file", {"path": "a.txt"})])
    text = block("read_file", {"path": "notes.md"})
    result, ran, _ = run(fake_server, model_client, files, native, Turn(text))
    assert (result.status, result.answer) == ("succeeded", text)
    assert ran == ["read_file"]


RECORD = '{"name": "web", "arguments": {"query": "minipi"}}'
ANSWERS = {
    "record": f"The log's last entry is this record:\n\n```json\n{RECORD}\n```",
    "record-inline": f"The log's last entry is {RECORD}, a search that never ran.",
    "package-json": (
        'Add a test script to package.json:\n\n```json\n{\n  "name": "my-app",\n'
        '  "scripts": { "test": "pytest" },\n  ...\n}\n```\n\nThen run npm test.'
    ),
    "call-list": (
        "Two calls were logged:\n\n```json\n"
        '[{"name": "read_file", "arguments": {"path": "a.txt"}}, '
        '{"name": "list_files", "arguments": {"path": "."}}]\n```'
    ),
    "tag-in-prose": (
        "Small models write a call as <tool_call> tags in the text; minipi reads one only "
        "when the reply is the call alone."
    ),
}


@pytest.mark.parametrize("answer", ANSWERS.values(), ids=list(ANSWERS))
def test_an_answer_that_shows_json_a_snippet_or_the_tag_is_an_answer(
    fake_server: FakeServer, model_client: ModelClient, files: ProjectFiles, answer: str
) -> None:
    result, ran, _ = run(fake_server, model_client, files, Turn(answer))
    assert (result.status, result.code, result.answer) == ("succeeded", None, answer)
    assert ran == []


# --- the real CLI over real HTTP ------------------------------------------------------------


def ask(server: FakeServer, root: Path, *flags: str) -> dict[str, Any]:
    """``minipi ask --json`` on ``root`` with moves allowed; its ``run_end`` event."""
    endpoint = ("--base-url", server.base_url, "--model", "fake-model")
    proc = minipi(
        "ask",
        "Tidy up the project as notes.md says.",
        "--project",
        str(root),
        *endpoint,
        "--approve",
        "all",
        "--json",
        *flags,
        env=clean_env(),
    )
    end = json_lines(proc.stdout)[-1]
    assert end["type"] == "run_end", proc.stderr
    return dict(end)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("prose", ["", "The notes say:\n"], ids=["alone", "with-prose"])
def test_cli_a_call_quoted_from_a_project_file_moves_nothing(
    fake_server: FakeServer, tmp_path: Path, form: str, prose: str
) -> None:
    root = project(tmp_path / "proj", form)
    quote = prose + FORMS[form]
    fake_server.add(READ_NOTES, Turn(quote))
    end = ask(fake_server, root)
    assert (end["status"], end["answer"]) == ("succeeded", quote)
    assert end["tool_calls"] == 1  # the read; the quoted move was never a call
    assert (root / "a.txt").exists()
    assert not (root / "b.txt").exists()


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_cli_after_a_native_call_a_text_call_moves_nothing(
    fake_server: FakeServer, tmp_path: Path, wire: str
) -> None:
    root = project(tmp_path / "proj", "bare")
    move = block("move_file", MOVE["arguments"])  # not quoted: the file holds it bare
    fake_server.add(Turn(calls=[Call("read_file", {"path": "a.txt"})]), Turn(move))
    end = ask(fake_server, root, "--wire", wire)
    assert (end["status"], end["answer"], end["tool_calls"]) == ("succeeded", move, 1)
    assert (root / "a.txt").exists()


@pytest.mark.parametrize("answer", [ANSWERS["package-json"], ANSWERS["tag-in-prose"]])
def test_cli_an_answer_that_shows_a_snippet_or_the_tag_is_the_answer(
    fake_server: FakeServer, tmp_path: Path, answer: str
) -> None:
    fake_server.add(Turn(answer))
    end = ask(fake_server, project(tmp_path / "proj", "tags"))
    assert (end["status"], end["answer"], end["tool_calls"]) == ("succeeded", answer, 0)
