"""A result the request already holds is sent once (``minipi.agent.same``), on both wires,
over real HTTP: a follow-up's read of an unchanged file, or of a range of it, is a pointer to
the first; a changed file, and a copy the context had to shorten, are sent whole; the
history keeps both reads whole, so the evidence check traces the answer to this question's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from minipi import AgentConfig, Endpoint, connect, run_agent
from minipi.agent import RunResult, RunView
from minipi.agent.same import SameResults
from minipi.ai import Wire
from minipi.ai.types import FunctionCall, FunctionCallOutput, Message, ModelRequest
from minipi.files import ProjectFiles, create_project_tools
from support.cli import tool_outputs
from support.fake import Call, FakeServer, Turn

POINTER = '(unchanged: this text is in the result of read_file {"path": "notes.txt"} above)'


def _notes(root: Path, lines: int = 40) -> Path:
    notes = root / "notes.txt"
    notes.write_text("".join(f"line {n}: value {n * 7}\n" for n in range(lines)), "utf-8")
    return notes


def _ask(
    server: FakeServer, root: Path, wire: Wire, history: Any, config: AgentConfig | None = None
) -> RunResult:
    client = connect(Endpoint(server.base_url, "fake-model", wire=wire))
    try:
        with ProjectFiles(root) as files:
            return run_agent(client, create_project_tools(files), config or AgentConfig(), history)
    finally:
        client.close()


def _read(**arguments: Any) -> Turn:
    return Turn(calls=[Call("read_file", {"path": "notes.txt", **arguments})])


@pytest.mark.parametrize("wire", ["chat", "responses"])
def test_a_follow_ups_read_of_an_unchanged_file_is_sent_as_a_pointer(
    fake_server: FakeServer, tmp_path: Path, wire: Wire
) -> None:
    _notes(tmp_path)
    fake_server.add(_read(), Turn("line 3 is 21"), _read(), Turn("line 4 is 28"))
    first = _ask(fake_server, tmp_path, wire, "What is line 3 of notes.txt?")
    history = [*first.items, Message("user", "And line 4 of notes.txt?")]
    second = _ask(fake_server, tmp_path, wire, history)
    assert second.status == "succeeded", second.error
    sent = tool_outputs(fake_server.requests[-1].body)
    assert "line 39: value 273" in sent[0]
    assert sent[1] == POINTER
    assert second.evidence is not None
    (claim,) = [c for c in second.evidence.claims if c.claim.value == "28"]
    assert claim.supported
    assert claim.sources[0].question is None  # traced to this question's own read


def test_a_range_of_a_file_read_whole_is_a_pointer_and_a_changed_file_is_sent_whole(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    notes = _notes(tmp_path)
    fake_server.add(_read(), Turn("ok"), _read(offset=10, limit=20), Turn("70"))
    first = _ask(fake_server, tmp_path, "chat", "What is in notes.txt?")
    _ask(fake_server, tmp_path, "chat", [*first.items, Message("user", "And line 10?")])
    assert tool_outputs(fake_server.requests[-1].body)[-1] == POINTER
    notes.write_text(notes.read_text("utf-8") + "line 40: value 280\n", "utf-8")
    fake_server.add(_read(), Turn("280"))
    _ask(fake_server, tmp_path, "chat", [*first.items, Message("user", "And line 40?")])
    assert "line 40: value 280" in tool_outputs(fake_server.requests[-1].body)[-1]


def test_a_copy_shortened_to_fit_the_context_is_never_pointed_to() -> None:
    """An earlier copy the context had to shorten is not what the request holds: the later
    one is the only whole copy, so it is sent whole (a pointer would point at text the
    model cannot see)."""
    text = "".join(f"line {n}: value {n * 7}\n" for n in range(40))
    items = (
        FunctionCall("c1", "read_file", '{"path": "notes.txt"}'),
        FunctionCallOutput("c1", text),
        FunctionCall("c2", "read_file", '{"path": "notes.txt"}'),
        FunctionCallOutput("c2", text),
    )
    request = ModelRequest(items=items)
    pointed = SameResults().request(request, RunView(items, 2, 2))
    assert [i.output for i in pointed.items if isinstance(i, FunctionCallOutput)] == [
        text, POINTER
    ]  # fmt: skip
    shortened = RunView(items, 2, 2, shortened=frozenset({"c1"}))
    assert SameResults().request(request, shortened) is request


def test_a_short_result_is_sent_again_as_it_is(fake_server: FakeServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("orders: 128\n", "utf-8")
    fake_server.add(_read(), Turn("128"), _read(), Turn("128"))
    first = _ask(fake_server, tmp_path, "chat", "How many orders are in notes.txt?")
    _ask(fake_server, tmp_path, "chat", [*first.items, Message("user", "Sure?")])
    assert tool_outputs(fake_server.requests[-1].body) == ["orders: 128\n"] * 2
