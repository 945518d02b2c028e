"""Property tests: whatever path string the model sends, through the tools as the loop calls
them, what is accepted is inside the root.

Paths are drawn from the alphabet {"a", "b", ".", "..", "/", "\\", NUL, ONE DOT LEADER,
FULLWIDTH FULL STOP, " "}, concatenated or joined by "/", against a tree whose names use the
same alphabet and that holds symlinks out of the root (to ``outside/``, to ``..``, to ``/``).
Spies record the fd that is actually read or listed: accepted => its (st_dev, st_ino) is a
regular file (a directory for list_files) reachable from the root without crossing a symlink.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minipi.agent.tools import AgentTool
from minipi.files import ProjectFiles, create_project_tools, sandbox, search
from support.files import SECRET, walk
from support.rel import inv

pytestmark = pytest.mark.reliability

ALPHABET = ["a", "b", ".", "..", "/", "\\", "\x00", "\u2024", "\uff0e", " "]
TOKENS = st.lists(st.sampled_from(ALPHABET), max_size=10)
PATHS = st.one_of(TOKENS.map("".join), TOKENS.map("/".join))

Inode = tuple[int, int]


def build(base: Path) -> Path:
    """``base/proj`` named from the alphabet, with links out; secrets just outside."""
    root = base / "proj"
    for directory in ["a", "\uff0e", "\u2024\u2024", "b b"]:
        (root / directory).mkdir(parents=True)
    for relpath in ["a/b", "a/\uff0e", " ", "a b", "\uff0e/a", "\u2024\u2024/b", "b b/a"]:
        (root / relpath).write_text(f"inside {relpath}\n", encoding="utf-8")
    for relpath in ["a", "b/a", "outside/secret.txt", "outside/a", "outside/b"]:
        (base / relpath).parent.mkdir(parents=True, exist_ok=True)
        (base / relpath).write_text(f"{SECRET} {relpath}\n", encoding="utf-8")
    os.symlink("../outside/secret.txt", root / "b")
    os.symlink("../../outside", root / "a" / "a")
    os.symlink("..", root / "\uff0e\uff0e")
    os.symlink("/", root / "\u2024")
    os.symlink(base / "outside" / "a", root / "b b" / "b")
    return root


def reachable(root: Path) -> tuple[set[Inode], set[Inode]]:
    """(regular files, directories) reachable from ``root`` without following a symlink."""
    files: set[Inode] = set()
    dirs: set[Inode] = {_inode(root.lstat())}
    for _, path in walk(root):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode):
            files.add(_inode(info))
        elif stat.S_ISDIR(info.st_mode):
            dirs.add(_inode(info))
    return files, dirs


def _inode(info: os.stat_result) -> Inode:
    return info.st_dev, info.st_ino


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("props"))


@pytest.fixture(scope="module")
def tools(root: Path) -> Iterator[dict[str, AgentTool]]:
    with ProjectFiles(root) as files:
        yield {t.name: t for t in create_project_tools(files, approve=lambda request: True)}


@contextmanager
def spying(module: Any, name: str, seen: list[os.stat_result]) -> Iterator[None]:
    """Record ``fstat`` of the fd passed first to ``module.name`` (read_bounded, names_in)."""
    real: Callable[..., Any] = getattr(module, name)

    def spy(fd: int, *args: Any) -> Any:
        seen.append(os.fstat(fd))
        return real(fd, *args)

    with mock.patch.object(module, name, spy):
        yield


@settings(max_examples=250, deadline=None)
@given(PATHS)
@example("a/b")
@example("./a//b")
@example("\uff0e/a")
@example("\u2024\u2024/b")
@example("a b")
@example("b b/a")
@example("../a")  # examples that must be refused, so that a regression shows at once
@example("a/../../b/a")
@example("\uff0e\uff0e/a")
@example("a/a/a")
def test_an_accepted_read_reads_a_regular_file_reachable_inside_the_root(
    root: Path, tools: dict[str, AgentTool], path: str
) -> None:
    files, _ = reachable(root)
    seen: list[os.stat_result] = []
    with spying(sandbox, "read_bounded", seen):
        result = tools["read_file"].execute({"path": path})
    assert SECRET not in result.content
    assert result.code != "tool_failure", result.content
    if result.is_error:
        return
    (opened,) = seen
    assert stat.S_ISREG(opened.st_mode)
    assert _inode(opened) in files


@settings(max_examples=200, deadline=None)
@given(PATHS)
@example(".")
@example("a/")
@example("\uff0e")
@example("\u2024\u2024")
@example("..")
@example("\u2024")
def test_an_accepted_listing_lists_a_directory_reachable_inside_the_root(
    root: Path, tools: dict[str, AgentTool], path: str
) -> None:
    _, dirs = reachable(root)
    seen: list[os.stat_result] = []
    with spying(sandbox, "names_in", seen):
        result = tools["list_files"].execute({"path": path})
    assert "secret.txt" not in result.content
    assert result.code != "tool_failure", result.content
    if result.is_error:
        return
    (opened,) = seen
    assert stat.S_ISDIR(opened.st_mode)
    assert _inode(opened) in dirs


@settings(max_examples=150, deadline=None)
@given(PATHS)
@example(".")
@example("a")
@example("a/b")
@example("..")
@example("a/a")
def test_a_search_reads_only_regular_files_reachable_inside_the_root(
    root: Path, tools: dict[str, AgentTool], path: str
) -> None:
    files, _ = reachable(root)
    seen: list[os.stat_result] = []
    with spying(search, "read_bounded", seen):
        result = tools["search_files"].execute({"query": "i", "path": path})
    assert SECRET not in result.content
    assert result.code != "tool_failure", result.content
    assert all(stat.S_ISREG(s.st_mode) and _inode(s) in files for s in seen)
    if not result.is_error and path in (".", ""):
        assert len(seen) == len(files)


@settings(max_examples=60, deadline=None)
@given(PATHS, PATHS)
@example("a/b", "\uff0e")
@example(" ", "b b/c")
@example("a b", "\u2024\u2024/")
@example("../a", "a")
@example("a b", "..")
@example("a b", "a/a")
def test_an_accepted_move_stays_inside_the_root_and_changes_nothing_else(
    source: str, target: str
) -> None:
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        root = build(base)
        files, dirs = reachable(root)
        before = inv(base)
        with ProjectFiles(root) as sandbox_files:
            tool = create_project_tools(sandbox_files, approve=lambda request: True)[-1]
            result = tool.execute({"source": source, "target": target})
        after = inv(base)
        assert result.code != "tool_failure", result.content
        if result.is_error:
            assert after == before, result.content
            return
        shown = result.content.removeprefix("moved ").split(" -> ")  # quoted if odd
        moved = [json.loads(p) if p.startswith('"') else p for p in shown]
        assert len(moved) == 2, result.content
        old, new = (f"proj/{p}" for p in moved)
        assert before[old][0] == "file"
        assert after[new] == before[old]  # the same inode, content and links
        assert {k: v for k, v in after.items() if k != new} == {
            k: v for k, v in before.items() if k != old
        }
        landed = (root / moved[1]).lstat()
        assert _inode(landed) in files  # the file was reachable inside the root...
        assert _inode((root / moved[1]).parent.lstat()) in dirs  # ...and still is


def test_the_tree_makes_the_properties_bite(tmp_path: Path) -> None:
    """Paths from the alphabet do reach files, directories and links of the tree."""
    root = build(tmp_path)
    with ProjectFiles(root) as files:
        tools = {t.name: t for t in create_project_tools(files, approve=lambda request: True)}
        codes = {
            path: tools["read_file"].execute({"path": path}).code
            for path in ["a/b", "\uff0e/a", " ", "b", "a/a/secret.txt", "\uff0e\uff0e/a", "\u2024"]
        }
        moved = tools["move_file"].execute({"source": "a/b", "target": "\uff0e"})
    assert codes == {
        "a/b": None,
        "\uff0e/a": None,
        " ": None,
        "b": "symlink",
        "a/a/secret.txt": "symlink",
        "\uff0e\uff0e/a": "symlink",
        "\u2024": "symlink",
    }
    assert moved.content == "moved a/b -> \uff0e/b"
