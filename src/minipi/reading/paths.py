"""The file and folder names a text states.

A path is a token with a ``/`` and a letter (``reports/daily.json``, ``archive/``, ``./a/b``),
or a name with a file extension of ``EXTENSIONS`` (``README.md``, ``猫咪小花.txt``,
``.gitignore``); not a URL, not a date (``2026/09/06``). Its value is the path without a
leading ``./``. A question also names a folder with its word: ``reports 目录``,
``the inbox folder`` (``dir/``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["EXTENSIONS", "named", "path_spans"]

EXTENSIONS = (
    "txt|md|markdown|rst|json|jsonl|csv|tsv|log|toml|yaml|yml|ini|cfg|conf|env|lock|xml|html"
    "|htm|css|js|ts|tsx|jsx|py|java|kt|go|rs|rb|php|c|h|cpp|hpp|cs|sh|bat|ps1|sql|pdf|doc|docx"
    "|xls|xlsx|ppt|pptx|png|jpg|jpeg|gif|svg|zip|gz|tar|bak|dat|db|sqlite|gitignore"
)
_SEGMENT = r"[\w\-.]*[\w\-]"
_PATH = re.compile(
    rf"(?<![\w./\\:-])(?:\./)?(?:(?:{_SEGMENT}/)+(?:{_SEGMENT}\.(?:{EXTENSIONS}))?"
    rf"|{_SEGMENT}\.(?:{EXTENSIONS})|\.(?:gitignore|env))(?![A-Za-z0-9_/-]|\.[A-Za-z0-9])",
    re.IGNORECASE,
)
_FOLDER_WORD = re.compile(
    r"(?<![\w.-])([\w.-]*[A-Za-z0-9_])\s*(?:目录|文件夹)"
    r"|\b(?:the\s+)?([\w.-]*[A-Za-z0-9_])\s+(?:directory|folder)\b",
    re.IGNORECASE,
)


def path_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of each path of ``text`` (module docstring)."""
    for match in _PATH.finditer(text):
        token = match.group()
        if "/" in token and not re.search(r"[^\W\d_]", token):
            continue  # 2026/09/06, 1/2: no letter, no path
        if text.startswith("//", match.end() - 1) or "://" in text[match.start() : match.end() + 3]:
            continue
        yield match.start(), match.end(), token[2:] if token.startswith("./") else token


def named(text: str) -> frozenset[str]:
    """The files and folders (``dir/``) ``text`` names: paths, and folders said with their
    word."""
    found = {value for _, _, value in path_spans(text)}
    found |= {f"{m.group(1) or m.group(2)}/" for m in _FOLDER_WORD.finditer(text)}
    return frozenset(found)
