"""Guided mode reads what the question names: facts ranked by relevance, named paths offered,
follow-up reads offered again, the answer waits for a named file and for an asked change."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, JsonObject, Message, ToolSpec
from minipi.files import ProjectFiles, create_project_tools
from minipi.guided import guided_schema
from minipi.guided.grammar import guided_facts
from minipi.guided.rank import Question

MOVE = frozenset({"move_file"})


@pytest.fixture
def specs(tmp_path: Path) -> Iterator[tuple[ToolSpec, ...]]:
    with ProjectFiles(tmp_path) as files:
        yield tuple(t.spec() for t in create_project_tools(files, approve=lambda _: True))


def call(name: str, arguments: JsonObject, call_id: str) -> FunctionCall:
    return FunctionCall(call_id, name, json.dumps(arguments))


def listing(call_id: str, files: Sequence[str], dirs: Sequence[str] = ()) -> FunctionCallOutput:
    details = {"choices": {"file": list(files), "dir": list(dirs)}, "output": "paths"}
    return FunctionCallOutput(call_id, "\n".join(files), details=details)


def names(schema: JsonObject) -> set[str]:
    found = set()
    for branch in schema.get("anyOf", [schema]):
        properties = branch["properties"]
        found.add("answer" if "answer" in properties else properties["tool"]["const"])
    return found


def read_paths(schema: JsonObject) -> list[str]:
    for branch in schema.get("anyOf", [schema]):
        if branch["properties"].get("tool") == {"const": "read_file"}:
            values: list[str] = branch["properties"]["arguments"]["properties"]["path"]["enum"]
            return values
    return []


def test_the_question_names_paths_words_and_tokens() -> None:
    question = Question.of("In the config the app uses (config/app.toml), what is the port?")
    assert question.named_files == ("config/app.toml",)
    assert Question.of("Move 猫咪团子 from inbox/ to archive/.").named_dirs == ("inbox", "archive")
    assert Question.of("营收是多少？").words == {"营收", "收是", "是多", "多少"}  # no glossary
    assert Question.of("How many ERROR lines in logs/build.log?").tokens == (
        "ERROR",
        "logs/build.log",
    )


def test_a_named_file_is_offered_and_read_before_the_answer(specs: Sequence[ToolSpec]) -> None:
    question = "What port does config/app.toml set?"
    items: list[Item] = [Message("user", question), call("list_files", {"path": "."}, "c1")]
    items.append(listing("c1", ["config/app.example.toml"], ["config"]))
    schema = guided_schema(specs, items)
    assert read_paths(schema) == ["config/app.example.toml", "config/app.toml"]
    items += [call("read_file", {"path": "config/app.example.toml"}, "c2")]
    items += [FunctionCallOutput("c2", "port = 8080\n")]
    assert "answer" not in names(guided_schema(specs, items))  # the named file is unread
    items += [call("read_file", {"path": "config/app.toml"}, "c3")]
    items += [FunctionCallOutput("c3", "port = 4588\n")]
    assert "answer" in names(guided_schema(specs, items))


def test_a_follow_up_may_read_again_what_an_earlier_question_read(
    specs: Sequence[ToolSpec],
) -> None:
    items: list[Item] = [
        Message("user", "what is in a.txt?"),
        call("read_file", {"path": "a.txt"}, "c1"),
    ]
    items += [FunctionCallOutput("c1", "hello\n"), Message("assistant", "hello")]
    assert "a.txt" not in read_paths(guided_schema(specs, items))
    items += [Message("user", "and how long is a.txt?")]
    assert "a.txt" in read_paths(guided_schema(specs, items))


def test_an_asked_change_comes_before_the_answer(specs: Sequence[ToolSpec]) -> None:
    items: list[Item] = [Message("user", "Please move cat.txt from inbox/ to archive/.")]
    items += [call("list_files", {"path": "inbox"}, "c1"), listing("c1", ["inbox/cat.txt"])]
    items += [call("read_file", {"path": "inbox/cat.txt"}, "c2")]
    items += [FunctionCallOutput("c2", "cat, 3 years old\n")]
    assert "answer" not in names(guided_schema(specs, items, mutating=MOVE))
    items += [call("move_file", {"source": "inbox/cat.txt", "target": "archive"}, "c3")]
    items += [FunctionCallOutput("c3", "moved inbox/cat.txt -> archive/cat.txt")]
    assert names(guided_schema(specs, items, mutating=MOVE)) == {"answer"}


def read(path: str, text: str, n: int) -> list[Item]:
    return [call("read_file", {"path": path}, f"r{n}"), FunctionCallOutput(f"r{n}", text)]


def test_the_largest_row_and_the_named_file_rank_first() -> None:
    csv = "region,q3_revenue_yuan,orders\nNorth,18200,90\nEast,30100,12\nWest,9000,50\n"
    items = [Message("user", "Which region had the highest Q3 revenue?"), *read("s.csv", csv, 1)]
    assert guided_facts(items).content[0] == "East,30100,12"
    fewest = [Message("user", "库存最少的是哪个？"), *read("s.csv", "sku,units\nA,40\nB,3\n", 1)]
    assert guided_facts(fewest).content[0] == "B,3"
    toml: list[Item] = [Message("user", "What port does config/app.toml set?")]
    toml += read("config/app.toml", "port = 4588\n", 1)
    toml += [*read("config/app.example.toml", "port = 8080\n", 2)]  # newer, but not named
    assert guided_facts(toml).content[0] == "port = 4588"


def test_a_date_question_ranks_the_dated_line_first() -> None:
    text = "# Changelog\n\n## 1.4.3 - 2026-10-03\n\n- change 0\n"
    question = "According to CHANGELOG.md, what is the latest version and its date?"
    items: list[Item] = [Message("user", question)]
    items += read("CHANGELOG.md", text, 1)
    assert guided_facts(items).content[0] == "## 1.4.3 - 2026-10-03"
