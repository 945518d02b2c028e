"""The claims of an answer about the project's files: the paths it names and the changes it
says were made (``claims`` runs these finders with its own).

Paths: as ``minipi.reading.paths`` finds them (the one path finder of minipi).

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

from minipi.evidence.types import Found, TextFigure
from minipi.reading.paths import path_spans

__all__ = ["find_changes", "find_paths"]

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
    """The paths and file names of ``text`` (``minipi.reading.paths``)."""
    for start, end, value in path_spans(text):
        figure = TextFigure(value, "")
        yield Found(start, end, "path", value, None, figure, (start, end))


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
