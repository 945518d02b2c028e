"""RELIABILITY group A through the real CLI: whatever path the model sends, nothing outside the
project root is opened, changed, or shown to the model.

Each test runs ``minipi ask --json`` once against a fake model that sends the attack calls in
one response and then answers; it checks each call's tool-error code, INV, and that the secret
never reached the server (``support.rel.assert_confined``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minipi.files import is_within
from support.fake import Call
from support.rel import (
    SECRET,
    Tree,
    assert_confined,
    grep,
    ls,
    make_tree,
    mv,
    one_turn,
    read,
    run_calls,
    tool_contents,
)

pytestmark = pytest.mark.reliability

DAILY_PATH = "reports/daily-2026-09-06.json"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return make_tree(tmp_path)


def attack(tree: Tree, calls: list[Call], codes: list[str | None], *flags: str) -> str:
    """Run ``calls`` in one response (moves approved), check codes, INV and confinement;
    return the tool outputs."""
    run = run_calls(tree, calls, codes, "--approve", "all", *flags)
    # Refusals are data: the loop went on to the model's answer. A refused change still
    # fails the run (G8: success is what happened, not what the model says).
    refused_change = any(c.name == "move_file" for c in calls)
    assert run.exit_code == (1 if refused_change else 0), run.proc.stderr
    assert run.end["code"] == ("change_failed" if refused_change else None)
    assert len(run.requests) == 2  # the answer was asked for
    return tool_contents(run)


def every_tool(path: str) -> list[Call]:
    """The same path given to each tool, in each argument."""
    return [
        read(path),
        ls(path),
        grep("SECRET", path),
        mv(path, "stolen.txt"),
        mv("notes.txt", path),
    ]


def test_a1_absolute_paths_are_refused(tree: Tree) -> None:
    paths = ["/etc/passwd", "/" + str(tree.root) + "/notes.txt", str(tree.outside / "secret.txt")]
    calls = [call for path in paths for call in every_tool(path)]
    attack(tree, calls, ["absolute_path"] * len(calls))


def test_a2_parent_references_are_refused_before_normalising(tree: Tree) -> None:
    paths = [
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
        "a/./../..",
        "reports/../notes.txt",
    ]
    calls = [call for path in paths for call in every_tool(path)]
    attack(tree, calls, ["parent_ref"] * len(calls))


def test_a3_a_sibling_sharing_the_prefix_is_outside(tree: Tree) -> None:
    assert not is_within(tree.root, tree.secrets / "key")  # proj-secrets is not in proj
    assert is_within(tree.root, tree.root / "notes.txt")
    calls = [*every_tool("../proj-secrets/key"), ls("../proj-secrets")]
    attack(tree, calls, ["parent_ref"] * len(calls))


def test_a4_a5_symlink_leaves_are_never_followed(tree: Tree) -> None:
    os.symlink("../outside/secret.txt", tree.root / "leak")
    os.symlink(tree.outside / "secret.txt", tree.root / "leak_abs")
    os.symlink("notes.txt", tree.root / "alias")  # inside: refused all the same
    links = ["leak", "leak_abs", "alias"]
    calls = [
        *(read(link) for link in links),
        *(grep("SECRET", link) for link in links),
        *(mv(link, "archive") for link in links),
        ls("."),
        grep("SECRET"),
    ]
    output = attack(tree, calls, [*["symlink"] * 9, None, None])
    for link in links:
        assert f"\n{link} -> (symlink, not followed)\n" in output
    assert "no matches for 'SECRET'" in output
    assert "[not searched: symlink: 3]" in output


def test_a4_symlinked_intermediate_directories_are_refused(tree: Tree) -> None:
    os.symlink("../outside", tree.root / "d")
    os.symlink(tree.outside, tree.root / "d_abs")
    os.symlink("reports", tree.root / "inner")  # inside: refused all the same
    calls = [
        read("d/secret.txt"),
        read("d_abs/secret.txt"),
        read(f"inner/{DAILY_PATH.split('/')[1]}"),
        ls("d"),
        ls("d_abs/"),
        grep("SECRET", "d"),
        grep("SECRET", "d_abs/secret.txt"),
        mv("d/secret.txt", "stolen.txt"),
        mv("notes.txt", "d/notes.txt"),
        mv("notes.txt", "d_abs/"),
        mv("notes.txt", "d"),
        mv("notes.txt", "inner"),
    ]
    attack(tree, calls, ["symlink"] * len(calls))


def test_a4_dangling_links_are_refused_and_never_written_through(tree: Tree) -> None:
    os.symlink("../outside/new.txt", tree.root / "dangling")
    os.symlink(tree.outside / "new_abs.txt", tree.root / "dangling_abs")
    os.symlink("../outside/newdir", tree.root / "dangling_dir")
    calls = [
        read("dangling"),
        read("dangling_abs"),
        ls("dangling_dir"),
        mv("notes.txt", "dangling"),
        mv("notes.txt", "dangling_abs"),
        mv("notes.txt", "dangling_dir/"),
        mv("notes.txt", "dangling_dir/notes.txt"),
    ]
    attack(tree, calls, ["symlink"] * len(calls))
    assert not (tree.outside / "new.txt").exists()
    assert not (tree.outside / "newdir").exists()


@pytest.mark.timeout(20)
def test_a8_symlink_loops_fail_fast(tree: Tree) -> None:
    os.symlink("loop_b", tree.root / "loop_a")
    os.symlink("loop_a", tree.root / "loop_b")
    os.symlink("self", tree.root / "self")
    calls = [
        read("loop_a"),
        read("loop_b/x.txt"),
        ls("self"),
        grep("x", "loop_a"),
        mv("loop_a", "archive"),
        mv("notes.txt", "self/notes.txt"),
        grep("hello"),
        ls("."),
    ]
    output = attack(tree, calls, [*["symlink"] * 6, None, None])
    assert "[not searched: symlink: 3]" in output
    assert "notes.txt:1: hello" in output


def test_a9_a_root_given_through_a_symlink_works_unchanged(tree: Tree) -> None:
    link = tree.base / "link-to-proj"
    os.symlink("proj", link)
    calls = [ls("."), read(DAILY_PATH), grep("orders")]
    direct = tree.ask(one_turn(*calls))
    linked = tree.ask(one_turn(*calls), project=link)
    assert linked.codes() == [None, None, None]
    assert tool_contents(linked) == tool_contents(direct)
    assert tool_contents(linked).startswith("archive/\ninbox/\nnotes.txt\nreports/\n")
    before = tree.inv()
    moved = tree.ask(one_turn(mv("notes.txt", "archive")), "--approve", "all", project=link)
    assert moved.codes() == [None]
    tree.assert_only_changed(before, {"notes.txt": "archive/notes.txt"})
    assert_confined(moved, tree)


# A12: degenerate input; every one gets its own code, never a traceback or tool_failure -----

DEGENERATE: list[tuple[object, str | None, str | None, str | None]] = [
    # path, read_file code, list_files code, move_file (as source) code
    ("", "invalid_path", "invalid_path", "invalid_path"),
    (".", "is_directory", None, "is_directory"),
    ("./", "is_directory", None, "is_directory"),
    ("/", "absolute_path", "absolute_path", "absolute_path"),
    ("///", "absolute_path", "absolute_path", "absolute_path"),
    ("a\x00b", "invalid_path", "invalid_path", "invalid_path"),
    ("notes.txt\x00../../outside/secret.txt", "invalid_path", "invalid_path", "invalid_path"),
    ("a" * 5000, "path_too_long", "path_too_long", "path_too_long"),
    ("x" * 300, "path_too_long", "path_too_long", "path_too_long"),
    ("/".join(["d"] * 2100), "path_too_long", "path_too_long", "path_too_long"),
    (123, "invalid_arguments", "invalid_arguments", "invalid_arguments"),
    (None, "invalid_arguments", "invalid_arguments", "invalid_arguments"),
    (["notes.txt"], "invalid_arguments", "invalid_arguments", "invalid_arguments"),
    ({"path": "notes.txt"}, "invalid_arguments", "invalid_arguments", "invalid_arguments"),
    (True, "invalid_arguments", "invalid_arguments", "invalid_arguments"),
]


def test_a12_degenerate_inputs_get_specific_codes(tree: Tree) -> None:
    cases: list[tuple[Call, str | None]] = []
    for path, read_code, list_code, move_code in DEGENERATE:
        cases += [(read(path), read_code), (ls(path), list_code), (mv(path, "archive"), move_code)]
    cases += [
        (Call("read_file", {}), "invalid_arguments"),
        (Call("read_file", {"path": "notes.txt", "root": "/"}), "invalid_arguments"),
        # lone surrogates, as JSON can carry them: U+DC80 is how a listing names the byte
        # 0x80 of a non-UTF-8 file name (surrogateescape), so it is a name; U+D800 is not
        (Call("read_file", '{"path": "\\udc80"}'), "not_found"),
        (Call("list_files", '{"path": "a\\ud800b"}'), "invalid_path"),
        (grep("", "."), "invalid_query"),
        (grep("x", ""), "invalid_path"),
        (mv("notes.txt", ""), "invalid_path"),
        (mv("notes.txt", "."), "already_there"),  # into the root, where it already is
    ]
    calls = [call for call, _ in cases]
    output = attack(tree, calls, [code for _, code in cases], "--max-calls-per-reply", "64")
    assert "tool_failure" not in output


def test_a12_windows_forms_are_refused(tree: Tree) -> None:
    absolute = ["C:\\x", "C:/Windows/win.ini", "c:x", "\\\\server\\share\\x", "\\x"]
    separators = ["..\\outside", "..\\outside\\secret.txt", "reports\\daily-2026-09-06.json"]
    calls = [read(p) for p in absolute + separators]
    calls += [ls(p) for p in absolute + separators]
    calls += [mv("notes.txt", "..\\outside\\notes.txt"), mv("notes.txt", "C:\\notes.txt")]
    codes = ["absolute_path"] * 5 + ["invalid_path"] * 3
    attack(tree, calls, [*codes, *codes, "invalid_path", "absolute_path"])


LOOK_ALIKES = [
    "\u2024\u2024/outside/secret.txt",  # ONE DOT LEADER x2: NFKC gives ".."
    "\uff0e\uff0e/outside/secret.txt",  # FULLWIDTH FULL STOP x2: NFKC gives ".."
    "\u2025/outside/secret.txt",  # TWO DOT LEADER
    "%2e%2e/outside/secret.txt",
    "..%2foutside%2fsecret.txt",
    ".../outside/secret.txt",
    " ../outside/secret.txt",
    "\u2024\u2024",
]


def test_a12_look_alike_dots_are_plain_names_never_parents(tree: Tree) -> None:
    tree.write("\uff0e\uff0e/inside.txt", "inside the root\n")
    calls = [read(p) for p in LOOK_ALIKES]
    calls += [mv("notes.txt", "\u2024\u2024/notes.txt"), read("\uff0e\uff0e/inside.txt")]
    output = attack(tree, calls, [*["not_found"] * len(LOOK_ALIKES), "parent_missing", None])
    assert "inside the root" in output  # the look-alike is an ordinary directory name


def test_a15_hard_links_are_read_with_a_flag_and_moved(tree: Tree) -> None:
    os.link(tree.outside / "secret.txt", tree.root / "hl")
    before = tree.inv()
    run = tree.ask(one_turn(read("hl")))
    assert run.codes() == [None]
    # policy (RELIABILITY §9 default 2): the same inode is inside the root, so it is read,
    # with the note that it has other names
    assert run.results()[0]["content"] == f"{SECRET}\n[note: this file has 2 hard links]"
    moved = tree.ask(one_turn(mv("hl", "archive")), "--approve", "all")
    assert moved.codes() == [None]
    tree.assert_only_changed(before, {"hl": "archive/hl"})  # outside/secret.txt: same inode
    assert (tree.outside / "secret.txt").stat().st_nlink == 2
    assert_confined(moved, tree)


def test_a17_a_root_path_needing_escapes_works(tmp_path: Path) -> None:
    tree = make_tree(tmp_path, name="we ird %s \"q\" 'x' $(touch pwned) `id`\nline2")
    before = tree.inv()
    run = tree.ask(
        one_turn(ls("."), read("notes.txt"), grep("hello"), mv("notes.txt", "archive")),
        "--approve",
        "all",
    )
    assert run.codes() == [None, None, None, None]
    assert run.contents() == [
        "archive/\ninbox/\nnotes.txt\nreports/",
        "hello\nworld\n",
        "notes.txt:1: hello",
        "moved notes.txt -> archive/notes.txt",
    ]
    tree.assert_only_changed(before, {"notes.txt": "archive/notes.txt"})
    assert not list(tmp_path.rglob("pwned"))
    assert_confined(run, tree)
