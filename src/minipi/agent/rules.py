"""The rules of a run: small objects with one job each, consulted by the loop at fixed points.

- ``screen(call, arguments)``: before a call runs; a ``ToolResult`` answers the call instead
  of running it (a repeat, a call over budget);
- ``observe(call, result, ran)``: after each result (``ran``: its handler ran); an ``End``
  ends the run once every call of the reply is answered;
- ``accept(answer, history)``: before an answer is accepted; an ``End`` ends the run
  instead, a ``Nudge`` keeps the answer in the history, tells the model what is wrong with
  it and asks again.

The rules of a run are built together by ``Rules.for_run``. Replies that cannot be used are
the ``ReplyRetry`` rule's; the context window's is ``minipi.agent.context.ContextFit``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from minipi.agent.config import AgentConfig, EvidenceMode
from minipi.agent.context import ContextFit
from minipi.agent.ends import End
from minipi.agent.tools import AgentTool, ToolResult
from minipi.ai.types import FunctionCall, Item, JsonObject, Message, ToolSpec

if TYPE_CHECKING:
    from minipi.agent.evidence import Evidence

__all__ = [
    "CallBudget",
    "ChangeLedger",
    "Deadline",
    "ErrorStreak",
    "EvidencePolicy",
    "Nudge",
    "RepeatGuard",
    "ReplyRetry",
    "RequiredTools",
    "Retry",
    "Rule",
    "Rules",
    "call_key",
]


def call_key(name: str, arguments: JsonObject) -> str:
    """What makes two calls identical: the tool and its arguments (key order aside)."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Nudge:
    """The decision to tell the model ``message`` (as a user message) and ask once more."""

    message: str
    notice: str


class Rule:
    """A rule with no opinion; subclasses override the hooks they need."""

    def screen(self, call: FunctionCall, arguments: JsonObject) -> ToolResult | None:
        return None

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        return None

    def accept(self, answer: str, history: Sequence[Item]) -> End | Nudge | None:
        return None


@dataclass(frozen=True, slots=True)
class Checked:
    """A call whose tool exists and whose arguments passed the schema (``key`` says which
    calls are identical), or one answered before that (``tool`` None, ``key`` "")."""

    call: FunctionCall
    tool: AgentTool | None = None
    key: str = ""


@dataclass
class RepeatGuard(Rule):
    """An identical call that already succeeded is answered with a pointer to its result;
    the ``max_repeats``-th such repeat ends the run ``stuck_loop``. A change (a mutating
    tool's success) or a shortened result makes calls runnable again."""

    max_repeats: int
    successes: dict[str, str] = field(default_factory=dict)  # call key -> call_id
    repeats: Counter[str] = field(default_factory=Counter)

    def screen(self, call: FunctionCall, arguments: JsonObject) -> ToolResult | None:
        earlier = self.successes.get(call_key(call.name, arguments))
        if earlier is None:
            return None
        return ToolResult.error(
            "duplicate_call",
            f"not run again: {call.name} was already called with these arguments "
            f"(call_id {earlier}); its result is above, use it",
        )

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        if result.code == "duplicate_call" and call.key:
            self.repeats[call.key] += 1
            if self.repeats[call.key] >= self.max_repeats:
                fn, times = call.call, self.repeats[call.key] + 1
                what = f"the model repeated {fn.name} {fn.arguments} {times} times"
                return End("stuck_loop", what)
        if result.changed:
            self.successes.clear()  # the world changed: earlier reads may be stale now
        if ran and not result.is_error and call.key:
            self.successes[call.key] = call.call.call_id
        return None

    def forget(self, call_ids: Sequence[str]) -> None:
        """Let these calls be made again (their results were shortened away)."""
        gone = set(call_ids)
        for key in [k for k, v in self.successes.items() if v in gone]:
            del self.successes[key]


@dataclass
class ErrorStreak(Rule):
    """The same tool error ``limit`` times in a row ends the run ``repeated_tool_error``."""

    limit: int
    last: str = ""
    count: int = 0

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        if not result.is_error:
            self.last, self.count = "", 0
            return None
        if result.code == "duplicate_call":
            return None  # the repeat guard's
        signature = f"{call.call.name}:{result.code}:{result.content}"
        self.count = self.count + 1 if signature == self.last else 1
        self.last = signature
        if self.count >= self.limit:
            return End(
                "repeated_tool_error", f"the same tool error {self.count} times: {result.content}"
            )
        return None


@dataclass
class CallBudget(Rule):
    """At most ``limit`` calls run; later ones are answered, and the run then ends
    ``budget_exhausted``. Screen it last: a call it lets through runs."""

    limit: int | None
    used: int = 0

    def screen(self, call: FunctionCall, arguments: JsonObject) -> ToolResult | None:
        if self.limit is None:
            return None
        if self.used >= self.limit:
            return ToolResult.error(
                "budget_exhausted", f"not run: the run's tool-call budget ({self.limit}) is used up"
            )
        self.used += 1
        return None

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        if result.code == "budget_exhausted" and not ran:
            return End("max_tool_calls", f"the tool-call budget ({self.limit}) is used up")
        return None


_NOTHING_TO_CHANGE = frozenset({"read_only", "already_there"})
"""A change refused for no fault of the run: withheld from a read-only run (the question
could not ask for one), or one that has nothing to do (a file moved onto its own place)."""


@dataclass
class ChangeLedger(Rule):
    """Success is what happened, never what the model says happened (G8): a change (a call of
    a ``mutating`` tool) that was denied, or that failed in its handler, keeps the run from
    succeeding, until a later change succeeds (the model adapted). Calls answered before their
    handler ran (malformed, repeated, over budget) are not changes."""

    denied: dict[str, str] = field(default_factory=dict)  # call key -> what was refused
    failed: dict[str, str] = field(default_factory=dict)

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        tool, what = call.tool, f"{call.call.name} {call.call.arguments}"
        if result.code in _NOTHING_TO_CHANGE:
            return None
        if result.code == "user_denied":
            self.denied[call.key or call.call.call_id] = what
        elif not result.is_error:
            self.denied.pop(call.key, None)
        if tool is None or not tool.mutating or not ran:
            return None
        if not result.is_error:
            self.failed.clear()
        elif result.code != "user_denied":
            self.failed[call.key or call.call.call_id] = f"{what} ({result.code})"
        return None

    def accept(self, answer: str, history: Sequence[Item]) -> End | Nudge | None:
        if self.denied:
            refused = "; ".join(self.denied.values())
            return End(
                "user_denied",
                f"a change the model asked for was denied, nothing was changed: {refused}",
            )
        if self.failed:
            failed = "; ".join(self.failed.values())
            return End("change_failed", f"a change the model asked for did not happen: {failed}")
        return None


@dataclass
class EvidencePolicy(Rule):
    """Every answer's figures checked against this run's tool results (``EVIDENCE.md``).

    ``warn``: the check is kept (``RunResult.evidence``) and shown; ``require``: an answer
    with an unsupported figure is refused once, naming the figures, and the model is asked to
    answer from the results (it may read more); a second such answer ends the run
    ``unsupported_figures``. ``off``: no check.

    The answer is checked when it ends (``check_evidence``)."""

    mode: EvidenceMode
    last: Evidence | None = None
    nudged: str | None = None  # the message that refused an answer (not part of the question)

    def begin_reply(self) -> None:
        """A new reply is asked for (nothing to do: the answer is checked when it ends)."""

    def streamed(self, piece: str, history: Sequence[Item]) -> None:
        """A piece of the reply's text, as it streams (not looked at)."""

    def accept(self, answer: str, history: Sequence[Item]) -> End | Nudge | None:
        if self.mode == "off":
            return None
        from minipi.agent.evidence import check_evidence  # only a run that answers pays

        nudge = Message("user", self.nudged) if self.nudged else None
        self.last = check_evidence(answer, [i for i in history if i != nudge])
        missing = self.last.unsupported_figures()
        if self.mode != "require" or not missing:
            return None
        shown = ", ".join(missing)
        if self.nudged is None:
            self.nudged = (
                f"These figures in your answer are not in any tool result: {shown}. Answer "
                "again with only figures that the tool results contain (call the tools to "
                "read more if you need to)."
            )
            return Nudge(self.nudged, f"the answer has figures no tool result holds: {shown}")
        return End(
            "unsupported_figures", f"the answer still has figures no tool result holds: {shown}"
        )


@dataclass
class RequiredTools(Rule):
    """These tools must succeed, in this order, before the model may choose freely."""

    names: tuple[str, ...]
    done: int = 0

    def choice(self) -> str:
        """The next request's ``tool_choice``: the next required tool, else ``auto``."""
        return self.names[self.done] if self.done < len(self.names) else "auto"

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        wanted = self.names[self.done] if self.done < len(self.names) else None
        if call.call.name == wanted and not result.is_error:
            self.done += 1
        return None


@dataclass(frozen=True, slots=True)
class Retry:
    """The decision to ask the model once more: nothing of its reply is kept."""

    reason: str


@dataclass
class ReplyRetry:
    """A reply that cannot be used (cut off, unfinished, empty, a broken stream) is asked for
    once more; a second one in a row ends the run with its code. After a cut-off the next
    request asks for twice the output tokens (when a limit was set)."""

    in_a_row: int = 0
    raise_limit: bool = False

    def again(self, code: str, what: str) -> Retry | End:
        self.in_a_row += 1
        self.raise_limit = self.raise_limit or code == "truncated"
        if self.in_a_row < 2:
            return Retry(f"{what}; nothing in it was used, asking once more")
        return End(code, f"{what}, twice in a row; nothing in it was executed")

    def usable(self) -> None:
        self.in_a_row = 0

    def options(self, options: Mapping[str, Any]) -> Mapping[str, Any]:
        """The request options, with the output-token limit doubled after a cut-off."""
        if not self.raise_limit:
            return options
        raised = dict(options)
        for key in ("max_output_tokens", "max_tokens", "max_completion_tokens"):
            value = raised.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                raised[key] = value * 2
        return raised


@dataclass
class Deadline:
    """``max_seconds`` of wall-clock time from the start of the run (None: no limit)."""

    seconds: float | None
    started: float = field(default_factory=time.monotonic)

    def passed(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.started >= self.seconds

    @property
    def at(self) -> float | None:
        """The ``time.monotonic()`` the budget ends at (None: no limit)."""
        return None if self.seconds is None else self.started + self.seconds

    def end(self) -> End:
        return End("max_seconds", f"no final answer within {self.seconds} s")


@dataclass
class Rules:
    """Every rule of one run, in the order the loop consults them."""

    repeats: RepeatGuard
    errors: ErrorStreak
    budget: CallBudget
    changes: ChangeLedger
    required: RequiredTools
    context: ContextFit
    clock: Deadline
    evidence: EvidencePolicy
    retry: ReplyRetry = field(default_factory=ReplyRetry)
    extra: tuple[Rule, ...] = ()
    """The caller's own rules (``AgentConfig.rules``), consulted after the built-in ones."""

    @classmethod
    def for_run(cls, config: AgentConfig, tools: Sequence[ToolSpec]) -> Rules:
        context = ContextFit.for_run(
            config.context_tokens,
            config.reserve_tokens,
            config.instructions,
            tools,
            config.max_tool_output_chars,
        )
        return cls(
            RepeatGuard(config.max_repeats),
            ErrorStreak(config.max_repeated_errors),
            CallBudget(config.max_tool_calls),
            ChangeLedger(),
            RequiredTools(config.required_tool_names),
            context,
            Deadline(config.max_seconds),
            EvidencePolicy(config.evidence),
            extra=tuple(make() for make in config.rules),
        )

    @property
    def _call_rules(self) -> tuple[Rule, ...]:
        rules = (self.repeats, self.errors, self.budget, self.changes, self.required)
        return (*rules, self.evidence, *self.extra)

    def screen(self, call: FunctionCall, arguments: JsonObject) -> ToolResult | None:
        """The first rule's answer to ``call`` (the budget is asked last), or None: run it."""
        for rule in (self.repeats, self.budget):
            answer = rule.screen(call, arguments)
            if answer is not None:
                return answer
        return None

    def observe(self, call: Checked, result: ToolResult, ran: bool) -> End | None:
        """Every rule sees every result; the first ``End`` wins."""
        ends = [rule.observe(call, result, ran) for rule in self._call_rules]
        return next((end for end in ends if end is not None), None)

    def accept(self, answer: str, history: Sequence[Item]) -> End | Nudge | None:
        """What the answer rules say (changes first, then any extra rule), or None: accept."""
        for rule in (self.changes, self.evidence, *self.extra):
            verdict = rule.accept(answer, history)
            if verdict is not None:
                return verdict
        return None
