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
from dataclasses import dataclass
from typing import Any

from minipi.agent.scope import is_file, read_scope, within
from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message, ToolSpec
from minipi.local.guided_rank import Question, words_of

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
        shown: dict[str, dict[str, None]] = {}
        made: set[str] = set()
        repeated: set[str] = set()
        asked: set[str] = set()
        changes: set[str] = set()  # the changes made: never offered again
        names: dict[str, tuple[str, str]] = {}  # call_id -> (tool name, call key)
        evidence = changed = read = searched = False
        question = ""
        for item in items:
            if isinstance(item, FunctionCallOutput):
                evidence = True
                read = read or (not item.is_error and item.details.get("output") != "paths")
                _show(shown, item)
                name, change = names.get(item.call_id, ("", ""))
                searched = searched or (name in searching and not item.is_error)
                if name in mutating and not item.is_error:
                    made.clear()  # the world changed: earlier reads may differ now
                    changes.add(change)
                    made.update(changes)  # but the same change again is not useful
                    repeated.clear()
                    changed = True
            elif isinstance(item, FunctionCall):
                arguments = loads_or_none(item.arguments)
                key = call_key(item.name, arguments)
                names[item.call_id] = (item.name, key)
                if key in made:
                    repeated.add(item.name)
                made.add(key)
                if isinstance(arguments, dict):
                    asked.update(v for v in arguments.values() if isinstance(v, str))
            elif isinstance(item, Message) and item.role == "user":
                # a new question: its reads are useful again, even those made before
                evidence = changed = read = searched = False
                made = set(changes)
                repeated.clear()
                asked.clear()
                question = item.text
        shown_values = {k: tuple(v) for k, v in shown.items()}
        return cls(
            shown_values,
            frozenset(made),
            frozenset(repeated),
            evidence,
            changed,
            Question.of(question),
            frozenset(asked),
            read,
            searched,
            read_scope(items),
        )

    def offered(self, spec: ChoiceSpec, change: bool = False) -> list[str]:
        """The values of ``spec``: its ``always`` ones, those results showed, and those the
        question names (a path for ``file``/``dir``, its words for ``question``). For a
        change (``change``), the files whose names share the most words with the question,
        when one does: Qwen2.5-Coder-0.5B, asked to move 狗狗阿黄's file, moved 兔子豆豆's."""
        paths = set(self.question.paths)
        named = {
            "file": self.question.named_files,
            "dir": self.question.named_dirs,
            "question": tuple(t for t in self.question.tokens if t not in paths),
        }.get(spec.kind, ())
        values = list(dict.fromkeys((*spec.always, *self.shown.get(spec.kind, ()), *named)))
        if not change and self.focus is not None and spec.kind in ("file", "dir"):
            return self._focused(values, spec.kind)
        if not change or spec.kind != "file":
            return values
        shared = {v: len(self.question.words & words_of(v.rsplit("/", 1)[-1])) for v in values}
        most = max(shared.values(), default=0)
        return [v for v in values if shared[v] == most] if most else values

    def _focused(self, values: list[str], kind: str) -> list[str]:
        """Once each file and folder the question names was read (``focus``), the values
        within them and the paths their text leads to, less the names already read: not
        the example config beside the real one, a draft beside the report, the decoy of a
        chain of clues (Qwen2.5-Coder-0.5B read each after the file the question named,
        and answered from it), nor the folders of a tree whose file was found."""
        focus = self.focus or frozenset()
        led = sorted(p for p in focus if (p.endswith("/") or not is_file(p)) == (kind == "dir"))
        # sorted: the grammar is the same each run; bounded: a file that names a thousand
        # paths does not make a thousand-value enum
        found = dict.fromkeys((*values, *(p.rstrip("/") for p in led[:MAX_LED])))
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
