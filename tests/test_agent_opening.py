"""Opening calls (``AgentConfig.opening_calls``): run before the first request of a
conversation, as if the model had asked, over real HTTP on both wires; the CLI opens a
guided run with the project's top level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, AgentEvent, ToolCallStarted, run_agent
from minipi.ai.types import FunctionCall, FunctionCallOutput, Message, ModelClient
from minipi.errors import AgentError
from minipi.files import ProjectFiles, create_project_tools
from support.cli import copy_example, minipi
from support.fake import Call, FakeServer, Turn

OPENING = (("list_files", {"path": "."}),)


def ask(server: FakeServer, project: Path, question: str, *extra: str) -> Any:
    endpoint = ("--base-url", server.base_url, "--model", "fake-model")
    return minipi("ask", question, "--project", str(project), *endpoint, *extra)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "daily.json").write_text('{"orders": 128}', encoding="utf-8")
    return tmp_path


def _sent(fake_server: FakeServer, index: int) -> str:
    """The request's history as the server got it, as text (either wire)."""
    body = fake_server.requests[index].body
    assert body is not None
    return json.dumps(body.get("messages") or body.get("input"), ensure_ascii=False)


def test_the_first_request_holds_the_opening_calls_results(
    fake_server: FakeServer, model_client: ModelClient, project: Path
) -> None:
    fake_server.add(
        Turn(calls=[Call("read_file", {"path": "reports/daily.json"})]), Turn("128 orders")
    )
    events: list[AgentEvent] = []
    config = AgentConfig(opening_calls=OPENING)
    with ProjectFiles(project) as files:
        result = run_agent(
            model_client, create_project_tools(files), config, "orders?", events.append
        )
    assert (result.status, result.turns) == ("succeeded", 2)  # the opening is no request
    first = _sent(fake_server, 0)
    assert "call_opening_1" in first
    assert "reports/" in first  # the listing's output, before the model said anything
    opening, listing = result.items[1:3]
    assert isinstance(opening, FunctionCall)
    assert (opening.name, json.loads(opening.arguments)) == ("list_files", {"path": "."})
    assert isinstance(listing, FunctionCallOutput)
    assert listing.call_id == opening.call_id
    assert listing.details["choices"]["dir"] == ["reports"]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.turn, e.name) for e in started] == [(0, "list_files"), (1, "read_file")]
    assert result.evidence is not None
    assert result.evidence.tool_results == 2


def test_a_conversations_later_question_gets_no_opening(
    fake_server: FakeServer, model_client: ModelClient, project: Path
) -> None:
    fake_server.add(Turn("first"), Turn("second"))
    config = AgentConfig(opening_calls=OPENING)
    with ProjectFiles(project) as files:
        tools = create_project_tools(files)
        first = run_agent(model_client, tools, config, "q1")
        second = run_agent(model_client, tools, config, [*first.items, Message("user", "q2")])
    calls = [i for i in second.items if isinstance(i, FunctionCall)]
    assert [c.call_id for c in calls] == ["call_opening_1"]  # the first question's only
    assert second.answer == "second"


@pytest.mark.parametrize(
    ("name", "why"), [("list_fils", "is not registered"), ("move_file", "changes things")]
)
def test_an_opening_call_that_would_not_only_read_is_refused_before_any_request(
    fake_server: FakeServer, model_client: ModelClient, project: Path, name: str, why: str
) -> None:
    config = AgentConfig(opening_calls=((name, {"source": "a", "target": "b"}),))
    with ProjectFiles(project) as files:
        tools = create_project_tools(files, approve=lambda _: True)
        with pytest.raises(AgentError, match=why) as raised:
            run_agent(model_client, tools, config, "q")
    assert raised.value.code == "invalid_opening_call"
    assert fake_server.posts == 0


def _guided(reply: str, schemas: list[str]) -> Any:
    def answer(body: dict[str, Any]) -> Turn:
        schemas.append(json.dumps(body["response_format"]["schema"], ensure_ascii=False))
        return Turn(text=reply)

    return answer


def test_a_guided_cli_run_opens_with_the_projects_top_level(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project = copy_example("shelter", tmp_path)
    schemas: list[str] = []
    fake_server.add(
        _guided('{"tool": "list_files", "arguments": {"path": "inbox"}}', schemas),
        _guided('{"answer": "inbox 里有三只宠物。"}', schemas),
    )
    proc = ask(fake_server, project, "这里有哪些宠物？", "--guided")  # names no folder
    assert proc.returncode == 0, proc.stderr
    assert "[开场调用] list_files" in proc.stderr
    assert '"inbox"' in schemas[0]  # the listing showed it before the first reply
    assert '"."' not in schemas[0]  # the root is listed already
    assert '"answer"' not in schemas[0]  # a listing is no content to answer from
    assert "archive/" in _sent(fake_server, 0)


def test_an_unguided_cli_run_has_no_opening(fake_server: FakeServer, tmp_path: Path) -> None:
    project = copy_example("shelter", tmp_path)
    fake_server.add(Turn("no idea"))
    proc = ask(fake_server, project, "inbox 里有什么？")
    assert proc.returncode == 0, proc.stderr
    assert "开场调用" not in proc.stderr
    assert "archive/" not in _sent(fake_server, 0)
