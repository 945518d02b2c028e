"""The tools as the loop sees them: schemas, validation, error results, output, details."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minipi.agent.tools import AgentTool
from minipi.errors import FileAccessError
from minipi.files import (
    PROJECT_TOOLS,
    ProjectFiles,
    create_project_tools,
    make_list_files_tool,
    make_move_file_tool,
    make_read_file_tool,
    make_search_files_tool,
)
from minipi.files.tools import MOVE_WORDS
from support.files import DAILY, SECRET, Approvals, Project, make_project, moved

CAT = "inbox/猫咪小花.txt"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path)


@pytest.fixture
def files(project: Project) -> Iterator[ProjectFiles]:
    with project.open() as opened:
        yield opened


@pytest.fixture
def tools(files: ProjectFiles) -> dict[str, AgentTool]:
    return {t.name: t for t in create_project_tools(files, approve=Approvals())}


def test_create_project_tools_adds_move_only_with_an_approver(files: ProjectFiles) -> None:
    assert [t.name for t in create_project_tools(files)] == [
        "list_files",
        "read_file",
        "search_files",
    ]
    with_move = create_project_tools(files, approve=Approvals())
    assert tuple(t.name for t in with_move) == PROJECT_TOOLS
    assert [t.mutating for t in with_move] == [False, False, False, True]


def test_the_factories_build_the_same_tools(files: ProjectFiles) -> None:
    names = [
        make_list_files_tool(files).name,
        make_read_file_tool(files).name,
        make_search_files_tool(files).name,
        make_move_file_tool(files, Approvals()).name,
    ]
    assert names == ["list_files", "read_file", "search_files", "move_file"]


def test_schemas_are_strict_objects_with_the_contract_names(tools: dict[str, AgentTool]) -> None:
    expected = {
        "list_files": (["path"], ["path"]),
        "read_file": (["path", "offset", "limit"], ["path"]),
        "search_files": (["query", "path"], ["query"]),
        "move_file": (["source", "target"], ["source", "target"]),
    }
    for name, (properties, required) in expected.items():
        parameters = tools[name].parameters
        assert parameters["type"] == "object"
        assert list(parameters["properties"]) == properties
        assert parameters["required"] == required
        assert parameters["additionalProperties"] is False
        assert tools[name].spec().name == name
        assert tools[name].description.isascii()
    path_help = tools["list_files"].parameters["properties"]["path"]["description"]
    assert "relative to the project root; use . for the root" in path_help


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("list_files", {}),
        ("list_files", {"path": 5}),
        ("list_files", {"path": None}),
        ("list_files", {"path": ".", "recursive": True}),
        ("list_files", {"path": {"p": "a"}}),
        ("read_file", {"path": "notes.txt", "offset": 0}),
        ("read_file", {"path": "notes.txt", "limit": "2"}),
        ("read_file", {"path": "notes.txt", "offset": True}),
        ("search_files", {"path": "."}),
        ("move_file", {"source": CAT}),
        ("move_file", {"source": CAT, "target": "archive", "force": True}),
    ],
)
def test_schema_violations_are_invalid_arguments(
    tools: dict[str, AgentTool], project: Project, name: str, arguments: dict[str, Any]
) -> None:
    before = project.snapshot()
    result = tools[name].execute(arguments)
    assert result.is_error
    assert result.code == "invalid_arguments"
    assert project.snapshot() == before


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("read_file", {"path": "/etc/passwd"}, "absolute_path"),
        ("read_file", {"path": "../outside/secret.txt"}, "parent_ref"),
        ("read_file", {"path": ""}, "invalid_path"),
        ("read_file", {"path": "a\x00b"}, "invalid_path"),
        ("read_file", {"path": "reports"}, "is_directory"),
        ("read_file", {"path": "missing.txt"}, "not_found"),
        ("read_file", {"path": "notes.txt", "offset": 99}, "invalid_range"),
        ("list_files", {"path": "notes.txt"}, "not_a_directory"),
        ("search_files", {"query": ""}, "invalid_query"),
        ("search_files", {"query": "x", "path": "/"}, "absolute_path"),
        ("move_file", {"source": "reports", "target": "archive"}, "is_directory"),
        ("move_file", {"source": CAT, "target": "../outside"}, "parent_ref"),
    ],
)
def test_refusals_become_error_results_with_the_code(
    tools: dict[str, AgentTool], name: str, arguments: dict[str, Any], code: str
) -> None:
    result = tools[name].execute(arguments)
    assert result.is_error
    assert result.code == code
    assert result.content.startswith(f"error [{code}]: ")
    assert "Traceback" not in result.content


def test_the_seed_flow_list_then_read(tools: dict[str, AgentTool]) -> None:
    listed = tools["list_files"].execute({"path": "reports"})
    assert listed.content == "reports/daily-2026-09-06.json"
    assert listed.details == {
        "choices": {"file": ["reports/daily-2026-09-06.json"], "dir": []},
        "output": "paths",
        "marks": [[0, len(listed.content), "path"]],
    }
    read = tools["read_file"].execute({"path": listed.details["choices"]["file"][0]})
    assert read.content == DAILY
    assert not read.is_error
    # its output is the file's content, not paths; the file read is one shown to exist
    assert read.details == {
        "marks": [[0, len(DAILY), "content"]],
        "choices": {"file": ["reports/daily-2026-09-06.json"]},
    }


def test_list_choices_skip_links_specials_and_secrets(
    project: Project, tools: dict[str, AgentTool]
) -> None:
    os.symlink("notes.txt", project.root / "alias")
    os.mkfifo(project.root / "pipe")
    project.write(".env", "X=1\n")
    result = tools["list_files"].execute({"path": "."})
    assert ".env" not in result.content.splitlines()  # hidden: not listed, never offered
    assert result.details["choices"] == {
        "file": ["notes.txt"],
        "dir": ["archive", "inbox", "reports"],
    }


def test_search_output_and_choices(project: Project, tools: dict[str, AgentTool]) -> None:
    project.write("reports/weekly.json", '{"orders": 900}\n')
    result = tools["search_files"].execute({"query": "orders", "path": "reports"})
    assert result.content.splitlines() == [
        'reports/daily-2026-09-06.json:1: {"date": "2026-09-06", "orders": 128, '
        '"revenue_yuan": 9600}',
        'reports/weekly.json:1: {"orders": 900}',
        "[2 matching lines in 2 files]",
    ]
    # its lines hold content after the path: not an output of paths
    assert result.details["choices"] == {
        "file": ["reports/daily-2026-09-06.json", "reports/weekly.json"]
    }
    marked = [(result.content[a:b], origin) for a, b, origin in result.details["marks"]]
    assert marked == [
        ("reports/daily-2026-09-06.json", "path"),
        ('{"date": "2026-09-06", "orders": 128, "revenue_yuan": 9600}', "content"),
        ("reports/weekly.json", "path"),
        ('{"orders": 900}', "content"),
    ]
    none = tools["search_files"].execute({"query": "cats"})
    assert none.content == "no matches for 'cats'"
    assert not none.is_error
    assert none.details["marks"] == []  # the query echoed back is the tool's own words


def test_search_reports_what_it_did_not_search(
    project: Project, tools: dict[str, AgentTool]
) -> None:
    os.symlink("../outside/secret.txt", project.root / "leak")
    project.write("bin.dat", b"\xff\xfe")
    content = tools["search_files"].execute({"query": "SECRET"}).content
    assert content.splitlines() == [
        "no matches for 'SECRET'",
        "[not searched: not UTF-8: 1, symlink: 1]",
    ]
    assert SECRET not in content


def test_move_file_reports_the_canonical_move(project: Project, files: ProjectFiles) -> None:
    before = project.snapshot()
    approvals = Approvals()
    tool = make_move_file_tool(files, approvals)
    result = tool.execute({"source": CAT, "target": "archive/"})
    assert result.content == f"moved {CAT} -> archive/猫咪小花.txt"
    assert result.changed
    assert not result.is_error
    assert project.snapshot() == moved(before, "proj/" + CAT, "proj/archive/猫咪小花.txt")
    again = tool.execute({"source": CAT, "target": "archive/"})
    assert again.code == "not_found"
    assert len(approvals.requests) == 1


def test_a_move_says_where_the_file_is_now_as_a_listing_would(
    project: Project, files: ProjectFiles, tools: dict[str, AgentTool]
) -> None:
    """The new path is offered, the old one is gone, both spelled as list_files shows them
    (the model's spelling of the source may differ: "./inbox//x")."""

    def listed(directory: str) -> list[str]:
        files: list[str] = (
            tools["list_files"].execute({"path": directory}).details["choices"]["file"]
        )
        return files

    assert CAT in listed("inbox")
    assert listed("archive") == []
    result = make_move_file_tool(files, Approvals()).execute(
        {"source": "./inbox//猫咪小花.txt", "target": "archive/"}
    )
    assert result.content == f"moved {CAT} -> archive/猫咪小花.txt"
    end = len(result.content)
    assert result.details == {
        "choices": {"file": ["archive/猫咪小花.txt"]},
        "gone": {"file": [CAT]},
        "output": "paths",
        "marks": [[6, 6 + len(CAT), "path"], [end - 16, end, "path"]],
        "changed": True,
        "change_words": MOVE_WORDS,
    }
    assert listed("archive") == result.details["choices"]["file"]
    assert CAT not in listed("inbox")
    # A move that did not happen shows nothing new and takes nothing away.
    again = make_move_file_tool(files, Approvals()).execute({"source": CAT, "target": "archive"})
    assert (again.code, again.details) == ("not_found", {})


def test_a_moved_file_under_a_name_that_needs_escaping_is_gone_but_not_offered(
    project: Project, files: ProjectFiles
) -> None:
    project.write("a.txt", "A\n")
    result = make_move_file_tool(files, Approvals()).execute(
        {"source": "a.txt", "target": "b\u202e.txt"}
    )
    assert not result.is_error
    assert result.details["choices"] == {"file": []}  # list_files would not offer it either
    assert result.details["gone"] == {"file": ["a.txt"]}


def test_a_denied_move_is_an_error_result(project: Project, files: ProjectFiles) -> None:
    before = project.snapshot()
    result = make_move_file_tool(files, Approvals(EOFError())).execute(
        {"source": CAT, "target": "archive"}
    )
    assert result.is_error
    assert result.code == "user_denied"
    assert not result.changed
    assert result.details == {}  # the file is still where it was
    assert project.snapshot() == before


def test_parallel_style_calls_run_in_order(project: Project, files: ProjectFiles) -> None:
    project.write("a.txt", "A\n")
    project.write("c.txt", "C\n")
    approvals = Approvals()
    tool = make_move_file_tool(files, approvals)
    first = [
        tool.execute({"source": "a.txt", "target": "b.txt"}),
        tool.execute({"source": "b.txt", "target": "c2.txt"}),
    ]
    assert [r.is_error for r in first] == [False, False]
    second = [
        tool.execute({"source": "c2.txt", "target": "z.txt"}),
        tool.execute({"source": "c.txt", "target": "z.txt"}),
    ]
    assert [r.code for r in second] == [None, "destination_exists"]
    assert (project.root / "z.txt").read_text() == "A\n"
    assert (project.root / "c.txt").read_text() == "C\n"
    assert len(approvals.requests) == 3


def test_read_output_with_range_and_hard_link_notes(
    project: Project, tools: dict[str, AgentTool]
) -> None:
    project.write("ten.txt", "".join(f"{n}\n" for n in range(1, 11)))
    os.link(project.root / "ten.txt", project.outside / "ten-link.txt")
    result = tools["read_file"].execute({"path": "ten.txt", "offset": 2, "limit": 3})
    assert result.content == (
        "2\n3\n4\n"
        "[truncated: 6 more lines; call read_file again with offset=5]\n"
        "[note: this file has 2 hard links]"
    )


def test_list_output_escapes_names(project: Project, tools: dict[str, AgentTool]) -> None:
    project.write("odd/line\nbreak.txt", "x")
    project.write("odd/plain.txt", "x")
    content = tools["list_files"].execute({"path": "odd"}).content
    assert content.splitlines() == ['"odd/line\\nbreak.txt"', "odd/plain.txt"]


# Property: whatever the string, a successful read is of a regular file inside the root ------


ALPHABET = ["a", "b", "l", ".", "..", "/", "\\", "\x00", "\u2024", "．", " ", "~", "C:"]


def _build_tree(base: Path) -> Path:
    root = base / "proj"
    (root / "a" / "b").mkdir(parents=True)
    (root / "b").mkdir()
    for relpath in ["a/a", "a/b/a", "b/a", "a/ ", "a/\u2024", "．"]:
        (root / relpath).write_text(f"inside {relpath}\n", encoding="utf-8")
    (base / "outside").mkdir()
    (base / "outside" / "a").write_text(SECRET)
    os.symlink("../outside", root / "l")
    os.symlink("../../outside/a", root / "a" / "l")
    return root


@pytest.mark.reliability
def test_any_accepted_path_reads_a_regular_file_inside_the_root() -> None:
    with tempfile.TemporaryDirectory() as base:
        root = _build_tree(Path(base))
        with ProjectFiles(root) as sandbox:

            @settings(max_examples=300, deadline=None)
            @given(st.lists(st.sampled_from(ALPHABET), max_size=8).map("".join))
            @example("a/a")
            @example("./a//b/a")
            @example("a/l")
            def check(raw: str) -> None:
                try:
                    text = sandbox.read_text(raw)
                except FileAccessError:
                    return  # any refusal is safe; what matters is what is accepted
                assert SECRET not in text.text
                real = root / text.path
                assert ".." not in text.path.split("/")
                inside = [p for p in [real, *real.parents] if p.is_relative_to(root) and p != root]
                assert not any(p.is_symlink() for p in inside)
                assert stat.S_ISREG(real.lstat().st_mode)
                assert real.read_text(encoding="utf-8") == text.text

            check()


def test_tool_details_are_json_that_a_saved_copy_reads_back_equal(
    tools: dict[str, AgentTool],
) -> None:
    """Sessions save a result's details as JSON: what they load must equal what the tool
    made (lists, never tuples), or a resumed run would not be the run that was saved."""
    calls = [
        ("list_files", {"path": "inbox"}),
        ("read_file", {"path": "notes.txt"}),
        ("search_files", {"query": "orders"}),
        ("move_file", {"source": CAT, "target": "archive"}),
    ]
    for name, arguments in calls:
        tool = tools[name]
        result = tool.execute(arguments)
        assert not result.is_error, result.content
        assert json.loads(json.dumps(result.details)) == result.details, name
        assert json.loads(json.dumps(tool.details)) == tool.details, name
