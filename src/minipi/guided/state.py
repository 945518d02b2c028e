"""What a guided run's history says: the values tools showed, the calls made, the question.

``RunState.of(items, mutating)`` reads the request's items once a turn (``guided_schema``
decides from it what the next reply may be). A parameter whose values come from what tools
have shown is a ``ChoiceSpec`` (``choice_specs``: the file tools declare them in their
``details["parameter_choices"]``); results show values by kind in ``details["choices"]`` and
withdraw them in ``details["gone"]`` (a moved file's old path).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, ToolSpec, is_question
from minipi.evidence.scope import is_file, read_scope, within
from minipi.guided.rank import Question, words_of

__all__ = ["ChoiceSpec", "RunState", "call_key", "choice_specs", "loads_or_none"]


MAX_LED = 32
"""At most this many paths that the text of what the question names leads to, and that no
listing showed, are offered (``RunState.offered`` once the names were read)."""


@dataclass(frozen=True, slots=True)
class ChoiceSpec:
    """A parameter whose values come from what tools have shown: values of ``kind`` found in
    earlier results, plus ``always`` (e.g. ``"."`` for the project root)."""

    kind: str
    always: tuple[str, ...] = ()


def choice_specs(tool: ToolSpec) -> dict[str, ChoiceSpec]:
    """The parameters of ``tool`` whose values come from tool results, from its
    ``details["parameter_choices"]`` (``{"path": {"kind": "dir", "always": ["."]}}``); an
    entry of another shape is ignored (the parameter is then free)."""
    declared = tool.details.get("parameter_choices")
    specs: dict[str, ChoiceSpec] = {}
    for name, entry in declared.items() if isinstance(declared, Mapping) else ():
        kind = entry.get("kind") if isinstance(entry, Mapping) else None
        if isinstance(kind, str):
            always = entry.get("always") or ()
            specs[name] = ChoiceSpec(kind, tuple(v for v in always if isinstance(v, str)))
    return specs


@dataclass(frozen=True, slots=True)
class RunState:
    """What the history says: values shown by kind, calls made since the last change, and
    whether a tool result follows the last user message."""

    shown: Mapping[str, tuple[str, ...]]
    made: frozenset[str]
    repeated: frozenset[str]  # tools that already repeated an identical call
    evidence: bool
    changed: bool  # a mutating call succeeded since the last user message
    question: Question
    asked: frozenset[str]  # the argument values of calls since the question
    read: bool  # a result with content (not only paths) follows the question
    searched: bool = False  # a search (one of ``of``'s ``searching``) answered since then
    focus: frozenset[str] | None = None  # once each name of the question was read: its scope

    @classmethod
    def of(
        cls,
        items: Sequence[Item],
        mutating: frozenset[str],
        searching: frozenset[str] = frozenset(),
    ) -> RunState:
        reading = _Reading(mutating, searching)
        for item in items:
            reading.add(item)
        return cls(
            {k: tuple(v) for k, v in reading.shown.items()},
            frozenset(reading.made),
            frozenset(reading.repeated),
            reading.evidence,
            reading.changed,
            Question.of(reading.question),
            frozenset(reading.asked),
            reading.read,
            reading.searched,
            read_scope(items),
        )

    def offered(self, spec: ChoiceSpec, change: bool = False) -> list[str]:
        """The values of ``spec``: its ``always`` ones, those results showed, and those the
        question names (a path for ``file``/``dir``, its words for ``question``). For a
        change (``change``), the files whose names share the most words with the question,
        when one does: a change cannot be taken back by reading again, so its target is the
        file the question names, not another of the same kind."""
        shown = self.shown.get(spec.kind, ())
        values = list(dict.fromkeys((*spec.always, *shown, *self._named(spec.kind))))
        if not change and self.focus is not None and spec.kind in ("file", "dir"):
            return self._focused(values, spec.kind)
        if not change or spec.kind != "file":
            return values
        return self._closest(values)

    def _named(self, kind: str) -> tuple[str, ...]:
        """The values of ``kind`` the question names: its paths for ``file``/``dir``, its
        search tokens that are not paths for ``question``."""
        paths = set(self.question.paths)
        return {
            "file": self.question.named_files,
            "dir": self.question.named_dirs,
            "question": tuple(t for t in self.question.tokens if t not in paths),
        }.get(kind, ())

    def _closest(self, files: list[str]) -> list[str]:
        """The files whose names share the most words with the question, when one does (else
        all of ``files``)."""
        shared = {v: len(self.question.words & words_of(v.rsplit("/", 1)[-1])) for v in files}
        most = max(shared.values(), default=0)
        return [v for v in files if shared[v] == most] if most else files

    def _focused(self, values: list[str], kind: str) -> list[str]:
        """Once each file and folder the question names was read (``focus``), the values
        within them and the paths their text leads to, less the names already read: not
        the example config beside the real one, a draft beside the report, the decoy of a
        chain of clues (a small model reads a look-alike after the named file and answers
        from the last thing it read), nor the folders of a tree whose file was found."""
        focus = self.focus or frozenset()
        # sorted: the grammar is the same each run; bounded: a file that names a thousand
        # paths does not make a thousand-value enum
        led = _of_kind(focus, kind)[:MAX_LED]
        found = dict.fromkeys((*values, *(p.rstrip("/") for p in led)))
        kept = [v for v in found if within(v, focus)]
        return [v for v in kept if not self._asked_for(v)] if kind == "file" else kept

    @property
    def unread(self) -> tuple[str, ...]:
        """The files the question names that no call since it has named (as written, or a
        bare file name within a path: ``invoice-4821.json`` read as ``archive/…/invoice-4821.json``
        counts)."""
        return tuple(p for p in self.question.named_files if not self._asked_for(p))

    @property
    def located(self) -> bool:
        """Whether a call since the question asked for a path that results showed and that
        the question names (``Question.says``): it said where to look, and it was looked at."""
        shown = {*self.shown.get("dir", ()), *self.shown.get("file", ())}
        return any(v in shown and self.question.says(v) for v in self.asked)

    def _asked_for(self, path: str) -> bool:
        if path in self.asked:
            return True
        return "/" not in path and any(a.endswith(f"/{path}") for a in self.asked)

    def asks_change(self, tools: Sequence[ToolSpec]) -> bool:
        """Whether the question asks for what a mutating tool does (its name's first word,
        ``move`` of a tool that moves files, is one of the question's words)."""
        verbs = {t.name.split("_")[0].lower() for t in tools if t.mutating}
        return bool(verbs & self.question.words)


def _of_kind(paths: frozenset[str], kind: str) -> list[str]:
    """The folders (``kind`` ``dir``: ending in ``/``, or not a file) or else the files of
    ``paths``, sorted."""
    return sorted(p for p in paths if (p.endswith("/") or not is_file(p)) == (kind == "dir"))


@dataclass(slots=True)
class _Reading:
    """What ``RunState.of`` gathers as it reads the history, item by item."""

    mutating: frozenset[str]
    searching: frozenset[str]
    shown: dict[str, dict[str, None]] = field(default_factory=dict)
    made: set[str] = field(default_factory=set)
    repeated: set[str] = field(default_factory=set)
    asked: set[str] = field(default_factory=set)
    changes: set[str] = field(default_factory=set)  # the changes made: never offered again
    names: dict[str, tuple[str, str]] = field(default_factory=dict)  # call_id -> (tool, key)
    evidence: bool = False
    changed: bool = False
    read: bool = False
    searched: bool = False
    question: str = ""

    def add(self, item: Item) -> None:
        if isinstance(item, FunctionCallOutput):
            self._answered(item)
        elif isinstance(item, FunctionCall):
            self._called(item)
        elif is_question(item):
            self._asked(item.text)

    def _answered(self, item: FunctionCallOutput) -> None:
        self.evidence = True
        self.read = self.read or (not item.is_error and item.details.get("output") != "paths")
        _show(self.shown, item)
        name, change = self.names.get(item.call_id, ("", ""))
        self.searched = self.searched or (name in self.searching and not item.is_error)
        if name in self.mutating and not item.is_error:
            self._changed(change)

    def _changed(self, change: str) -> None:
        self.made.clear()  # the world changed: earlier reads may differ now
        self.changes.add(change)
        self.made.update(self.changes)  # but the same change again is not useful
        self.repeated.clear()
        self.changed = True

    def _called(self, item: FunctionCall) -> None:
        arguments = loads_or_none(item.arguments)
        key = call_key(item.name, arguments)
        self.names[item.call_id] = (item.name, key)
        if key in self.made:
            self.repeated.add(item.name)
        self.made.add(key)
        if isinstance(arguments, dict):
            self.asked.update(v for v in arguments.values() if isinstance(v, str))

    def _asked(self, question: str) -> None:
        """A new question: its reads are useful again, even those made before."""
        self.evidence = self.changed = self.read = self.searched = False
        self.made = set(self.changes)
        self.repeated.clear()
        self.asked.clear()
        self.question = question


def _show(shown: dict[str, dict[str, None]], output: FunctionCallOutput) -> None:
    """Update the values shown by kind with one result: its ``gone`` first, then its
    ``choices`` (what it shows to exist now)."""
    for kind, values in _by_kind(output.details.get("gone")):
        for value in values:
            shown.get(kind, {}).pop(value, None)
    for kind, values in _by_kind(output.details.get("choices")):
        shown.setdefault(kind, {}).update(dict.fromkeys(values))


def _by_kind(values: Any) -> list[tuple[str, list[str]]]:
    """A details entry of values by kind (``{"file": ["a.txt"]}``) as pairs; anything
    else as none."""
    if not isinstance(values, Mapping):
        return []
    return [
        (kind, [v for v in shown if isinstance(v, str)])
        for kind, shown in values.items()
        if isinstance(kind, str) and isinstance(shown, (list, tuple))
    ]


def call_key(name: str, arguments: Any) -> str:
    """Equal for calls with equal arguments (key order aside); arguments not JSON count as
    ``None``, as the loop answers them all alike."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def loads_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
