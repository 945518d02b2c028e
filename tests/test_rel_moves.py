"""RELIABILITY group C through the real CLI: ``move_file`` never clobbers, never creates
directories, never writes through a link, never leaves the root, and only moves what a human
approved, as shown in the prompt (``--approve all/deny``, a pipe as stdin, a real terminal)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from support.cli import tool_outputs
from support.fake import Call, Turn
from support.rel import (
    AskRun,
    Tree,
    assert_confined,
    make_tree,
    mv,
    one_turn,
    read,
    run_calls,
    tool_contents,
)

pytestmark = pytest.mark.reliability

CAT = "inbox/猫咪小花.txt"
DOG = "inbox/狗狗旺财.txt"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return make_tree(tmp_path)


def moves(
    tree: Tree,
    calls: list[Call],
    codes: list[str | None],
    done: dict[str, str] | None = None,
    *flags: str,
) -> AskRun:
    """``run_calls`` with ``--approve all`` (unless ``flags`` say otherwise), ``done`` moved."""
    return run_calls(tree, calls, codes, *(flags or ("--approve", "all")), moved=done)


def test_c1_an_existing_destination_is_never_replaced(tree: Tree) -> None:
    tree.write("archive/notes.txt", "an older note\n")
    run = moves(
        tree,
        [mv("notes.txt", DOG), mv("notes.txt", "archive/notes.txt"), mv("notes.txt", "archive")],
        ["destination_exists"] * 3,
    )
    assert run.prompts() == 0  # refused when planned, before anyone is asked
    assert (run.exit_code, run.end["code"]) == (1, "change_failed")  # nothing moved (G8)


def test_c3_a_directory_destination_means_into_it_without_clobbering(tree: Tree) -> None:
    tree.write("archive/狗狗旺财.txt", "another dog\n")
    run = moves(
        tree,
        [mv("notes.txt", "archive"), mv(CAT, "archive/"), mv(DOG, "./archive//")],
        [None, None, "destination_exists"],
        {"notes.txt": "archive/notes.txt", CAT: "archive/猫咪小花.txt"},
    )
    assert "move inbox/猫咪小花.txt -> archive/猫咪小花.txt" in run.proc.stderr
    assert run.prompts() == 2


def test_c4_c6_link_destinations_and_linked_parents_are_refused(tree: Tree) -> None:
    (tree.root / "to_secret").symlink_to("../outside/secret.txt")
    (tree.root / "to_new").symlink_to("../outside/new.txt")
    (tree.root / "to_abs").symlink_to(tree.outside / "abs.txt")
    (tree.root / "out").symlink_to("../outside")
    calls = [
        mv("notes.txt", "to_secret"),
        mv("notes.txt", "to_new"),
        mv("notes.txt", "to_abs"),
        mv("notes.txt", "out"),
        mv("notes.txt", "out/"),
        mv("notes.txt", "out/notes.txt"),
        mv("notes.txt", "out/secret.txt"),
    ]
    run = moves(tree, calls, ["symlink"] * len(calls))
    assert run.prompts() == 0
    assert not (tree.outside / "new.txt").exists()
    assert not (tree.outside / "abs.txt").exists()
    assert not (tree.outside / "notes.txt").exists()
    assert (tree.root / "notes.txt").read_text() == "hello\nworld\n"


def test_c5_a_missing_parent_is_not_created(tree: Tree) -> None:
    calls = [mv("notes.txt", "new/dir/b.txt"), mv("notes.txt", "new/"), mv("notes.txt", "nope/b")]
    run = moves(tree, calls, ["parent_missing"] * 3)
    assert "move_file does not create directories" in tool_contents(run)


def test_c8_directories_are_not_moved(tree: Tree) -> None:
    calls = [mv("inbox", "inbox/x"), mv("inbox", "archive"), mv(".", "archive"), mv("inbox/", "x")]
    run = moves(tree, calls, ["is_directory"] * 4)
    assert "move_file moves files only" in tool_contents(run)


@pytest.mark.parametrize(
    ("fault", "code"),
    [(errno.EXDEV, "cross_device"), (errno.EPERM, "move_failed"), (errno.ENOSPC, "move_failed")],
)
def test_c9_a_link_that_fails_changes_nothing(tree: Tree, fault: int, code: str) -> None:
    before = tree.inv()
    run = tree.ask(one_turn(mv("notes.txt", "archive")), "--approve", "all", link_errno=fault)
    assert run.codes() == [code]
    assert "nothing was changed" in run.results()[0]["content"].lower()
    tree.assert_only_changed(before)  # never "source deleted, destination partial"
    assert_confined(run, tree)


@pytest.mark.parametrize("how", ["--approve ask, stdin a pipe", "stdin closed"])
def test_c10_c13_a_denial_changes_nothing_and_fails_the_run(tree: Tree, how: str) -> None:
    flags = ["--approve", "ask"]
    stdin = "y\n" if "pipe" in how else ""
    before = tree.inv()
    run = tree.ask([Turn(calls=[mv(CAT, "archive")]), _answer_after_denial], *flags, stdin=stdin)
    assert run.codes() == ["user_denied"]
    assert run.exit_code == 1
    assert (run.end["status"], run.end["code"]) == ("failed", "user_denied")
    assert run.end["answer"] == ""  # the model's claim is not shown as an answer
    tree.assert_only_changed(before)
    assert_confined(run, tree)
    assert "denied: stdin is not a terminal" in run.proc.stderr


def test_a_read_only_run_offers_no_change_and_refuses_one_unasked(tree: Tree) -> None:
    """--approve deny (the default): the question is read-only. A move the model makes
    anyway changes nothing, asks nobody, and is not a failure of the question; the machine's
    summary says that nothing was changed (G8: next to whatever the model claims)."""
    before = tree.inv()
    run = tree.ask([Turn(calls=[mv(CAT, "archive")]), _answer_after_refusal], json=False)
    assert run.prompts() == 0
    assert run.exit_code == 0
    assert "nothing changed: the run is read-only (--approve ask allows changes)" in (
        run.proc.stderr
    )
    assert "Adopted the cat." in run.proc.stderr  # the model's claim, shown as its text only
    tree.assert_only_changed(before)
    assert_confined(run, tree)


def _answer_after_refusal(body: dict[str, Any]) -> Turn:
    assert "error [read_only]" in tool_outputs(body)[-1]
    return Turn(text="Adopted the cat.")


def _answer_after_denial(body: dict[str, Any]) -> Turn:
    """The model got the denial as a tool error (the loop went on) and says it is done."""
    assert "error [user_denied]" in tool_outputs(body)[-1]
    return Turn(text="Adopted the cat.")


def test_c11_raw_parent_refs_are_refused_before_any_prompt(tree: Tree) -> None:
    calls = [mv("./x/../notes.txt", "archive"), mv("notes.txt", "archive/../.."), mv(CAT, "a/..")]
    run = moves(tree, calls, ["parent_ref"] * 3, None, "--approve", "ask")
    assert run.prompts() == 0


def test_c11_the_prompt_shows_the_canonical_paths(tree: Tree) -> None:
    calls = [mv("./notes.txt", "archive/"), mv("inbox//./猫咪小花.txt", ".//archive//")]
    run = moves(tree, calls, ["user_denied"] * 2, None, "--approve", "ask")  # a pipe: no
    prompts = run.proc.stderr
    assert "[approval needed] move notes.txt -> archive/notes.txt\n" in prompts
    assert "  source       notes.txt\n  destination  archive/notes.txt\n" in prompts
    assert f"[approval needed] move {CAT} -> archive/猫咪小花.txt\n" in prompts
    assert "./" not in prompts
    assert "//" not in prompts


def test_c11_on_a_terminal_the_approved_move_is_the_one_shown(tree: Tree) -> None:
    before = tree.inv()
    run = tree.ask_tty(one_turn(mv("./inbox//猫咪小花.txt", "./archive/")), [b"y\n"])
    assert run.codes() == [None]
    assert f"move {CAT} -> archive/猫咪小花.txt\n" in run.proc.stderr
    assert run.results()[0]["content"] == f"moved {CAT} -> archive/猫咪小花.txt"
    tree.assert_only_changed(before, {CAT: "archive/猫咪小花.txt"})
    assert run.exit_code == 0


@pytest.mark.parametrize(
    ("typed", "code"), [(b"n\n", "user_denied"), (b"\n", "user_denied"), (b"\x04", "user_denied")]
)
def test_c13_no_ctrl_d_or_enter_at_the_terminal_prompt_is_a_denial(
    tree: Tree, typed: bytes, code: str
) -> None:
    before = tree.inv()
    run = tree.ask_tty(one_turn(mv(CAT, "archive")), [typed])
    assert run.codes() == [code]
    assert run.exit_code == 1
    tree.assert_only_changed(before)
    if typed == b"\x04":  # nothing was echoed: the prompt's line is ended, and says why
        assert "Allow? [y/N] \ndenied: end of input\n" in run.proc.stderr


def test_c13_ctrl_c_at_the_terminal_prompt_cancels_cleanly(tree: Tree) -> None:
    before = tree.inv()
    run = tree.ask_tty(one_turn(mv(CAT, "archive"), mv("notes.txt", "archive")), [b"\x03"])
    assert run.exit_code == 130
    assert (run.end["status"], run.end["code"]) == ("cancelled", "cancelled")
    assert run.codes() == []  # neither move ran; the second was never asked about
    assert run.prompts() == 1
    tree.assert_only_changed(before)
    assert len(run.requests) == 1  # nothing more was sent after the Ctrl-C


def test_c14_parallel_moves_are_approved_and_run_one_by_one_in_order(tree: Tree) -> None:
    tree.write("a.txt", "A\n")
    tree.write("b.txt", "B\n")
    tree.write("c.txt", "C\n")
    calls = [
        mv("a.txt", "b.txt"),  # b exists: refused
        mv("b.txt", "z.txt"),
        mv("c.txt", "z.txt"),  # z was just made by the move before: refused
        read("z.txt"),
        mv("a.txt", "y.txt"),
        read("a.txt"),
    ]
    codes = ["destination_exists", None, "destination_exists", None, None, "not_found"]
    run = moves(tree, calls, codes, {"b.txt": "z.txt", "a.txt": "y.txt"})
    assert run.results()[3]["content"] == "B\n"
    stderr = run.proc.stderr
    assert stderr.index("move b.txt -> z.txt") < stderr.index("move a.txt -> y.txt")
    assert run.prompts() == 2


def test_c14_each_parallel_move_gets_its_own_terminal_answer(tree: Tree) -> None:
    before = tree.inv()
    run = tree.ask_tty(one_turn(mv(CAT, "archive"), mv(DOG, "archive")), [b"y\n", b"n\n"])
    assert run.codes() == [None, "user_denied"]
    tree.assert_only_changed(before, {CAT: "archive/猫咪小花.txt"})
    assert run.exit_code == 1  # a denied change: the task did not fully happen


def test_c15_a_replayed_move_runs_once(tree: Tree) -> None:
    replay = Call("move_file", {"source": "notes.txt", "target": "archive"}, call_id="c1")
    before = tree.inv()
    run = tree.ask(
        [Turn(calls=[replay]), Turn(calls=[replay]), Turn(text="done")], "--approve", "all"
    )
    assert run.codes() == [None, "duplicate_call"]
    assert run.prompts() == 1
    tree.assert_only_changed(before, {"notes.txt": "archive/notes.txt"})


def test_c18_approving_everything_never_widens_confinement(tree: Tree) -> None:
    (tree.root / "out").symlink_to("../outside")
    cases = [
        (mv("notes.txt", "../outside/notes.txt"), "parent_ref"),
        (mv("notes.txt", str(tree.outside / "notes.txt")), "absolute_path"),
        (mv("notes.txt", "out/notes.txt"), "symlink"),
        (mv("../outside/secret.txt", "stolen.txt"), "parent_ref"),
        (mv("out/secret.txt", "stolen.txt"), "symlink"),
        (mv(str(tree.outside / "secret.txt"), "stolen.txt"), "absolute_path"),
        (mv("notes.txt", "../proj-secrets/"), "parent_ref"),
    ]
    run = moves(tree, [c for c, _ in cases], [code for _, code in cases])
    assert run.prompts() == 0
