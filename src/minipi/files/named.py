"""The files and folders a question names, found in the project: what a guided run opens with.

A question that names ``config/app.toml`` or ``invoice-4821.json`` says where to look, as an
``@file`` mention does in the coding agents: guided mode reads it before the model's first
reply instead of leaving a small model to find it (in a large tree the search can take all its
turns, and a look-alike file beside the named one can be read in its place). Each name is
looked for as written, then (a bare file name) by name anywhere in the project, through the
sandbox's own search, so its bounds and ignore rules hold; a file is opened only when exactly
one matches and the sandbox lets ``read_file`` read it (a sensitive, binary or too large file
is not opened: the model can still ask, and hear the refusal). Nothing here reads more than the
tools would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minipi.errors import FileAccessError
from minipi.files.sandbox import ProjectFiles

__all__ = ["MAX_NAMED", "folders_said", "named_in_project"]

MAX_NAMED = 3
"""At most this many named files (and as many folders) are opened: a question listing a
dozen names is asking for a search, not for a dozen reads before the first reply."""


def named_in_project(
    files: ProjectFiles, named_files: Sequence[str], named_dirs: Sequence[str] = ()
) -> tuple[tuple[str, str], ...]:
    """``(tool, path)`` for each named path found: ``("list_files", dir)`` for a folder,
    ``("read_file", file)`` for a file, the files last; each path once, as the sandbox
    writes it (root-relative)."""
    found: dict[tuple[str, str], None] = {}
    for path in named_dirs[:MAX_NAMED]:
        where = _folder(files, path)
        if where is not None:
            found[("list_files", where)] = None
    for path in named_files[:MAX_NAMED]:
        where = _file(files, path)
        if where is not None:
            found[("read_file", where)] = None
    return tuple(found)


def folders_said(files: ProjectFiles, question: str) -> tuple[str, ...]:
    """The project's top-level folders that ``question`` says by name, without a slash
    (``reports 目录里的日报``, ``the inbox folder``): a whole word of it, in any case, or for a
    name in Han characters, anywhere in it. Hidden folders are not said by name. A folder the
    question names is where its answer is: listing it for the model saves the requests that
    finding it would cost."""
    try:
        listing = files.list_dir(".")
    except FileAccessError:
        return ()
    # a path's parts are not said alone: config/app.toml names a file, not the folder
    words = {w.strip("/").casefold() for w in re.findall(r"[\w.\-/]+", question, re.ASCII)}
    said = []
    for entry in listing.entries:
        name = entry.path.rsplit("/", 1)[-1]
        if entry.type != "dir" or name.startswith("."):
            continue
        if name.casefold() in words or (not name.isascii() and name in question):
            said.append(entry.path)
    return tuple(said)


def _folder(files: ProjectFiles, path: str) -> str | None:
    try:
        return files.list_dir(path).path
    except FileAccessError:
        return None


def _file(files: ProjectFiles, path: str) -> str | None:
    """``path`` as the sandbox reads it, or the one file of that name elsewhere."""
    readable = _readable(files, path)
    if readable is not None or "/" in path.strip("/"):
        return readable
    try:
        result = files.search(path)
    except FileAccessError:
        return None
    same = {m.path for m in result.matches if m.line == 0 and m.path.rsplit("/", 1)[-1] == path}
    return _readable(files, same.pop()) if len(same) == 1 else None


def _readable(files: ProjectFiles, path: str) -> str | None:
    """The path ``read_file`` would read, or None. The file is read here and again by the
    opening call: only a read knows (``not_utf8``, ``too_large``, ``sensitive_path``), and
    it is at most three files of ``max_bytes`` once a run, against a model request a turn."""
    try:
        return files.read_text(path).path
    except FileAccessError:
        return None
