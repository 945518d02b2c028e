"""Where a question says its answer is: the files and folders it names, and the files their
text leads to (a chain of clues). One reading for the verdict and for guided mode:

- ``question_names``: what the last question names, a path (``config/app.toml``,
  ``invoice-4821.json``, ``reports/``) or a folder said with its word (``reports 目录``,
  ``the inbox folder``, as ``dir/``);
- ``run_scope``: those, with every path named in the text a tool returned for one of them,
  to a fixed point (``clues/alpha.txt`` says "the next clue is in clues/beta.txt"). The
  verdict's ``outside_question`` is a figure found only outside it; guided mode, once each
  name was read (``read_scope``), offers only reads within it (``guided_state``);
- ``within``: a path is one of them, inside a named folder, or has a named bare file name.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from typing import TypeGuard

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, last_question, since_question
from minipi.reading.paths import named

__all__ = ["is_file", "path_argument", "question_names", "read_scope", "run_scope", "within"]


def question_names(question: str) -> frozenset[str]:
    """The files and folders (``dir/``) ``question`` names (``minipi.reading.paths``)."""
    return named(question)


def run_scope(items: Sequence[Item], names: frozenset[str] | None = None) -> frozenset[str]:
    """``names`` (None: those of the last question of ``items``), with every path named in
    the text a tool returned for one of them, to a fixed point; empty when there are none."""
    return _led(question_names(last_question(items)) if names is None else names, items)


def read_scope(items: Sequence[Item]) -> frozenset[str] | None:
    """``run_scope``, once a file within each name of the last question (the file itself,
    or one in the folder) was read without error since it; None before, or when it names
    nothing."""
    named = question_names(last_question(items))
    later = since_question(items)
    paths = {i.call_id: path_argument(i) for i in later if isinstance(i, FunctionCall)}
    read = (paths.get(i.call_id) for i in later if _content(i))
    files = {p for p in read if p is not None and is_file(p)}
    if not named or not all(any(within(p, {name}) for p in files) for name in named):
        return None
    return _led(named, items)


def _led(names: frozenset[str], items: Sequence[Item]) -> frozenset[str]:
    """``names`` with every path named in the text a tool returned for one of them, to a
    fixed point."""
    from minipi.evidence.statements import find_paths

    if not names:
        return frozenset()
    named = set(names)
    paths = {i.call_id: path_argument(i) for i in items if isinstance(i, FunctionCall)}
    outputs = [(paths.get(i.call_id), i.output) for i in items if isinstance(i, FunctionCallOutput)]
    grew = True
    while grew:  # each round adds a path or ends: at most one round a result
        grew = False
        for path, output in outputs:
            if path is not None and within(path, named):
                more = {found.value for found in find_paths(output)} - named
                grew = grew or bool(more)
                named |= more
        outputs = [(path, output) for path, output in outputs if not within(path or "", named)]
    return frozenset(named)


def _content(item: Item) -> TypeGuard[FunctionCallOutput]:
    """A tool result with content (not an error, not only paths)."""
    if not isinstance(item, FunctionCallOutput):
        return False
    return not item.is_error and item.details.get("output") != "paths"


def path_argument(call: FunctionCall) -> str | None:
    """The call's ``path`` argument (as the evidence sources read it), or None."""
    try:
        arguments = json.loads(call.arguments)
    except (ValueError, RecursionError):
        return None
    path = arguments.get("path") if isinstance(arguments, dict) else None
    return path if isinstance(path, str) else None


def is_file(path: str) -> bool:
    """A path that names a file (an extension): a search over a folder is never one."""
    return "." in posixpath.basename(path.rstrip("/"))[1:]


def within(path: str, named: frozenset[str] | set[str]) -> bool:
    """``path`` is one of ``named``, inside a named folder, or has a named bare file name."""
    path = posixpath.normpath(path.removeprefix("./"))
    for name in named:
        name = name.removeprefix("./")
        folder = name.rstrip("/")
        if path == folder or path.startswith(folder + "/"):
            return True
        if "/" not in name and posixpath.basename(path) == name:
            return True
    return False
