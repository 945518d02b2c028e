"""Project file tools ("pi_coding_agent"): the ProjectFiles sandbox and the tools bound to it.

Usage::

    with ProjectFiles("examples/sample_project") as files:
        tools = create_project_tools(files, approve=ask_user)
"""

from __future__ import annotations

from minipi.files.paths import DEFAULT_SENSITIVE, is_within
from minipi.files.results import DirEntry, Listing, Match, Moved, SearchResult, TextFile
from minipi.files.sandbox import ProjectFiles
from minipi.files.tools import (
    PROJECT_TOOLS,
    create_project_tools,
    make_list_files_tool,
    make_move_file_tool,
    make_read_file_tool,
    make_search_files_tool,
)

__all__ = [
    "DEFAULT_SENSITIVE",
    "PROJECT_TOOLS",
    "DirEntry",
    "Listing",
    "Match",
    "Moved",
    "ProjectFiles",
    "SearchResult",
    "TextFile",
    "create_project_tools",
    "is_within",
    "make_list_files_tool",
    "make_move_file_tool",
    "make_read_file_tool",
    "make_search_files_tool",
]
