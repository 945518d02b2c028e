"""move_file: plan on canonical paths, ask for approval, re-check, move without replacing.

The move is ``link(src, dst)`` then ``unlink(src)``, both relative to parent directory fds:
``link`` fails with EEXIST instead of replacing (POSIX ``rename`` would silently overwrite) and
with EXDEV across filesystems (nothing is copied). After the approval everything is walked
again: the source must be the same inode and the destination directory the same directory as
when approved, and the destination name must still be free. The link is made to the pinned
inode itself (``/proc/self/fd``), so a source name swapped after that re-check cannot move.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from minipi.agent.tools import ApprovalRequest, Approver
from minipi.errors import FileAccessError
from minipi.files.paths import RelPath, quote_path, show
from minipi.files.results import Moved
from minipi.files.walk import Root, lstat_at, open_at, refusal, walk

__all__ = ["MovePlan", "ask_approval", "execute_move", "plan_move"]


@dataclass(frozen=True, slots=True)
class MovePlan:
    """What the user approves: canonical paths, plus fds that pin the source file and the
    destination directory (a pinned inode cannot be freed, so its number cannot be reused by
    an impostor). ``close()`` releases them."""

    source: RelPath
    destination: RelPath
    source_fd: int
    directory_fd: int

    def close(self) -> None:
        os.close(self.source_fd)
        os.close(self.directory_fd)


def plan_move(root: Root, source: RelPath, target: RelPath) -> MovePlan:
    """Resolve ``target`` (an existing directory means *into* it) and check both ends.

    Raises ``is_directory``/``symlink``/``not_regular_file`` for a bad source,
    ``parent_missing`` when the destination's directory does not exist, ``symlink`` or
    ``destination_exists`` when the destination name is taken. The caller closes the plan.
    """
    source_fd = _hold_source(root, source)
    try:
        destination = _destination(root, source, target)
        if destination == source:
            raise FileAccessError(
                f"{show(source.text)} is already there (source and destination are the same): "
                "nothing to move, nothing was changed",
                code="already_there",
                path=destination.text,
            )
        directory_fd = _hold_free_destination(root, destination)
    except BaseException:
        os.close(source_fd)
        raise
    return MovePlan(source, destination, source_fd, directory_fd)


def ask_approval(plan: MovePlan, approve: Approver) -> None:
    """Ask ``approve``; anything but True (or closed input: EOFError/OSError) is a denial.

    KeyboardInterrupt propagates: Ctrl-C ends the run, and nothing has been changed yet.
    """
    source, destination = quote_path(plan.source.text), quote_path(plan.destination.text)
    request = ApprovalRequest(
        tool="move_file",
        summary=f"move {source} -> {destination}",
        details={"source": source, "destination": destination},
    )
    try:
        allowed = approve(request)
    except (EOFError, OSError):  # closed or non-interactive input, prompt timeout
        allowed = False
    if allowed is not True:
        raise FileAccessError(
            f"the user did not approve moving {source} to {destination}; nothing was changed. "
            "Do not retry this move unless the user asks for it",
            code="user_denied",
            path=plan.source.text,
        )


def execute_move(root: Root, plan: MovePlan, *, checked: Callable[[], None] | None = None) -> Moved:
    """Re-walk and re-check both ends, move, and verify the result on disk.

    ``checked`` runs after the last re-check, right before the link: whatever another
    process changes there, nothing is replaced and only the approved file can move (tests
    make such a change there)."""
    source_dir = _rewalk(root, plan.source.parent, plan)
    try:
        target_dir = _rewalk(root, plan.destination.parent, plan)
        try:
            _recheck(source_dir, target_dir, plan)
            if checked is not None:
                checked()
            _link(source_dir, target_dir, plan)
            _unlink_source(source_dir, target_dir, plan)
            _verify(source_dir, target_dir, plan)
        finally:
            os.close(target_dir)
    finally:
        os.close(source_dir)
    return Moved(plan.source.text, plan.destination.text)


def _hold_source(root: Root, source: RelPath) -> int:
    if not source.parts:
        raise refusal("is_directory", source, "the project root cannot be moved")
    parent = walk(root, source.parent.parts)
    try:
        fd, _ = open_at(root, parent, source.parts[-1], source, "file", hold=True)
    except FileAccessError as error:
        if error.code == "is_directory":
            detail = "it is a directory; move_file moves files only"
            raise refusal("is_directory", source, detail) from None
        if error.code == "not_regular_file":
            detail = "move_file moves regular files only"
            raise refusal("not_regular_file", source, detail) from None
        raise
    finally:
        os.close(parent)
    return fd


def _destination(root: Root, source: RelPath, target: RelPath) -> RelPath:
    name = source.parts[-1]
    if not target.parts:
        return RelPath((name,))
    fd = walk(root, target.parent.parts, missing="parent_missing")
    try:
        info = _probe(fd, target.parts[-1], target)
    finally:
        os.close(fd)
    if info is not None and stat.S_ISDIR(info.st_mode):
        return target.child(name)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise _occupied(target, info)
    if target.trailing_slash:
        if info is None:
            raise FileAccessError(
                f"directory {show(target.text)} does not exist; move_file does not create "
                "directories: pick an existing one, or give the full new file name",
                code="parent_missing",
                path=target.text,
            )
        raise refusal("not_a_directory", target, "it ends with '/' but is not a directory")
    return RelPath(target.parts)


def _hold_free_destination(root: Root, destination: RelPath) -> int:
    """An fd of the destination directory; raises if the destination name is taken."""
    fd = walk(root, destination.parent.parts, missing="parent_missing")
    try:
        info = _probe(fd, destination.parts[-1], destination)
        if info is not None:
            raise _occupied(destination, info)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _probe(fd: int, name: str, where: RelPath) -> os.stat_result | None:
    try:
        return lstat_at(fd, name, where)
    except FileAccessError as error:
        if error.code == "not_found":
            return None
        raise


def _same(info: os.stat_result, held: int) -> bool:
    """Whether ``info`` describes the inode pinned by ``held`` (it cannot have been reused)."""
    pinned = os.fstat(held)
    return (info.st_dev, info.st_ino) == (pinned.st_dev, pinned.st_ino)


def _is_pinned(info: os.stat_result | None, plan: MovePlan) -> bool:
    return info is not None and _same(info, plan.source_fd)


def _occupied(destination: RelPath, info: os.stat_result) -> FileAccessError:
    if stat.S_ISLNK(info.st_mode):
        return refusal(
            "symlink",
            destination,
            "the destination is a symbolic link; move_file never writes through or replaces "
            "a link: choose another name",
        )
    return refusal(
        "destination_exists",
        destination,
        "the destination already exists; move_file never replaces a file: choose another "
        "name or ask the user",
    )


def _changed(plan: MovePlan, why: str) -> FileAccessError:
    return FileAccessError(
        f"the files changed after the move was approved ({why}); nothing was moved. "
        "List the directories again before retrying",
        code="changed_since_approval",
        path=plan.source.text,
    )


def _rewalk(root: Root, directory: RelPath, plan: MovePlan) -> int:
    try:
        return walk(root, directory.parts)
    except FileAccessError as error:
        raise _changed(plan, error.message) from None


def _recheck(source_dir: int, target_dir: int, plan: MovePlan) -> None:
    try:
        source = _probe(source_dir, plan.source.parts[-1], plan.source)
        taken = _probe(target_dir, plan.destination.parts[-1], plan.destination)
    except FileAccessError as error:
        raise _changed(plan, error.message) from None
    if source is None or not stat.S_ISREG(source.st_mode):
        raise _changed(plan, f"{show(plan.source.text)} is gone or is no longer a file")
    if not _same(source, plan.source_fd):
        raise _changed(plan, f"{show(plan.source.text)} was replaced by another file")
    if not _same(os.fstat(target_dir), plan.directory_fd):
        raise _changed(plan, "the destination directory was replaced")
    if taken is not None:
        raise _changed(plan, f"{show(plan.destination.text)} exists now")


def _link(source_dir: int, target_dir: int, plan: MovePlan) -> None:
    """Create the destination name; EEXIST instead of replacing, EXDEV instead of copying.

    Where ``/proc`` allows it, the link is made to the pinned inode itself: a source name
    swapped after the last re-check (for a symlink, or another file) is then not what moves.
    """
    try:
        if _PINNED_LINKS:
            os.link(
                f"/proc/self/fd/{plan.source_fd}",
                plan.destination.parts[-1],
                dst_dir_fd=target_dir,
                follow_symlinks=True,  # the fd's magic link, to the inode the fd holds
            )
        else:
            os.link(
                plan.source.parts[-1],
                plan.destination.parts[-1],
                src_dir_fd=source_dir,
                dst_dir_fd=target_dir,
                follow_symlinks=False,
            )
    except OSError as error:
        raise _link_refusal(error, plan) from None


_PINNED_LINKS = os.path.isdir("/proc/self/fd")


def _link_refusal(error: OSError, plan: MovePlan) -> FileAccessError:
    if error.errno == errno.EEXIST:
        return refusal(
            "destination_exists",
            plan.destination,
            "the destination appeared during the move; nothing was changed",
        )
    if error.errno == errno.EXDEV:
        return refusal(
            "cross_device",
            plan.destination,
            "source and destination are on different filesystems; move_file does not copy "
            "across filesystems. Nothing was changed",
        )
    if error.errno == errno.ENOENT:
        return _changed(plan, f"{show(plan.source.text)} is gone")
    return FileAccessError(
        f"the filesystem refused the move ({error.strerror or error}); nothing was changed",
        code="move_failed",
        path=plan.source.text,
    )


def _unlink_source(source_dir: int, target_dir: int, plan: MovePlan) -> None:
    """Remove the source name, or undo the link so that the move did not happen at all."""
    name = plan.source.parts[-1]
    try:
        info = _probe(source_dir, name, plan.source)
        # if the name was removed or replaced meanwhile, the file lives on at the destination
        # only; unlinking would delete someone else's file, undoing would lose ours
        if _is_pinned(info, plan):
            os.unlink(name, dir_fd=source_dir)
    except BaseException as error:
        _undo_link(source_dir, target_dir, plan)
        if isinstance(error, OSError):
            raise FileAccessError(
                f"could not remove {show(plan.source.text)} ({error.strerror or error}); "
                "the move was undone, nothing was changed",
                code="move_failed",
                path=plan.source.text,
            ) from None
        raise


def _undo_link(source_dir: int, target_dir: int, plan: MovePlan) -> None:
    """Remove the new name, but only while the source name still holds the same file."""
    name = plan.destination.parts[-1]
    kept = _probe(source_dir, plan.source.parts[-1], plan.source)
    made = _probe(target_dir, name, plan.destination)
    if not (_is_pinned(kept, plan) and _is_pinned(made, plan)):
        return
    try:
        os.unlink(name, dir_fd=target_dir)
    except OSError as error:
        raise FileAccessError(
            f"the move failed half-way and could not be undone ({error.strerror}): "
            f"{show(plan.source.text)} and {show(plan.destination.text)} are now the same "
            "file under two names; ask the user to remove one",
            code="move_failed",
            path=plan.destination.text,
        ) from None


def _verify(source_dir: int, target_dir: int, plan: MovePlan) -> None:
    moved = _probe(target_dir, plan.destination.parts[-1], plan.destination)
    left = _probe(source_dir, plan.source.parts[-1], plan.source)
    if moved is None or not _same(moved, plan.source_fd) or _is_pinned(left, plan):
        raise FileAccessError(
            f"after moving {show(plan.source.text)} to {show(plan.destination.text)} the "
            "files on disk are not as expected; list both directories to check",
            code="move_unverified",
            path=plan.destination.text,
        )
