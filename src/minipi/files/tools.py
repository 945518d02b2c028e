"""The project file tools, each built by a factory bound to one ProjectFiles sandbox.

Output formats (the CLI and tests rely on them; written by ``minipi.files.output``):

- ``list_files``: one root-relative entry per line; ``dir/``, ``link -> (symlink, not
  followed)``, ``pipe (fifo)``; ``(empty directory)``; last line
  ``[truncated: N more entries; list a subdirectory]``.
- ``read_file``: the text exactly; ``(empty file, 0 bytes)``; then
  ``[truncated: N more lines; call read_file again with offset=K]`` and
  ``[note: this file has 2 hard links]`` lines when they apply.
- ``search_files``: ``path:line: text`` lines (``path (file name)`` for a file whose name
  contains the query), then ``[N matching lines in M files]`` when every match is shown,
  then notices; ``no matches for 'q'``.

``list_files`` and ``search_files`` skip what the repository ignores, as ripgrep and the coding
agents do: hidden names (``.git/``, ``.venv/``, ``.keep``) and the root ``.gitignore``'s
patterns (``minipi.files.walk.Ignore``), unless the path asked for is itself hidden or
ignored (``list_files .ci`` lists it). ``read_file`` and ``move_file`` are not affected.
- ``move_file``: ``moved inbox/a.txt -> archive/a.txt``.

A path that could break a line or fool a terminal is written as a JSON string literal
(``paths.quote_path``). Refusals raise ``FileAccessError``; ``AgentTool.execute`` turns them
into error results carrying the code.

Details (never sent to the model; guided mode, ``minipi.guided.schema``, and the
evidence check read them):

- each tool's ``AgentTool.details["parameter_choices"]`` maps a parameter to where its
  values come from: ``{"kind": "dir", "always": ["."]}`` (directories results have shown,
  and the root), ``{"kind": "file"}``, or ``{"kind": "question"}`` (``search_files``' query:
  the words of the question); guided mode adds the paths the question names to ``file`` and
  ``dir``;
- a result's ``ToolResult.details["choices"]`` maps a kind (``file``, ``dir``) to the paths
  it showed to exist (``list_files``, ``search_files``, ``read_file``'s file, ``move_file``'s
  new path) and
  ``details["gone"]`` to those it showed to no longer exist (``move_file``'s old path);
  paths that need escaping or are sensitive are never in them;
- ``details["output"] == "paths"`` (``list_files``, ``move_file``): every line of the
  output names a path (or says there is none, or more), none is file content;
- ``details["marks"]`` (every tool): which parts of the output are what, a list of
  ``[start, end, origin]`` (code points, end exclusive): ``"content"`` (a file's text, a
  search hit's line) or ``"path"`` (a listed, found or moved path); the rest (notices,
  ``no matches for '…'``, line numbers, the ``moved``/``->`` words) is the tool's own words;
  this is what the evidence check takes as sources (``minipi.evidence.sources``);
- ``details["reused"]`` (``read_file`` given a conversation's ``ReadCache``): the file was
  unchanged since this conversation read it, and its text was not read again (the output is
  what a new read gives);
- ``details["changed"]`` (``move_file``): the call changed the project, and
  ``details["change_words"]`` how its change is called, by language
  (``{"en": [...], "zh": [...]}``): what an answer saying it was done may use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from minipi.agent.tools import AgentTool, ApprovalRequest, Approver, ToolResult
from minipi.ai.types import JsonObject
from minipi.errors import FileAccessError
from minipi.files.output import (
    Mark,
    format_listing,
    format_search,
    format_text,
    marked_listing,
    marked_search,
)
from minipi.files.paths import is_sensitive, quote_path
from minipi.files.results import Listing
from minipi.files.sandbox import ProjectFiles, ReadCache
from minipi.files.walk import Ignore

__all__ = [
    "PROJECT_TOOLS",
    "create_project_tools",
    "format_listing",
    "format_search",
    "format_text",
    "make_list_files_tool",
    "make_move_file_tool",
    "make_read_file_tool",
    "make_search_files_tool",
]

PROJECT_TOOLS = ("list_files", "read_file", "search_files", "move_file")
"""The names of the tools ``create_project_tools`` can make."""

_DIRS: JsonObject = {"kind": "dir", "always": ["."]}
_FILES: JsonObject = {"kind": "file"}
_QUESTION: JsonObject = {"kind": "question"}  # the question's words
_PATHS = "paths"  # details["output"]: every line of the output is a path
MOVE_WORDS: JsonObject = {
    "en": ["moved", "archived", "relocated"],
    "zh": ["移动", "移到", "移至", "挪到", "转移", "归档", "放到", "放入", "移入"],
}
"""How ``move_file`` calls its change (``details["change_words"]``)."""
_ROOT_NOTE = "relative to the project root; use . for the root"


def _schema(properties: JsonObject, required: list[str]) -> JsonObject:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def make_list_files_tool(files: ProjectFiles) -> AgentTool:
    """``list_files(path)``: the direct children of a directory."""

    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        listing = _unignored(files.list_dir(arguments["path"]), files)
        text, marks = marked_listing(listing)
        details = {"choices": _listed(listing, files), "output": _PATHS, "marks": marks}
        return ToolResult(text, details=details)

    return AgentTool(
        name="list_files",
        description=(
            "List the files and directories directly inside a project directory "
            "(hidden and .gitignore'd ones only when listed by name)."
        ),
        parameters=_schema(
            {"path": {"type": "string", "description": f"Directory path, {_ROOT_NOTE}."}},
            ["path"],
        ),
        handler=handler,
        details={"parameter_choices": {"path": _DIRS}},
    )


def make_read_file_tool(files: ProjectFiles, reads: ReadCache | None = None) -> AgentTool:
    """``read_file(path, offset?, limit?)``: a UTF-8 text file, or a range of its lines; with
    ``reads`` (one conversation's), an unchanged file already read is not read again: the
    result is the same, and says so in ``details["reused"]``."""

    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        path, offset, limit = arguments["path"], arguments.get("offset"), arguments.get("limit")
        text, reused = files.read_text_reusing(path, offset, limit, reads)
        marks: list[Mark] = [[0, len(text.text), "content"]] if text.total_lines else []
        details: dict[str, Any] = {"marks": marks}
        if _offerable(text.path, files):  # a file read is a file shown to exist
            details["choices"] = {"file": [text.path]}
        if reused:
            details["reused"] = True
        return ToolResult(format_text(text), details=details)

    line = {"type": "integer", "minimum": 1}
    return AgentTool(
        name="read_file",
        description="Read a UTF-8 text file of the project.",
        parameters=_schema(
            {
                "path": {"type": "string", "description": f"File path, {_ROOT_NOTE}."},
                "offset": {**line, "description": "First line to read (1-based). Optional."},
                "limit": {**line, "description": "Number of lines to read. Optional."},
            },
            ["path"],
        ),
        handler=handler,
        details={"parameter_choices": {"path": _FILES}},
    )


def make_search_files_tool(files: ProjectFiles) -> AgentTool:
    """``search_files(query, path?)``: literal, case-sensitive search in text files."""

    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        result = files.search(arguments["query"], arguments.get("path", "."))
        paths = list(dict.fromkeys(m.path for m in result.matches if m.path.isprintable()))
        text, marks = marked_search(result)
        return ToolResult(text, details={"choices": {"file": paths}, "marks": marks})

    return AgentTool(
        name="search_files",
        description=(
            "Find the lines that contain a text in the project's files, and the files "
            "whose name contains it (plain text, case-sensitive, not a regex; hidden and "
            ".gitignore'd files are skipped)."
        ),
        parameters=_schema(
            {
                "query": {"type": "string", "description": "The exact text to find."},
                "path": {
                    "type": "string",
                    "description": f"Directory to search, {_ROOT_NOTE} (the default).",
                },
            },
            ["query"],
        ),
        handler=handler,
        details={"parameter_choices": {"path": _DIRS, "query": _QUESTION}},
    )


def make_move_file_tool(files: ProjectFiles, approve: Approver) -> AgentTool:
    """``move_file(source, target)``: move one file after ``approve`` allows it."""

    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        asked = _Asked(approve)
        try:
            moved = files.move(arguments["source"], arguments["target"], asked)
        except FileAccessError as error:
            if asked.refused:  # a person said no: the loop trusts this fact, not the code
                return ToolResult.denial(error.message)
            raise
        source, destination = quote_path(moved.source), quote_path(moved.destination)
        text = f"moved {source} -> {destination}"
        after = len(text) - len(destination)
        marks = [[6, 6 + len(source), "path"], [after, len(text), "path"]]
        # Guided mode then offers the file where it now is, and no longer where it was.
        shown = [moved.destination] if _offerable(moved.destination, files) else []
        details = {
            "choices": {"file": shown},
            "gone": {"file": [moved.source]},
            "output": _PATHS,
            "marks": marks,
            "changed": True,
            "change_words": MOVE_WORDS,
        }
        return ToolResult(text, changed=True, details=details)

    return AgentTool(
        name="move_file",
        description=(
            "Move one file to a new path, or into an existing directory. "
            "The user must approve; an existing file is never replaced."
        ),
        parameters=_schema(
            {
                "source": {"type": "string", "description": f"File to move, {_ROOT_NOTE}."},
                "target": {
                    "type": "string",
                    "description": f"New file path or existing directory, {_ROOT_NOTE}.",
                },
            },
            ["source", "target"],
        ),
        handler=handler,
        mutating=True,
        details={"parameter_choices": {"source": _FILES, "target": {"kind": "dir"}}},
    )


class _Asked:
    """``approve``, remembering whether it refused (anything but True, or a failed prompt)."""

    def __init__(self, approve: Approver) -> None:
        self.approve = approve
        self.refused = False

    def __call__(self, request: ApprovalRequest) -> bool:
        self.refused = True  # until it says yes: a prompt that fails refuses too
        allowed = self.approve(request)
        self.refused = allowed is not True
        return allowed


def create_project_tools(
    files: ProjectFiles, approve: Approver | None = None, *, reads: ReadCache | None = None
) -> list[AgentTool]:
    """list_files, read_file (reusing ``reads``, when given), search_files, and move_file
    when an approver is given."""
    tools = [
        make_list_files_tool(files),
        make_read_file_tool(files, reads),
        make_search_files_tool(files),
    ]
    if approve is not None:
        tools.append(make_move_file_tool(files, approve))
    return tools


def _unignored(listing: Listing, files: ProjectFiles) -> Listing:
    """``listing`` without its hidden and ``.gitignore``'d entries, unless the listed
    directory is itself one of them (it was asked for by name)."""
    parts = tuple(p for p in listing.path.split("/") if p not in ("", "."))
    ignore = _gitignore(files)
    if parts and ignore.skips(parts, True):
        return listing
    kept = tuple(e for e in listing.entries if not ignore.skips(e.path.split("/"), e.type == "dir"))
    return replace(listing, entries=kept)


def _gitignore(files: ProjectFiles) -> Ignore:
    try:
        ignore = Ignore.parse(files.read_text(".gitignore").text)
    except FileAccessError:
        ignore = Ignore()
    return replace(ignore, allow=files.allow)


def _listed(listing: Listing, files: ProjectFiles) -> dict[str, list[str]]:
    """Paths worth offering to the next call, by kind: files and directories not refused."""
    offered = [
        e for e in listing.entries if e.type in ("file", "dir") and _offerable(e.path, files)
    ]
    return {
        "file": [e.path for e in offered if e.type == "file"],
        "dir": [e.path for e in offered if e.type == "dir"],
    }


def _offerable(path: str, files: ProjectFiles) -> bool:
    """Whether a root-relative canonical path may be offered as a choice."""
    # Names that need escaping are not offered; sensitive ones would only be refused.
    return path.isprintable() and not is_sensitive(path.split("/"), files.allow)
