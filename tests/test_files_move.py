"""Group C: move_file never clobbers, never escapes, and does exactly what was approved."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from minipi.agent.tools import ApprovalRequest
from minipi.errors import FileAccessError
from minipi.files import Moved, ProjectFiles
from support.files import SECRET, Approvals, Project, make_project, moved, refused

pytestmark = pytest.mark.reliability

CAT = "inbox/猫咪小花.txt"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path)


def test_the_cat_is_adopted_into_the_archive(project: Project) -> None:
    before = project.snapshot()
    approvals = Approvals()
    with project.open() as files:
        result = files.move(CAT, "archive/", approvals)
    assert result == Moved(CAT, "archive/猫咪小花.txt")
    assert approvals.requests == [
        ApprovalRequest(
            tool="move_file",
            summary=f"move {CAT} -> archive/猫咪小花.txt",
            details={"source": CAT, "destination": "archive/猫咪小花.txt"},
        )
    ]
    assert project.snapshot() == moved(before, "proj/" + CAT, "proj/archive/猫咪小花.txt")


@pytest.mark.parametrize("target", ["archive", "archive/", "./archive//", "archive/猫咪小花.txt"])
def test_a_directory_target_means_into_it(project: Project, target: str) -> None:
    before = project.snapshot()
    with project.open() as files:
        assert files.move(CAT, target, Approvals()).destination == "archive/猫咪小花.txt"
    assert project.snapshot() == moved(before, "proj/" + CAT, "proj/archive/猫咪小花.txt")


def test_a_rename_and_a_move_to_the_root(project: Project) -> None:
    with project.open() as files:
        assert files.move("notes.txt", "reports/notes-2.txt", Approvals()).destination == (
            "reports/notes-2.txt"
        )
        assert files.move(CAT, ".", Approvals()) == Moved(CAT, "猫咪小花.txt")
    assert (project.root / "猫咪小花.txt").read_text(encoding="utf-8") == "一只橘猫\n"


# C1, C3 -----------------------------------------------------------------------------------


def test_an_existing_destination_is_never_replaced(project: Project) -> None:
    project.write("a.txt", "A\n")
    project.write("b.txt", "B\n")
    project.write("archive/猫咪小花.txt", "another cat\n")
    before = project.snapshot()
    approvals = Approvals()
    with project.open() as files:
        refused("destination_exists", lambda: files.move("a.txt", "b.txt", approvals))
        refused("destination_exists", lambda: files.move(CAT, "archive/", approvals))
        refused("already_there", lambda: files.move("a.txt", "a.txt", approvals))
        refused("already_there", lambda: files.move("a.txt", ".", approvals))
    assert approvals.requests == []
    assert project.snapshot() == before


# C4, C6 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("link", ["../outside/secret.txt", "../outside/new.txt", "notes.txt"])
def test_a_symlink_destination_is_refused(project: Project, link: str) -> None:
    os.symlink(link, project.root / "dest")
    before = project.snapshot()
    approvals = Approvals()
    with project.open() as files:
        refused("symlink", lambda: files.move(CAT, "dest", approvals))
        refused("symlink", lambda: files.move(CAT, "dest/x.txt", approvals))
    assert approvals.requests == []
    assert project.snapshot() == before
    assert not (project.outside / "new.txt").exists()


def test_a_symlinked_destination_directory_is_refused(project: Project) -> None:
    os.symlink("../outside", project.root / "d")
    before = project.snapshot()
    with project.open() as files:
        refused("symlink", lambda: files.move(CAT, "d/a.txt", Approvals()))
        refused("symlink", lambda: files.move(CAT, "d", Approvals()))
        refused("symlink", lambda: files.move(CAT, "d/", Approvals()))
    assert project.snapshot() == before
    assert (project.root / CAT).exists()


def test_symlinks_and_special_files_are_not_moved(project: Project) -> None:
    os.symlink("notes.txt", project.root / "alias")
    os.mkfifo(project.root / "pipe")
    before = project.snapshot()
    with project.open() as files:
        refused("symlink", lambda: files.move("alias", "archive", Approvals()))
        refused("not_regular_file", lambda: files.move("pipe", "archive", Approvals()))
        refused("not_found", lambda: files.move("missing.txt", "archive", Approvals()))
        refused("not_found", lambda: files.move("nodir/missing.txt", "archive", Approvals()))
    assert project.snapshot() == before


# C5, C8 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["new/dir/b.txt", "new/", "missing/"])
def test_a_missing_destination_parent_is_not_created(project: Project, target: str) -> None:
    before = project.snapshot()
    with project.open() as files:
        error = refused("parent_missing", lambda: files.move(CAT, target, Approvals()))
    assert "does not create directories" in error.message
    assert project.snapshot() == before


def test_a_file_used_as_a_directory_is_refused(project: Project) -> None:
    before = project.snapshot()
    with project.open() as files:
        refused("not_a_directory", lambda: files.move(CAT, "notes.txt/", Approvals()))
        refused("not_a_directory", lambda: files.move(CAT, "notes.txt/x.txt", Approvals()))
    assert project.snapshot() == before


@pytest.mark.parametrize(
    ("source", "target"), [("inbox", "inbox/sub"), ("inbox", "archive"), (".", "archive")]
)
def test_directories_are_not_moved(project: Project, source: str, target: str) -> None:
    before = project.snapshot()
    with project.open() as files:
        error = refused("is_directory", lambda: files.move(source, target, Approvals()))
    assert "files only" in error.message or "root" in error.message
    assert project.snapshot() == before


# C9 ---------------------------------------------------------------------------------------


def test_a_cross_device_move_changes_nothing(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    def exdev(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", exdev)
    monkeypatch.setattr(os, "rename", exdev)
    monkeypatch.setattr(os, "replace", exdev)
    before = project.snapshot()
    with project.open() as files:
        error = refused("cross_device", lambda: files.move(CAT, "archive", Approvals()))
    assert "Nothing was changed" in error.message
    assert project.snapshot() == before


def test_a_failed_unlink_is_undone(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    real_unlink = os.unlink
    calls: list[str] = []

    def unlink_once(path: Any, *, dir_fd: int | None = None) -> None:
        calls.append(os.fsdecode(path))
        if len(calls) == 1:
            raise PermissionError(errno.EACCES, "Permission denied")
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink_once)
    before = project.snapshot()
    with project.open() as files:
        error = refused("move_failed", lambda: files.move(CAT, "archive", Approvals()))
    assert "undone" in error.message
    assert calls == ["猫咪小花.txt", "猫咪小花.txt"]
    assert project.snapshot() == before


def test_other_link_errors_change_nothing(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    def eperm(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", eperm)
    before = project.snapshot()
    with project.open() as files:
        refused("move_failed", lambda: files.move(CAT, "archive", Approvals()))
    assert project.snapshot() == before


# C10, C13 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [False, EOFError(), OSError("no tty"), TimeoutError()])
def test_a_denial_changes_nothing(project: Project, answer: bool | BaseException) -> None:
    before = project.snapshot()
    approvals = Approvals(answer)
    with project.open() as files:
        error = refused("user_denied", lambda: files.move(CAT, "archive", approvals))
    assert "nothing was changed" in error.message
    assert len(approvals.requests) == 1
    assert project.snapshot() == before


def test_only_true_approves(project: Project) -> None:
    before = project.snapshot()

    def sloppy(request: ApprovalRequest) -> bool:
        return "yes"  # type: ignore[return-value]

    with project.open() as files:
        refused("user_denied", lambda: files.move(CAT, "archive", sloppy))
    assert project.snapshot() == before


def test_ctrl_c_at_the_prompt_propagates_and_changes_nothing(project: Project) -> None:
    before = project.snapshot()
    with project.open() as files, pytest.raises(KeyboardInterrupt):
        files.move(CAT, "archive", Approvals(KeyboardInterrupt()))
    assert project.snapshot() == before


# C11, C18 ---------------------------------------------------------------------------------


def test_the_prompt_shows_the_canonical_paths(project: Project) -> None:
    approvals = Approvals(answer=False)
    with project.open() as files:
        refused(
            "user_denied", lambda: files.move("./inbox//猫咪小花.txt/", "./archive/.", approvals)
        )
        refused("parent_ref", lambda: files.move("./x/../notes.txt", "archive", approvals))
    (request,) = approvals.requests
    assert request.summary == f"move {CAT} -> archive/猫咪小花.txt"
    assert dict(request.details) == {"source": CAT, "destination": "archive/猫咪小花.txt"}


def test_odd_names_are_escaped_in_the_prompt(project: Project) -> None:
    project.write("a\x1b[2Jb.txt", "x")
    approvals = Approvals(answer=False)
    with project.open() as files:
        refused("user_denied", lambda: files.move("a\x1b[2Jb.txt", "archive", approvals))
    assert approvals.requests[0].summary == (
        'move "a\\u001b[2Jb.txt" -> "archive/a\\u001b[2Jb.txt"'
    )


@pytest.mark.parametrize(
    "target",
    ["../outside/x.txt", "../outside", "/tmp/x.txt", "OUTSIDE_ABS", "d/x.txt", ".git/x"],
)
def test_approval_never_widens_confinement(project: Project, target: str) -> None:
    os.symlink("../outside", project.root / "d")
    target = str(project.outside / "x.txt") if target == "OUTSIDE_ABS" else target
    before = project.snapshot()
    yes_to_all = Approvals(answer=True)
    with project.open() as files, pytest.raises(FileAccessError) as caught:
        files.move(CAT, target, yes_to_all)
    assert caught.value.code in (
        "parent_ref",
        "absolute_path",
        "symlink",
        "sensitive_path",
    )
    assert yes_to_all.requests == []
    assert project.snapshot() == before


# C14 --------------------------------------------------------------------------------------


def test_sequential_moves_see_each_other(project: Project) -> None:
    project.write("a.txt", "A\n")
    project.write("c.txt", "C\n")
    approvals = Approvals()
    with project.open() as files:
        files.move("a.txt", "b.txt", approvals)
        files.move("b.txt", "d.txt", approvals)
        project.write("e.txt", "E\n")
        files.move("e.txt", "z.txt", approvals)
        before = project.snapshot()
        refused("destination_exists", lambda: files.move("c.txt", "z.txt", approvals))
    assert project.snapshot() == before
    assert [r.summary for r in approvals.requests] == [
        "move a.txt -> b.txt",
        "move b.txt -> d.txt",
        "move e.txt -> z.txt",
    ]
    assert (project.root / "d.txt").read_text() == "A\n"
    assert (project.root / "z.txt").read_text() == "E\n"


# A15 --------------------------------------------------------------------------------------


def test_a_hard_linked_file_can_be_moved(project: Project) -> None:
    os.link(project.outside / "secret.txt", project.root / "hl")
    with project.open() as files:
        files.move("hl", "archive", Approvals())
    assert (project.outside / "secret.txt").read_text() == SECRET + "\n"
    assert (project.outside / "secret.txt").stat().st_nlink == 2
    assert not (project.root / "hl").exists()


# Changes between approval and execution ---------------------------------------------------


def approve_after(change: Any) -> Approvals:
    class Changing(Approvals):
        def __call__(self, request: ApprovalRequest) -> bool:
            change()
            return super().__call__(request)

    return Changing()


def test_a_source_replaced_during_approval_aborts(project: Project) -> None:
    path = project.root / CAT

    def replace() -> None:
        path.unlink()
        path.write_text("an impostor\n")

    with project.open() as files:
        error = refused(
            "changed_since_approval", lambda: files.move(CAT, "archive", approve_after(replace))
        )
    assert "replaced" in error.message
    assert path.read_text() == "an impostor\n"
    assert not (project.root / "archive" / "猫咪小花.txt").exists()


def test_a_destination_created_during_approval_is_kept(project: Project) -> None:
    target = project.root / "archive" / "猫咪小花.txt"
    with project.open() as files:
        refused(
            "changed_since_approval",
            lambda: files.move(CAT, "archive", approve_after(lambda: target.write_text("mine"))),
        )
    assert target.read_text() == "mine"
    assert (project.root / CAT).exists()


def test_a_destination_directory_swapped_for_a_link_aborts(project: Project) -> None:
    archive = project.root / "archive"

    def swap() -> None:
        archive.rmdir()
        os.symlink("../outside", archive)

    with project.open() as files:
        refused("changed_since_approval", lambda: files.move(CAT, "archive", approve_after(swap)))
    assert sorted(os.listdir(project.outside)) == ["secret.txt"]
    assert (project.root / CAT).exists()


def test_a_destination_directory_replaced_by_another_aborts(project: Project) -> None:
    archive = project.root / "archive"

    def replace() -> None:
        archive.rename(project.root / "old-archive")
        archive.mkdir()

    with project.open() as files:
        error = refused(
            "changed_since_approval", lambda: files.move(CAT, "archive", approve_after(replace))
        )
    assert "directory was replaced" in error.message
    assert (project.root / CAT).exists()


def test_a_source_removed_during_approval_aborts(project: Project) -> None:
    inbox = project.root / "inbox"
    with project.open() as files:
        refused(
            "changed_since_approval",
            lambda: files.move(CAT, "archive", approve_after(lambda: shutil.rmtree(inbox))),
        )
    assert os.listdir(project.root / "archive") == []


def test_moves_work_through_a_symlinked_root(project: Project) -> None:
    link = project.base / "link"
    os.symlink(project.root, link)
    with ProjectFiles(link) as files:
        files.move(CAT, "archive", Approvals())
    assert (project.root / "archive" / "猫咪小花.txt").exists()


def test_a_source_replaced_between_link_and_unlink_is_left_alone(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_link = os.link

    def link_then_replace(*args: Any, **kwargs: Any) -> None:
        real_link(*args, **kwargs)
        (project.root / CAT).unlink()
        (project.root / CAT).write_text("someone else's\n")

    monkeypatch.setattr(os, "link", link_then_replace)
    with project.open() as files:
        assert files.move(CAT, "archive", Approvals()).destination == "archive/猫咪小花.txt"
    assert (project.root / "archive" / "猫咪小花.txt").read_text() == "一只橘猫\n"
    assert (project.root / CAT).read_text() == "someone else's\n"


def test_ctrl_c_between_link_and_unlink_undoes_the_link(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_unlink = os.unlink
    calls: list[str] = []

    def interrupted_once(path: Any, *, dir_fd: int | None = None) -> None:
        calls.append(os.fsdecode(path))
        if len(calls) == 1:
            raise KeyboardInterrupt
        real_unlink(path, dir_fd=dir_fd)

    before = project.snapshot()
    monkeypatch.setattr(os, "unlink", interrupted_once)
    with project.open() as files, pytest.raises(KeyboardInterrupt):
        files.move(CAT, "archive", Approvals())
    assert len(calls) == 2
    assert project.snapshot() == before
