"""The grammar of guided replies: which calls (and whether an answer) the next reply may be.

Rules of the schema (the run's state is read from the request's items only):

- a tool's arguments are reduced to its *required* parameters: optional ones (``read_file``'s
  ``offset``/``limit``) are dropped in guided mode, for a smaller grammar a tiny model can
  follow; the declarations in the system prompt show the same reduced parameters;
- a parameter the tool's details name (``ToolSpec.details["parameter_choices"]``, a
  ``ChoiceSpec`` each) becomes an ``enum`` of the values of its kind that tool results have
  shown (``FunctionCallOutput.details["choices"]``), plus its ``always`` values, less the
  values a later result showed to be gone (``details["gone"]``: a moved file's old path),
  until a still later result shows them again: results count in order, and within one
  result its ``gone`` applies before its ``choices``. These keys are the file tools'
  (``minipi.files.tools``); a tool without them has no discovered values;
- an identical repeat is not expressible where the grammar can say so: for a tool whose
  required parameters all have choices, the values (one parameter) or combinations (several,
  listed as constants up to 64) used by an earlier call are removed. Earlier calls count
  since the last successful call of a ``mutating`` tool (the names of the tools whose
  ``ToolSpec.mutating`` is set): after a change, reads may give new results; that change
  itself stays made (SmolLM2-135M, having moved a file, moved it again, then back). A free-text
  value cannot be excluded (the grammar has no "not"), so such a repeat is answered by the
  loop's duplicate check, and a tool that has repeated an identical call is dropped from then
  on (until the next change);
- one change a question: once a call of a ``mutating`` tool succeeded after the last user
  message, the answer is the only reply offered until the next one (the loop checks the
  change on disk; SmolLM2-135M, having moved the cat's file as asked, moved the dog's too, or
  listed again until the turns ran out; a second change is asked for by a second question);
- a tool whose enum is empty is dropped; when no tool is left, the answer is allowed;
- a parameter of kind ``question`` (``search_files``' query) takes the question's words
  (``guided_rank.Question.tokens``), offered until a result with content follows the
  question (a search helps find a file, then the reads answer); ``file`` and ``dir`` also
  take the paths the question names, whether a listing showed them or not (the sandbox
  decides);
- a tool with another free-text required argument (an MCP tool's ``text``) is offered only
  with ``free_text=True`` (then any text, the question's words included): a tiny model fills
  such a field with noise and loops on it; an argument closed by its own schema (an enum, a
  const, a boolean, a number) is written by the grammar (``can_constrain``);
- a new question makes every read useful again: the calls made for earlier questions no
  longer count as made (a change made stays made);
- the answer (a non-empty string) is allowed only once a tool result follows the last user
  message (``answer_needs_evidence``), every file the question names was read (or tried)
  while ``read_file`` is offered, and a change the question asks for (its verb is the first
  word of a mutating tool's name: ``move``) was made while that tool is offered; or when no
  tool branch is left;
- ``tool_choice``: ``"none"`` allows only the answer, a tool name only that tool,
  ``"required"`` only tools, ``"auto"`` the rules above.

An answer that cites facts from the tool results needs more than JSON Schema can say:
``minipi.local.guided_grammar`` turns this schema into a GBNF grammar for that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ToolSpec,
)
from minipi.local.guided_rank import Question, words_of

__all__ = [
    "ANSWER_BRANCH",
    "ChoiceSpec",
    "can_constrain",
    "choice_specs",
    "guided_schema",
    "loads_or_none",
    "required_parameters",
    "searches_only",
]

ANSWER_BRANCH: JsonObject = {
    "type": "object",
    "properties": {"answer": {"type": "string", "minLength": 1}},
    "required": ["answer"],
    "additionalProperties": False,
}
"""The final-answer branch of every guided schema that allows an answer."""


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


def guided_schema(
    tools: Sequence[ToolSpec],
    items: Sequence[Item],
    tool_choice: str = "auto",
    *,
    mutating: frozenset[str] = frozenset(),
    answer_needs_evidence: bool = True,
    free_text: bool = False,
) -> JsonObject:
    """The JSON Schema the next reply must match (see the module docstring for the rules).

    ``mutating`` names the tools that change things (``GuidedClient`` passes the names of
    the request's tools whose ``ToolSpec.mutating`` is set)."""
    state = _State.of(items, mutating)
    branches = _tool_branches(tools, state, tool_choice, free_text)
    evidence = (state.evidence and _answered(tools, state, branches)) or not answer_needs_evidence
    if not branches or tool_choice == "none" or (tool_choice == "auto" and evidence):
        branches.append(ANSWER_BRANCH)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _answered(tools: Sequence[ToolSpec], state: _State, branches: list[JsonObject]) -> bool:
    """Whether the results can answer yet: every file the question names was read (or
    tried), and a change it asks for was made, while the tools for them are offered."""
    offered = {b["properties"]["tool"]["const"] for b in branches}
    if state.unread and "read_file" in offered:
        return False
    changing = [t for t in tools if t.mutating and t.name in offered]
    return not (changing and not state.changed and state.asks_change(changing))


def searches_only(schema: JsonObject, tools: Sequence[ToolSpec]) -> bool:
    """Whether every tool ``schema`` still offers takes only the question's words (a search):
    then nothing is left to read, and guided mode lets the answer come."""
    by_name = {t.name: t for t in tools}
    names = [
        b["properties"]["tool"]["const"]
        for b in schema.get("anyOf", (schema,))
        if b != ANSWER_BRANCH and "tool" in b.get("properties", {})
    ]
    return all(_from_question(by_name[n]) for n in names if n in by_name)


def _from_question(tool: ToolSpec) -> bool:
    chosen = choice_specs(tool)
    required = required_parameters(tool.parameters)
    return bool(required) and all(n in chosen and chosen[n].kind == "question" for n in required)


def _tool_branches(
    tools: Sequence[ToolSpec], state: _State, tool_choice: str, free_text: bool
) -> list[JsonObject]:
    """The branches of the tools ``tool_choice`` allows that can still be called usefully;
    none after a change (then the answer)."""
    if tool_choice == "none" or state.changed:
        return []
    allowed = (t for t in tools if tool_choice in ("auto", "required", t.name))
    branches = (_tool_branch(tool, state, free_text) for tool in allowed)
    return [branch for branch in branches if branch is not None]


@dataclass(frozen=True, slots=True)
class _State:
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

    @classmethod
    def of(cls, items: Sequence[Item], mutating: frozenset[str]) -> _State:
        shown: dict[str, dict[str, None]] = {}
        made: set[str] = set()
        repeated: set[str] = set()
        asked: set[str] = set()
        changes: set[str] = set()  # the changes made: never offered again
        names: dict[str, tuple[str, str]] = {}  # call_id -> (tool name, call key)
        evidence = changed = read = False
        question = ""
        for item in items:
            if isinstance(item, FunctionCallOutput):
                evidence = True
                read = read or (not item.is_error and item.details.get("output") != "paths")
                _show(shown, item)
                name, change = names.get(item.call_id, ("", ""))
                if name in mutating and not item.is_error:
                    made.clear()  # the world changed: earlier reads may differ now
                    changes.add(change)
                    made.update(changes)  # but the same change again is not useful
                    repeated.clear()
                    changed = True
            elif isinstance(item, FunctionCall):
                arguments = loads_or_none(item.arguments)
                key = _call_key(item.name, arguments)
                names[item.call_id] = (item.name, key)
                if key in made:
                    repeated.add(item.name)
                made.add(key)
                if isinstance(arguments, dict):
                    asked.update(v for v in arguments.values() if isinstance(v, str))
            elif isinstance(item, Message) and item.role == "user":
                # a new question: its reads are useful again, even those made before
                evidence = changed = read = False
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
        )

    def offered(self, spec: ChoiceSpec, change: bool = False) -> list[str]:
        """The values of ``spec``: its ``always`` ones, those results showed, and those the
        question names (a path for ``file``/``dir``, its words for ``question``). For a
        change (``change``), the files whose names share the most words with the question,
        when one does: Qwen2.5-Coder-0.5B, asked to move 狗狗阿黄's file, moved 兔子豆豆's."""
        named = {
            "file": self.question.named_files,
            "dir": self.question.named_dirs,
            "question": self.question.tokens,
        }.get(spec.kind, ())
        values = list(dict.fromkeys((*spec.always, *self.shown.get(spec.kind, ()), *named)))
        if not change or spec.kind != "file":
            return values
        shared = {v: len(self.question.words & words_of(v.rsplit("/", 1)[-1])) for v in values}
        most = max(shared.values(), default=0)
        return [v for v in values if shared[v] == most] if most else values

    @property
    def unread(self) -> tuple[str, ...]:
        """The files the question names that no call since it has named (as written, or a
        bare file name within a path: ``invoice-4821.json`` read as ``archive/…/invoice-4821.json``
        counts)."""
        return tuple(p for p in self.question.named_files if not self._asked_for(p))

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


def can_constrain(tool: ToolSpec, free_text: bool = False) -> bool:
    """Whether guided replies may call ``tool`` at all: each required argument is chosen
    from the values tool results showed (a ``ChoiceSpec``) or is closed by its own schema
    (an ``enum``, a ``const``, a boolean, a number: the grammar writes it exactly), unless
    ``free_text`` allows free strings too (a tiny model fills them with noise)."""
    if free_text:
        return True
    chosen = choice_specs(tool)
    required = required_parameters(tool.parameters)
    return all(n in chosen or _closed_value(s) for n, s in required.items())


def _closed_value(schema: JsonObject) -> bool:
    return "enum" in schema or "const" in schema or schema.get("type") in _CLOSED_TYPES


_CLOSED_TYPES = ("boolean", "integer", "number")


def _tool_branch(tool: ToolSpec, state: _State, free_text: bool) -> JsonObject | None:
    """The branch for one call of ``tool``, or None when no useful call is left."""
    required = required_parameters(tool.parameters)
    if not _may_call(tool, required, state, free_text):
        return None
    chosen = choice_specs(tool)
    if free_text:  # the question's words are a hint only: any text is allowed
        chosen = {n: spec for n, spec in chosen.items() if spec.kind != "question"}
    guided = {name: chosen[name] for name in required if name in chosen}
    if guided and len(guided) == len(required):
        return _enumerated_branch(tool, guided, state)
    arguments = {n: _argument(s, guided.get(n), state, tool.mutating) for n, s in required.items()}
    if any(argument is None for argument in arguments.values()):
        return None
    return _call_branch(tool.name, _object(arguments))


def _may_call(tool: ToolSpec, required: JsonObject, state: _State, free_text: bool) -> bool:
    """Whether ``tool`` may be offered at all: its arguments can be constrained, it has not
    repeated a call, and a tool without arguments has not been called yet."""
    if not can_constrain(tool, free_text) or tool.name in state.repeated:
        return False
    if not free_text and state.read and _from_question(tool):
        return False  # a search for the question's words helps find a file, not answer
    return bool(required) or _call_key(tool.name, {}) not in state.made


def _argument(
    schema: JsonObject, spec: ChoiceSpec | None, state: _State, change: bool
) -> JsonObject | None:
    """One argument's schema: its own (less the description) when it is not chosen from
    results, else an enum of the values offered (None when there are none)."""
    if spec is None:
        return {k: v for k, v in schema.items() if k != "description"}
    values = state.offered(spec, change)
    return {"type": "string", "enum": values} if values else None


_MAX_COMBINATIONS = 64


def _enumerated_branch(
    tool: ToolSpec, guided: Mapping[str, ChoiceSpec], state: _State
) -> JsonObject | None:
    """Arguments that all come from discovered values: every combination not yet used.

    One parameter: an enum without the used values. Several: the unused combinations as
    constants (the grammar has no "not"), unless there are too many to list."""
    name = tool.name
    offered = {param: state.offered(spec, tool.mutating) for param, spec in guided.items()}
    combos = [dict(zip(offered, values, strict=True)) for values in product(*offered.values())]
    fresh = [c for c in combos if _call_key(name, c) not in state.made]
    if not fresh:
        return None
    return _call_branch(name, _combinations(offered, fresh))


def _combinations(offered: Mapping[str, list[str]], fresh: list[dict[str, str]]) -> JsonObject:
    """The arguments schema allowing the ``fresh`` combinations of the ``offered`` values."""
    if len(offered) == 1:
        ((param, _),) = offered.items()
        return _object({param: {"type": "string", "enum": [c[param] for c in fresh]}})
    if len(fresh) > _MAX_COMBINATIONS:
        return _object({p: {"type": "string", "enum": list(v)} for p, v in offered.items()})
    options = [_object({p: {"const": v} for p, v in c.items()}) for c in fresh]
    return options[0] if len(options) == 1 else {"anyOf": options}


def _call_branch(name: str, arguments: JsonObject) -> JsonObject:
    return _object({"tool": {"const": name}, "arguments": arguments})


def required_parameters(parameters: JsonObject) -> dict[str, JsonObject]:
    """The required properties of a parameters schema, in the order ``required`` lists them."""
    properties = parameters.get("properties")
    if not isinstance(properties, dict):
        return {}
    names = parameters.get("required") or ()
    return {n: properties[n] for n in names if isinstance(properties.get(n), dict)}


def _object(properties: JsonObject) -> JsonObject:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _call_key(name: str, arguments: Any) -> str:
    """Equal for calls with equal arguments (key order aside); arguments not JSON count as
    ``None``, as the loop answers them all alike."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def loads_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
