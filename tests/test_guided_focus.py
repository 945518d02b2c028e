"""Guided mode reads where the question says the answer is: once each file and folder it
names was read, only reads within them, and of the paths their text leads to, are offered.

The schema is the one ``guided_schema`` builds from real file tools' specs; the run through
the loop uses a real project, the real loop and ``GuidedClient`` around the library's
``ScriptedModel``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from minipi.agent import AgentConfig, ToolCallStarted, run_agent
from minipi.ai.testing import ScriptedModel
from minipi.ai.types import Item, Message, ToolSpec
from minipi.evidence.scope import read_scope
from minipi.files import ProjectFiles, create_project_tools
from minipi.guided import ANSWER_BRANCH, GuidedClient, guided_schema
from minipi.guided.state import MAX_LED
from test_guided import branches, call, enum, reply, result

TOML = "In the config the app really uses (config/app.toml), what is the server port?"
CLUES = "Start at clues/alpha.txt and follow the clues: what is the final password?"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[ProjectFiles]:
    for path, text in {
        "config/app.toml": "[server]\nport = 5177\n",
        "config/app.example.toml": "[server]\nport = 8080\n",
        "clues/alpha.txt": "The next clue is in clues/beta.txt\n",
        "clues/beta.txt": "Almost there: open clues/gamma.txt\n",
        "clues/gamma.txt": "The password is Cedar42\n",
        "clues/readme.txt": "Decoy: the password is not here.\n",
    }.items():
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    with ProjectFiles(tmp_path) as sandbox:
        yield sandbox


@pytest.fixture
def specs(project: ProjectFiles) -> tuple[ToolSpec, ...]:
    return tuple(t.spec() for t in create_project_tools(project, approve=lambda _: True))


def toml_items(read_error: bool = False) -> list[Item]:
    """The question, a listing of config/ that shows both files, the named file read."""
    listing = "config/app.toml\nconfig/app.example.toml"
    files = ("config/app.toml", "config/app.example.toml")
    return [
        Message("user", TOML),
        call("list_files", {"path": "config"}, "c1"),
        result("c1", listing, file=files),
        call("read_file", {"path": "config/app.toml"}, "c2"),
        result("c2", "error: no such file" if read_error else "port = 5177", is_error=read_error),
    ]


def test_the_example_beside_the_named_file_is_not_offered_once_it_was_read(
    specs: tuple[ToolSpec, ...],
) -> None:
    items = toml_items()
    before = guided_schema(specs, items[:3])
    assert "config/app.example.toml" in enum(before, "read_file")
    assert read_scope(items) == frozenset({"config/app.toml"})
    assert read_scope(items[:3]) is None
    assert guided_schema(specs, items) == ANSWER_BRANCH  # nothing else to read: the answer


def test_a_named_file_that_could_not_be_read_leaves_the_rest_offered(
    specs: tuple[ToolSpec, ...],
) -> None:
    schema = guided_schema(specs, toml_items(read_error=True))
    assert enum(schema, "read_file") == ["config/app.example.toml"]
    assert "list_files" in branches(schema)


def test_a_new_question_has_its_own_names(specs: tuple[ToolSpec, ...]) -> None:
    items = [*toml_items(), Message("assistant", "5177"), Message("user", "And the example?")]
    schema = guided_schema(specs, items)
    assert "config/app.example.toml" in enum(schema, "read_file")  # it names nothing


def test_a_file_found_by_its_bare_name_ends_the_walk(specs: tuple[ToolSpec, ...]) -> None:
    invoice = "archive/2021/11/invoice-8036.json"
    items: list[Item] = [
        Message("user", "Find the invoice file invoice-8036.json: what is its total?"),
        call("read_file", {"path": invoice}, "c1"),
        result("c1", '{"total_yuan": 14297}'),
    ]
    assert read_scope(items) == frozenset({"invoice-8036.json"})
    assert guided_schema(specs, items) == ANSWER_BRANCH  # not archive/, nor the bare name


def test_a_chain_of_clues_is_followed_through_the_real_loop(project: ProjectFiles) -> None:
    steps = [
        {"tool": "read_file", "arguments": {"path": "clues/alpha.txt"}},
        {"tool": "read_file", "arguments": {"path": "clues/beta.txt"}},
        {"tool": "read_file", "arguments": {"path": "clues/gamma.txt"}},
        {"answer": "The password is Cedar42."},
    ]
    inner = ScriptedModel([reply(json.dumps(step)) for step in steps])
    events: list[object] = []
    client = GuidedClient(inner, answer="plain")
    config = AgentConfig(instructions="Be brief.")
    outcome = run_agent(client, create_project_tools(project), config, CLUES, events.append)
    inner.assert_complete()
    assert (outcome.status, outcome.answer) == ("succeeded", "The password is Cedar42.")
    read = [json.loads(e.arguments)["path"] for e in events if isinstance(e, ToolCallStarted)]
    assert read == ["clues/alpha.txt", "clues/beta.txt", "clues/gamma.txt"]
    schemas = [r.options["response_format"]["schema"] for r in inner.requests]
    # no listing showed beta.txt or gamma.txt: the text of the file before named each
    assert enum(schemas[1], "read_file") == ["clues/beta.txt"]
    assert enum(schemas[2], "read_file") == ["clues/gamma.txt"]
    assert "list_files" not in branches(schemas[1])  # not the folder, not its decoy
    assert schemas[3] == ANSWER_BRANCH


def test_the_paths_a_text_leads_to_are_bounded_and_in_one_order(
    specs: tuple[ToolSpec, ...],
) -> None:
    many = " ".join(f"docs/page-{n:03d}.md" for n in range(100, 0, -1))
    items: list[Item] = [
        Message("user", "What does index.md point to?"),
        call("read_file", {"path": "index.md"}, "c1"),
        result("c1", many),
    ]
    offered = enum(guided_schema(specs, items), "read_file")
    assert len(offered) == MAX_LED
    assert offered == sorted(offered)
    assert offered[0] == "docs/page-001.md"
