"""A move a killed task left without its result: made or not, decided from the journal and
the file system, never from what the model says next.

The rule (principle 10 of RELIABILITY.md, with the evidence at hand): a call whose outcome is
unknown stays unknown, unless the journal and the disk together prove the outcome. For a
``move_file`` call that proof is: the journal holds its approval, granted (so the move was
allowed to happen, and which canonical source and destination it names), the source name is
gone, and the destination is a regular file that is the approved file itself: the same
device, inode and size as the source had when it was approved (``with_identity`` saves them
with the approval, before the move). A move cut between its link and its unlink (both names
there), one never begun (the source still there), or a destination holding another file is
not proven: it is answered "outcome unknown" as before (``minipi.session.resume``).

A proven move is answered with the result ``move_file`` gives (``moved A -> B``, a change
of this task) and a line that says how it was known; the record then says what happened.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from minipi.agent.events import ItemsAdded, Notice, ToolResultReady
from minipi.agent.tools import ApprovalRequest, Approver, ToolResult
from minipi.ai.types import FunctionCallOutput
from minipi.errors import FileAccessError
from minipi.files.paths import RelPath, parse_path
from minipi.files.tools import MOVE_WORDS
from minipi.files.walk import Root, lstat_at, walk
from minipi.session import Entry, OpenSession
from minipi.session.resume import OpenCall, replay

__all__ = ["settle_moves", "with_identity"]

_TOOL = "move_file"
_IDENTITY = ("source_device", "source_inode", "source_size")
"""The approval's details that name the approved file (decimal strings)."""
PROVEN = (
    "(the task was killed before this result was saved; on resume the source was gone and "
    "the destination held the approved file: the move was made)"
)


def with_identity(root: str, approve: Approver) -> Approver:
    """``approve``, whose ``move_file`` requests carry the source file's device, inode and
    size in their details (put ``approve`` first among the wrappers that save, so that they
    are saved with the approval, before the move)."""

    def approve_with_identity(request: ApprovalRequest) -> bool:
        if request.tool == _TOOL:
            try:
                info = _lstat(root, request.details.get("source"))
            except _Unknown:
                info = None
            if info is not None and stat.S_ISREG(info.st_mode):
                values = (info.st_dev, info.st_ino, info.st_size)
                found = {k: str(v) for k, v in zip(_IDENTITY, values, strict=True)}
                request = replace(request, details={**request.details, **found})
        return approve(request)

    return approve_with_identity


def settle_moves(book: OpenSession) -> list[str]:
    """Answer each open ``move_file`` call that the journal and the disk prove made, as the
    tool would have (saved through the journal's recorder); the outputs given."""
    entries = book.store.entries(book.info.id)
    _, waiting = replay(book.name, entries)
    settled = []
    for open_call in waiting:
        approved = _approved(entries, open_call) if open_call.call.name == _TOOL else None
        if approved is not None and _made(book.info.project, approved):
            settled.append(_answer(book, open_call, approved))
    return settled


def _approved(entries: Sequence[Entry], open_call: OpenCall) -> Mapping[str, Any] | None:
    """The details of ``open_call``'s approval when its last answer granted it, else None."""
    asked, answered = _approvals([e for e in entries if _about(e, open_call)])
    granted = bool(asked) and len(answered) == len(asked) and answered[-1] is True
    return asked[-1] if granted and isinstance(asked[-1], dict) else None


def _approvals(mine: Sequence[Entry]) -> tuple[list[Any], list[Any]]:
    """The details of each approval asked, and each answer (``allowed``), in order."""
    asked = [e.event.get("details") for e in mine if e.type == "approval_asked"]
    return asked, [e.event.get("allowed") for e in mine if e.type == "approval_answered"]


def _about(entry: Entry, open_call: OpenCall) -> bool:
    """Whether ``entry`` was saved about ``open_call``, after it, in its run."""
    same_call = entry.call_id == open_call.call.call_id
    return same_call and entry.run == open_call.run and entry.seq > open_call.seq


def _made(root: str, approved: Mapping[str, Any]) -> bool:
    """Whether the approved move is whole on disk: the source gone, the destination the
    approved file (the same device, inode and size, when the approval recorded them)."""
    try:
        source = _lstat(root, approved.get("source"))
        target = _lstat(root, approved.get("destination"))
    except _Unknown:
        return False
    if source is not None or target is None or not stat.S_ISREG(target.st_mode):
        return False
    return _same_file(target, [approved.get(k) for k in _IDENTITY])


def _same_file(target: os.stat_result, recorded: list[Any]) -> bool:
    """Whether ``target`` is the file the approval names (any file, for an older approval
    that names none: the source gone and the destination there is then all there is)."""
    if all(v is None for v in recorded):
        return True
    if not all(isinstance(v, str) and v.isdigit() for v in recorded):
        return False
    return [int(v) for v in recorded] == [target.st_dev, target.st_ino, target.st_size]


class _Unknown(Exception):
    """The disk could not say (a path that is no path, a link, a permission refused)."""


def _lstat(root: str, shown: object) -> os.stat_result | None:
    """``lstat`` of ``shown`` (a canonical path as an approval shows it: ``quote_path``)
    under ``root``, walked a name at a time through no link; None when it is not there."""
    try:
        text = json.loads(shown) if isinstance(shown, str) and shown.startswith('"') else shown
        rel = parse_path(text)
    except (ValueError, FileAccessError):
        raise _Unknown from None
    if not rel.parts:
        raise _Unknown
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise _Unknown from None
    try:
        return _lstat_under(Root(fd, os.fstat(fd).st_dev), rel)
    finally:
        os.close(fd)


def _lstat_under(root: Root, rel: RelPath) -> os.stat_result | None:
    try:
        parent = walk(root, rel.parent.parts)
    except FileAccessError as error:
        if error.code == "not_found":
            return None
        raise _Unknown from None
    try:
        return lstat_at(parent, rel.parts[-1], rel)
    except FileAccessError as error:
        if error.code == "not_found":
            return None
        raise _Unknown from None
    finally:
        os.close(parent)


def _answer(book: OpenSession, open_call: OpenCall, approved: Mapping[str, Any]) -> str:
    """Save the result the move would have had, as the loop saves one, and a notice."""
    call, turn = open_call.call, open_call.turn
    source, destination = str(approved["source"]), str(approved["destination"])
    head = f"moved {source} -> {destination}"
    after = len(head) - len(destination)
    details = {
        "gone": {"file": [_plain(source)]},
        "output": "paths",
        "marks": [[6, 6 + len(source), "path"], [after, len(head), "path"]],
        "changed": True,
        "change_words": MOVE_WORDS,
    }
    result = ToolResult(f"{head}\n{PROVEN}", changed=True, details=details)
    output = FunctionCallOutput(call.call_id, result.content, details=result.details)
    book.recorder.continue_run(open_call.run)
    book.recorder(ToolResultReady(turn, call.call_id, call.name, result, 0.0))
    book.recorder(ItemsAdded(turn, (output,)))
    book.recorder(Notice(turn, f"{call.name} (call {call.call_id}): {head} {PROVEN}", "repaired"))
    return result.content


def _plain(shown: str) -> str:
    """The path a ``quote_path`` text shows."""
    return str(json.loads(shown)) if shown.startswith('"') else shown
