"""The grammar of guided replies: which calls (and whether an answer) the next reply may be.

Two kinds of tools. A tool that *explores* the project declares parameters whose values
come from what tools have shown (``ToolSpec.details["parameter_choices"]``, a ``ChoiceSpec``
each: the file tools, ``minipi.files.tools``); any other tool (an MCP server's, a library
user's) takes its arguments from the question. Rules of the schema (the run's state is read
from the request's items only, ``guided_state.RunState``):

- an exploring tool's arguments are its *required* parameters (optional ones, ``read_file``'s
  ``offset``/``limit``, are dropped: a smaller grammar a tiny model can follow; the system
  prompt declares the same); each parameter with choices is an ``enum`` of the values of its
  kind that tool results have shown (``FunctionCallOutput.details["choices"]``), plus its
  ``always`` values, less the values a later result showed to be gone (``details["gone"]``:
  a moved file's old path), until a still later result shows them again: results count in
  order, and within one result its ``gone`` applies before its ``choices``;
- any other tool's arguments are its declared parameters, required and optional (only the
  required ones without ``optional``), strings bounded, or runs of the question's words with
  ``spans`` (``guided_arguments.offered_arguments``), and then top-level numbers the
  question's (``with_numbers``: a tool whose required number the question does not hold is
  not offered);
- an identical repeat is not expressible where the grammar can say so: for a tool whose
  required parameters all have choices, the values (one parameter) or combinations (several,
  listed as constants up to 64) used by an earlier call are removed. Earlier calls count
  since the last successful call of a ``mutating`` tool (the names of the tools whose
  ``ToolSpec.mutating`` is set): after a change, reads may give new results; that change
  itself stays made (redoing it, or undoing it, is never what the question asked). A free-text
  value cannot be excluded (the grammar has no "not"), so such a repeat is answered by the
  loop's duplicate check, and a tool that has repeated an identical call is dropped from then
  on (until the next change);
- one change a question: once a call of a ``mutating`` tool succeeded after the last user
  message, the answer is the only reply offered until the next one (the loop checks the
  change on disk; a model left free after its change makes others nobody asked for, or
  explores until its turns run out; a second change is asked for by a second question);
- a tool whose enum is empty is dropped; when no tool is left, the answer is allowed;
- a parameter of kind ``question`` (``search_files``' query) takes the question's words
  (``guided_rank.Question.tokens``), offered until a result with content follows the
  question, or a path the question names was listed or read (a search helps find where to
  look, then the reads answer), and after that too when the question asks how many (a
  search counts the lines that match); the paths the question names are not offered as
  text to search for (the opening found them); with ``free_text=True`` any
  text; ``file`` and ``dir`` also take the paths the question names, whether a listing
  showed them or not (the sandbox decides);
- once a file within each file and folder the question names was read
  (``minipi.evidence.scope.read_scope``), a ``file`` or ``dir`` value is offered (to a tool
  that changes nothing) only within them and the paths their text leads to, and a path so
  led to is offered whether a listing showed it or not (the same reading as the verdict's
  ``outside_question``); a name whose read failed leaves every
  value offered (the model may look for it);
- a new question makes every read useful again: the calls made for earlier questions no
  longer count as made (a change made stays made);
- a tool that does not explore is offered only when the question fits it (shares a content
  word with its name, description or parameters, ``guided_fit``; or the words cannot tell),
  before and after results (a tool that is offered is a tool a small model may call, and
  the question gives it no reason to); before any result follows the
  question, when no tool fits, the reply is the answer (the question is answered without a
  call), and when each offered tool shares only one word, the answer is offered beside the
  calls (the model decides);
- otherwise the answer (a non-empty string) is allowed only once a tool result follows the
  last user message (``answer_needs_evidence``), every file the question names was read (or
  tried) while ``read_file`` is offered, a search counted for a question that asks how many
  while one is offered, and a change the question asks for (its verb is the first word of a
  mutating tool's name: ``move``) was made while that tool is offered; or when no tool
  branch is left;
- with ``parallel``, the calls are a list of 1 to ``MAX_CALLS`` (each one of the call
  branches): after each call the model writes one more or the end (a list is the form, not
  an option beside one call: offered the choice, a model makes one call where the question
  needs several);
- ``tool_choice``: ``"none"`` allows only the answer, a tool name only that tool,
  ``"required"`` only tools, ``"auto"`` the rules above.

An answer that cites facts from the tool results needs more than JSON Schema can say:
``minipi.guided.grammar`` turns this schema into a GBNF grammar for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

from minipi.ai.types import Item, JsonObject, ToolSpec
from minipi.guided.arguments import Offer, offered_value
from minipi.guided.fit import fit, question_words, tool_words
from minipi.guided.state import (
    ChoiceSpec,
    RunState,
    call_key,
    choice_specs,
    loads_or_none,
)

__all__ = [
    "ANSWER_BRANCH",
    "MAX_CALLS",
    "ChoiceSpec",
    "ReplyOffer",
    "can_constrain",
    "choice_specs",
    "explores",
    "guided_offer",
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

MAX_CALLS = 8
"""The most calls one guided reply may list (with ``parallel``)."""


@dataclass(frozen=True, slots=True)
class ReplyOffer:
    """What the next guided reply may be, as the rules decided it: a call of one of
    ``tools`` (``calls``: one branch a tool, its name and its arguments' schema), one a reply
    or a list of them (``listed``), and/or the answer. ``schema()`` writes it for the server;
    nothing reads a schema back to learn what was offered."""

    calls: tuple[JsonObject, ...] = ()
    tools: frozenset[str] = frozenset()
    answer: bool = True
    listed: bool = False

    def schema(self) -> JsonObject:
        """The JSON Schema a reply must match (the answer branch is ``ANSWER_BRANCH``)."""
        branches = _listed(list(self.calls)) if self.listed else list(self.calls)
        if self.answer or not branches:
            branches.append(ANSWER_BRANCH)
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    def without_answer(self) -> ReplyOffer:
        """This offer less the answer, unless the answer is all it allows."""
        return replace(self, answer=False) if self.calls else self


def guided_offer(
    tools: Sequence[ToolSpec],
    items: Sequence[Item],
    tool_choice: str = "auto",
    *,
    mutating: frozenset[str] = frozenset(),
    answer_needs_evidence: bool = True,
    free_text: bool = False,
    parallel: bool = False,
    optional: bool = True,
    spans: bool = False,
) -> ReplyOffer:
    """What the next reply may be (see the module docstring for the rules).

    ``mutating`` names the tools that change things (``GuidedClient`` passes the names of
    the request's tools whose ``ToolSpec.mutating`` is set); without ``optional`` a tool that
    does not explore is offered its required parameters only."""
    state = RunState.of(items, mutating)
    fitting = _Fitting.of(tools, state, tool_choice)
    offer = Offer.of(state.question.text, free_text, optional, spans)
    calls = _tool_branches(fitting.tools, state, tool_choice, offer)
    names = frozenset(calls)
    answered = state.evidence and _answered(tools, state, names)
    may_answer = answered or not answer_needs_evidence or fitting.declinable
    answer = _answer_offered(names, tool_choice, may_answer)
    return ReplyOffer(tuple(calls.values()), names, answer, parallel)


def guided_schema(
    tools: Sequence[ToolSpec],
    items: Sequence[Item],
    tool_choice: str = "auto",
    **options: Any,
) -> JsonObject:
    """The JSON Schema of ``guided_offer(tools, items, tool_choice, **options)``."""
    return guided_offer(tools, items, tool_choice, **options).schema()


def _listed(calls: list[JsonObject]) -> list[JsonObject]:
    """The calls as a list (``parallel``): after each, one more or the end."""
    if not calls:
        return []
    listed = calls[0] if len(calls) == 1 else {"anyOf": calls}
    return [{"type": "array", "items": listed, "minItems": 1, "maxItems": MAX_CALLS}]


def _answer_offered(calls: frozenset[str], tool_choice: str, may_answer: bool) -> bool:
    """Whether the reply may be the answer: no call is left, ``tool_choice`` allows only the
    answer, or it leaves the choice to the rules and they allow the answer."""
    return not calls or tool_choice == "none" or (tool_choice == "auto" and may_answer)


@dataclass(frozen=True, slots=True)
class _Fitting:
    """The tools the next reply may call, as far as the question tells, and whether it may
    answer without a call (no offered tool fits the question by more than one word)."""

    tools: Sequence[ToolSpec]
    declinable: bool = False

    @classmethod
    def of(cls, tools: Sequence[ToolSpec], state: RunState, tool_choice: str) -> _Fitting:
        others = [t for t in tools if not explores(t)]
        if tool_choice != "auto" or not others:
            return cls(tools)  # the file tools fit every question: no words to read
        scores = _fit_scores(tools, others, state.question.text)
        kept = [t for t in tools if scores[t.name] != 0]
        if state.evidence:  # a tool the question does not fit stays out after a result too
            return cls(kept)
        return cls(kept, declinable=not any(_fits_well(scores[t.name]) for t in kept))


def _fit_scores(
    tools: Sequence[ToolSpec], others: Sequence[ToolSpec], question: str
) -> dict[str, int | None]:
    """By tool name, how many words the question shares with each tool of ``others`` (those
    that do not explore); None for the rest: they fit every question."""
    words = question_words(question)
    scores: dict[str, int | None] = {t.name: None for t in tools}
    scores.update((t.name, fit(words, tool_words(t))) for t in others)
    return scores


def _fits_well(score: int | None) -> bool:
    """A tool that fits every question, or shares two words or more with it."""
    return score is None or score >= 2


def explores(tool: ToolSpec) -> bool:
    """Whether ``tool`` explores the project: some of its parameters take values that tool
    results showed (``choice_specs``)."""
    return bool(choice_specs(tool))


def _answered(tools: Sequence[ToolSpec], state: RunState, offered: frozenset[str]) -> bool:
    """Whether the results can answer yet: every file the question names was read (or
    tried), a question that asks how many had a search count (a model counting lines in a
    file's text miscounts; a search counts them exactly), and a change it asks for was made,
    while the tools for them are offered."""
    if state.unread and "read_file" in offered:
        return False
    return not (_uncounted(tools, state, offered) or _unchanged(tools, state, offered))


def _uncounted(tools: Sequence[ToolSpec], state: RunState, offered: frozenset[str]) -> bool:
    """The question asks how many, a search is offered, and none has counted yet."""
    counters = [t for t in tools if _from_question(t) and t.name in offered]
    return state.question.counts and bool(counters) and not state.searched


def _unchanged(tools: Sequence[ToolSpec], state: RunState, offered: frozenset[str]) -> bool:
    """The question asks for a change an offered tool makes, and none was made yet."""
    changing = [t for t in tools if t.mutating and t.name in offered]
    return bool(changing) and not state.changed and state.asks_change(changing)


def searches_only(offer: ReplyOffer, tools: Sequence[ToolSpec]) -> bool:
    """Whether every tool ``offer`` still offers takes only the question's words (a search):
    then nothing is left to read, and guided mode lets the answer come."""
    by_name = {t.name: t for t in tools}
    return all(_from_question(by_name[n]) for n in offer.tools if n in by_name)


def _from_question(tool: ToolSpec) -> bool:
    chosen = choice_specs(tool)
    required = required_parameters(tool.parameters)
    return bool(required) and all(n in chosen and chosen[n].kind == "question" for n in required)


def _tool_branches(
    tools: Sequence[ToolSpec], state: RunState, tool_choice: str, offer: Offer
) -> dict[str, JsonObject]:
    """By tool name, the branches of the tools ``tool_choice`` allows that can still be
    called usefully; none after a change (then the answer)."""
    if tool_choice == "none" or state.changed:
        return {}
    allowed = (t for t in tools if tool_choice in ("auto", "required", t.name))
    branches = ((tool.name, _tool_branch(tool, state, offer)) for tool in allowed)
    return {name: branch for name, branch in branches if branch is not None}


def can_constrain(tool: ToolSpec, free_text: bool = False) -> bool:
    """Whether guided replies may call ``tool`` at all: a tool that does not explore always
    (its arguments as declared, strings bounded); an exploring one when each required
    argument is chosen from the values tool results showed (a ``ChoiceSpec``) or is closed
    by its own schema (an ``enum``, a ``const``, a boolean, a number), unless ``free_text``
    allows free strings too."""
    chosen = choice_specs(tool)
    if free_text or not chosen:
        return True
    required = required_parameters(tool.parameters)
    return all(n in chosen or _closed_value(s) for n, s in required.items())


def _closed_value(schema: JsonObject) -> bool:
    return "enum" in schema or "const" in schema or schema.get("type") in _CLOSED_TYPES


_CLOSED_TYPES = ("boolean", "integer", "number")


def _tool_branch(tool: ToolSpec, state: RunState, offer: Offer) -> JsonObject | None:
    """The branch for one call of ``tool``, or None when no useful call is left."""
    required = required_parameters(tool.parameters)
    if not _may_call(tool, required, state, offer.free_text):
        return None
    chosen = choice_specs(tool)
    if not chosen:  # None: the question holds no value for a required number
        arguments = offer.arguments(tool.parameters)
        return None if arguments is None else _call_branch(tool.name, arguments)
    guided = _guided(chosen, required, offer.free_text)
    if guided and len(guided) == len(required):
        return _enumerated_branch(tool, guided, state)
    arguments = {n: _argument(s, guided.get(n), state, tool.mutating) for n, s in required.items()}
    if any(argument is None for argument in arguments.values()):
        return None
    return _call_branch(tool.name, _object(arguments))


def _guided(
    chosen: Mapping[str, ChoiceSpec], required: JsonObject, free_text: bool
) -> dict[str, ChoiceSpec]:
    """The required parameters whose values come from results."""
    if free_text:  # the question's words are a hint only: any text is allowed
        chosen = {n: spec for n, spec in chosen.items() if spec.kind != "question"}
    return {name: chosen[name] for name in required if name in chosen}


def _may_call(tool: ToolSpec, required: JsonObject, state: RunState, free_text: bool) -> bool:
    """Whether ``tool`` may be offered at all: its arguments can be constrained, it has not
    repeated a call, and a tool without arguments has not been called yet."""
    if not can_constrain(tool, free_text) or tool.name in state.repeated:
        return False
    found = state.read or state.located
    if not free_text and found and _from_question(tool) and not state.question.counts:
        # a search for the question's words helps find where to look, not answer; nor
        # once what the question names was looked at (it would find the name again); but
        # it counts
        return False
    return bool(required) or call_key(tool.name, {}) not in state.made


def _argument(
    schema: JsonObject, spec: ChoiceSpec | None, state: RunState, change: bool
) -> JsonObject | None:
    """One argument's schema: as a tool that does not explore would have it when it is not
    chosen from results, else an enum of the values offered (None when there are none)."""
    if spec is None:
        return offered_value(schema)
    values = state.offered(spec, change)
    return {"type": "string", "enum": values} if values else None


_MAX_COMBINATIONS = 64


def _enumerated_branch(
    tool: ToolSpec, guided: Mapping[str, ChoiceSpec], state: RunState
) -> JsonObject | None:
    """Arguments that all come from discovered values: every combination not yet used.

    One parameter: an enum without the used values. Several: the unused combinations as
    constants (the grammar has no "not"), unless there are too many to list."""
    name = tool.name
    offered = {param: state.offered(spec, tool.mutating) for param, spec in guided.items()}
    combos = [dict(zip(offered, values, strict=True)) for values in product(*offered.values())]
    fresh = [c for c in combos if call_key(name, c) not in state.made]
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
