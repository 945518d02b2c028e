"""The claims of an answer about the project's files: the paths it names and the changes it
says were made (``claims`` runs these finders with its own).

Paths: a token with a ``/`` and a letter (``reports/daily.json``, ``archive/``, ``./a/b``),
or a name with a file extension of the list below (``README.md``, ``猫咪小花.txt``,
``.gitignore``); not a URL. Its value is the path without a leading ``./``.

Changes: a sentence (up to ``。！？.!?;；`` or a line break) that says a file was moved,
renamed, archived, deleted or created, in Chinese (``已移动``, ``移到了``, ``被归档``,
``删除了``, ``已创建``) or English (``moved``, ``renamed``, ``archived``, ``deleted``,
``created``) and does not deny or offer it (``没有移动``, ``not moved``, ``可以移动``,
``I can move``, ``要我移动吗``). These are the kinds of change a reader checks, detected
whatever tools the run had; what supports one is a change a tool made and named with a word
of the sentence (``sources.Change``), never this list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from minipi.agent.evidence.types import Found, TextFigure

__all__ = ["find_changes", "find_paths"]

_EXTENSIONS = (
    "txt|md|markdown|rst|json|jsonl|csv|tsv|log|toml|yaml|yml|ini|cfg|conf|env|lock|xml|html"
    "|htm|css|js|ts|tsx|jsx|py|java|kt|go|rs|rb|php|c|h|cpp|hpp|cs|sh|bat|ps1|sql|pdf|doc|docx"
    "|xls|xlsx|ppt|pptx|png|jpg|jpeg|gif|svg|zip|gz|tar|bak|dat|db|sqlite|gitignore"
)
_SEGMENT = r"[\w\-.]*[\w\-]"
_PATH = re.compile(
    rf"(?<![\w./\\:-])(?:\./)?(?:(?:{_SEGMENT}/)+(?:{_SEGMENT}\.(?:{_EXTENSIONS}))?"
    rf"|{_SEGMENT}\.(?:{_EXTENSIONS})|\.(?:gitignore|env))(?![A-Za-z0-9_/-]|\.[A-Za-z0-9])",
    re.IGNORECASE,
)

_SENTENCE = re.compile(r"[^。！？!?;；\n]+(?:[.](?!\w)|[。！？!?;；\n]|$)")
_ZH_VERBS = "移动|移到|移至|挪到|转移|归档|重命名|改名|删除|删掉|移除|创建|新建|放到|放入|移入"
_ZH_CHANGE = re.compile(
    rf"(?:已经?|已)\s*[把将][^，。；\n]{{1,60}}?(?:{_ZH_VERBS})"
    r"|(?:已经?|被|都)\s*(?:被\s*)?(?:移动|移到|移至|挪到|转移|归档|重命名|改名|删除|删掉|"
    r"移除|创建|新建|放到|放入|移入)|(?:移动|移到|移至|挪到|归档|重命名|改名|删除|删掉|移除|"
    r"创建|新建|放到|放入|移入)(?:了|完成|成功)"
)
_EN_CHANGE = re.compile(
    r"\b(?:moved|renamed|archived|deleted|removed|created|relocated)\b", re.IGNORECASE
)
_DENIED = re.compile(
    r"没有|没|未|不|无法|可以|能否|是否|要不要|需要|建议|将会|请|吗|"
    r"\b(?:not|n't|no|never|nothing|can|could|would|should|will|may|might|shall|if|want|"
    r"need|please)\b",
    re.IGNORECASE,
)


def find_paths(text: str) -> Iterator[Found]:
    """The paths and file names of ``text`` (see the module docstring)."""
    for match in _PATH.finditer(text):
        token = match.group()
        if "/" in token and not re.search(r"[^\W\d_]", token):
            continue  # 2026/09/06, 1/2: no letter, no path
        if text.startswith("//", match.end() - 1) or "://" in text[match.start() : match.end() + 3]:
            continue
        value = token[2:] if token.startswith("./") else token
        figure = TextFigure(value, "")
        yield Found(match.start(), match.end(), "path", value, None, figure, match.span())


def find_changes(text: str) -> Iterator[Found]:
    """The sentences of ``text`` that say a change was made; each claim is the sentence."""
    for sentence in _SENTENCE.finditer(text):
        said = sentence.group()
        verb = _ZH_CHANGE.search(said) or _EN_CHANGE.search(said)
        if verb is None or _DENIED.search(said, 0, verb.start()):
            continue
        stripped = said.strip()
        start = sentence.start() + said.index(stripped)
        end = start + len(stripped)
        figure = TextFigure(verb.group(), "")
        yield Found(start, end, "change", verb.group(), None, figure, (start, end))
