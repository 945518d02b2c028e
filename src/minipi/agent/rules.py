"""The rules of a run: small objects with one job each, all consulted alike (``Rules``).

Every rule has the hooks of ``minipi.agent.types.Rule`` (before a request, the request, the
response, screen a call, observe an outcome, accept an answer) and reads the run through a
``RunView``. The built-in rules come first, in this order, then the caller's
(``AgentConfig.rules``): the turn limit, the deadline, the context fit
(``minipi.agent.context.ContextFit``), the retry of an unusable reply
(``minipi.agent.decide.ReplyRetry``), the repeat guard, the error streak, the call budget,
the change ledger, the required tools, the evidence policy. For each hook the first ``End``
(or refusal, or verdict) in that order wins; screening is pure, so no screen depends on
another having run. A rule knows its own refusals by identity (``CallOutcome.refused_by``),
and a person's "no" at an approval prompt by ``ToolResult.denied``, never by a code string
that any tool could return.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from minipi.agent.config import AgentConfig
from minipi.agent.context import ContextFit
from minipi.agent.decide import Reply, ReplyRetry, decide
from minipi.agent.policy import EvidencePolicy
from minipi.agent.same import SameResults
from minipi.agent.types import Checked, Decision, End, Note, Nudge, Refusal, Rule, RunView
from minipi.ai.types import (
    FunctionCallOutput,
    Item,
    JsonObject,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    result_follows_question,
)
from minipi.reading import Question

if TYPE_CHECKING:
    from minipi.agent.tools import ToolResult
    from minipi.agent.types import CallOutcome
    from minipi.evidence import Evidence

__all__ = [
    "CallBudget",
    "ChangeLedger",
    "Deadline",
    "ErrorStreak",
    "EvidencePolicy",
    "RepeatGuard",
    "RequiredTools",
    "Rule",
    "Rules",
    "RunView",
    "TurnLimit",
    "call_key",
]


def call_key(name: str, arguments: JsonObject) -> str:
    """What makes two calls identical: the tool and its arguments (key order aside)."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


@dataclass
class TurnLimit(Rule):
    """At most ``max_turns`` model requests; then the run ends ``max_turns``. With
    ``answer_last``, the last one asks for the answer (``tool_choice`` ``none``, where it
    was ``auto``) once a tool result follows the question: a call made then could never be
    read back, and the evidence check still judges what the answer says (as smolagents asks
    for a final answer at its step limit). A model that keeps exploring would otherwise end
    with nothing to show for what it read."""

    max_turns: int
    answer_last: bool = False

    def before_request(self, view: RunView) -> End | None:
        if view.turns >= self.max_turns:
            return End.saying("max_turns", turns=self.max_turns)
        return None

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        last = self.answer_last and view.turns >= self.max_turns
        if not last or request.tool_choice != "auto" or not request.tools:
            return request
        return (
            replace(request, tool_choice="none")
            if result_follows_question(view.history)
            else request
        )


@dataclass
class Deadline(Rule):
    """``max_seconds`` of wall-clock time from the start of the run (None: no limit)."""

    seconds: float | None
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, config: AgentConfig) -> Deadline:
        """``config.max_seconds`` from ``config.started``, else from now."""
        if config.started is None:
            return cls(config.max_seconds)
        return cls(config.max_seconds, config.started)

    def passed(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.started >= self.seconds

    @property
    def at(self) -> float | None:
        """The ``time.monotonic()`` the budget ends at (None: no limit)."""
        return None if self.seconds is None else self.started + self.seconds

    def end(self) -> End:
        return End.saying("max_seconds", seconds=str(self.seconds))

    def before_request(self, view: RunView) -> End | None:
        return self.end() if self.passed() else None

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        return replace(request, deadline=self.at)


@dataclass
class RepeatGuard(Rule):
    """An identical call that already succeeded is answered with a pointer to its result;
    the ``max_repeats``-th such repeat ends the run ``stuck_loop``. A change (a mutating
    tool's success) or a shortened result makes calls runnable again."""

    max_repeats: int
    successes: dict[str, str] = field(default_factory=dict)  # call key -> call_id
    repeats: Counter[str] = field(default_factory=Counter)

    def screen(self, call: Checked, view: RunView) -> Refusal | None:
        earlier = self.successes.get(call.key) if call.key else None
        if earlier is None or earlier in view.shortened:  # a shortened result may be asked for
            return None
        return self.refuse(
            "duplicate_call",
            f"not run again: {call.call.name} was already called with these arguments "
            f"(call_id {earlier}); its result is above, use it",
        )

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        call, result = outcome.call, outcome.result
        if outcome.refused_by is self:
            self.repeats[call.key] += 1
            if self.repeats[call.key] >= self.max_repeats:
                fn, times = call.call, self.repeats[call.key] + 1
                return End.saying("stuck_loop", name=fn.name, arguments=fn.arguments, times=times)
        if result.changed:
            self.successes.clear()  # the world changed: earlier reads may be stale now
        if outcome.ran and not result.is_error and call.key:
            self.successes[call.key] = call.call.call_id
        return None


@dataclass
class ErrorStreak(Rule):
    """The same tool error ``limit`` times in a row ends the run ``repeated_tool_error``
    (the repeat guard's refusals are its own to count)."""

    limit: int
    last: str = ""
    count: int = 0

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        result = outcome.result
        if not result.is_error:
            self.last, self.count = "", 0
            return None
        if isinstance(outcome.refused_by, RepeatGuard):
            return None
        signature = f"{outcome.call.call.name}:{result.code}:{result.content}"
        self.count = self.count + 1 if signature == self.last else 1
        self.last = signature
        if self.count >= self.limit:
            return End.saying("repeated_tool_error", count=self.count, content=result.content)
        return None


@dataclass
class CallBudget(Rule):
    """At most ``limit`` calls run (counted as they run); later ones are answered, and the
    run then ends ``max_tool_calls``."""

    limit: int | None
    ran: int = 0

    def screen(self, call: Checked, view: RunView) -> Refusal | None:
        if self.limit is None or self.ran + view.admitted < self.limit:
            return None
        return self.refuse(
            "budget_exhausted", f"not run: the run's tool-call budget ({self.limit}) is used up"
        )

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        if outcome.ran:
            self.ran += 1
        if outcome.refused_by is self:
            return End.saying("max_tool_calls", limit=str(self.limit))
        return None


_NOTHING_TO_CHANGE = frozenset({"read_only", "already_there"})
"""A change refused for no fault of the run: withheld from a read-only run (the question
could not ask for one), or one that has nothing to do (a file moved onto its own place)."""


@dataclass
class ChangeLedger(Rule):
    """Success is what happened, never what the model says happened (G8): a change that a
    person denied (``ToolResult.denied``) ends the run ``user_denied`` once the reply's calls
    are answered (the person decided; the model is not asked to work around it). A call of a
    ``mutating`` tool that failed in its handler keeps the run from succeeding, until a later
    change succeeds (the model adapted). Calls answered before their handler ran (malformed,
    repeated, over budget) are not changes."""

    denied: dict[str, str] = field(default_factory=dict)  # call key -> what was refused
    failed: dict[str, str] = field(default_factory=dict)

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        call, result = outcome.call, outcome.result
        if result.code in _NOTHING_TO_CHANGE:
            return None
        what = f"{call.call.name} {call.call.arguments}"
        if result.denied:
            self.denied[call.key or call.call.call_id] = what
            return self._refused()
        if outcome.ran and call.mutating:
            self._changed(call, what, result.code if result.is_error else None)
        return None

    def _changed(self, call: Checked, what: str, error: str | None) -> None:
        if error is None:
            self.failed.clear()
        else:
            self.failed[call.key or call.call.call_id] = f"{what} ({error})"

    def _refused(self) -> End:
        refused = "; ".join(self.denied.values())
        return End.saying("user_denied", refused=refused)

    def accept(self, answer: str, view: RunView) -> End | None:
        if self.denied:
            return self._refused()
        if self.failed:
            failed = "; ".join(self.failed.values())
            return End.saying("change_failed", failed=failed)
        return None


@dataclass
class RequiredTools(Rule):
    """These tools must succeed, in this order, before the model may choose freely."""

    names: tuple[str, ...]
    done: int = 0

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        """The next required tool is the request's ``tool_choice`` (then ``auto``)."""
        if self.done >= len(self.names):
            return request
        return replace(request, tool_choice=self.names[self.done])

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        wanted = self.names[self.done] if self.done < len(self.names) else None
        if outcome.call.call.name == wanted and not outcome.result.is_error:
            self.done += 1
        return None


@dataclass
class Rules:
    """Every rule of one run (``rules``: the built-in ones, then the caller's), each hook
    asked of each rule in that order. Four are also kept by name, for what no hook does:
    the context (cutting a new output, the view's shortened outputs), the deadline (neither
    a streaming reply nor a running handler is waited for past it), the retry of unusable
    replies (``decide``), and the evidence policy (its last check is the run's)."""

    rules: tuple[Rule, ...]
    context: ContextFit
    deadline: Deadline
    retry: ReplyRetry
    policy: EvidencePolicy

    @classmethod
    def for_run(cls, config: AgentConfig, tools: Sequence[ToolSpec]) -> Rules:
        context = ContextFit.for_run(
            config.context_tokens,
            config.reserve_tokens,
            config.instructions,
            tools,
            config.max_tool_output_chars,
        )
        deadline, retry = Deadline.of(config), ReplyRetry()
        policy = EvidencePolicy(config.evidence, can_change=any(t.mutating for t in tools))
        built_in = (
            TurnLimit(config.max_turns, config.answer_on_last_turn),
            deadline,
            context,
            SameResults(),
            retry,
            RepeatGuard(config.max_repeats),
            ErrorStreak(config.max_repeated_errors),
            CallBudget(config.max_tool_calls),
            ChangeLedger(),
            RequiredTools(config.required_tools),
            policy,
        )
        extra = tuple(make() for make in config.rules)
        return cls((*built_in, *extra), context, deadline, retry, policy)

    def view(
        self, history: Sequence[Item], turns: int, calls_run: int, question: Question
    ) -> RunView:
        return RunView(tuple(history), turns, calls_run, self.context.shortened, question=question)

    def before_request(self, view: RunView, tell: Callable[[Note], None]) -> End | None:
        """The first rule's ``End``, or None: ask. Each ``Note`` on the way is told."""
        for rule in self.rules:
            said = rule.before_request(view)
            if isinstance(said, End):
                return said
            if said is not None:
                tell(said)
        return None

    def request(self, request: ModelRequest, view: RunView) -> ModelRequest:
        """``request`` as every rule changed it, in order."""
        for rule in self.rules:
            request = rule.request(request, view)
        return request

    def responded(self, request: ModelRequest, response: ModelResponse) -> None:
        for rule in self.rules:
            rule.responded(request, response)

    def decide(self, reply: Reply) -> Decision:
        """What ``reply`` means (``minipi.agent.decide``), unusable replies retried once."""
        return decide(reply, self.retry)

    def screen(self, call: Checked, view: RunView) -> Refusal | None:
        """The first rule's refusal of ``call``, or None: run it."""
        for rule in self.rules:
            refusal = rule.screen(call, view)
            if refusal is not None:
                return refusal
        return None

    def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
        """Every rule sees every outcome; the first ``End`` wins."""
        ends = [rule.observe(outcome, view) for rule in self.rules]
        return next((end for end in ends if end is not None), None)

    def accept(self, answer: str, view: RunView) -> End | Nudge | None:
        """The first rule's verdict on the answer, or None: accept it."""
        for rule in self.rules:
            verdict = rule.accept(answer, view)
            if verdict is not None:
                return verdict
        return None

    def output(self, call_id: str, result: ToolResult) -> FunctionCallOutput:
        """A call's result as the history keeps it: cut to what the context can hold; a cut
        result's details say where the tool's own text ends (``cut_at``: its marks stop
        there, the loop's notice follows)."""
        content, kept = self.context.cut(result.content)
        details = result.details if kept is None else {**result.details, "cut_at": kept}
        return FunctionCallOutput(call_id, content, is_error=result.is_error, details=details)

    @property
    def evidence(self) -> Evidence | None:
        """The check of the last answer (``RunResult.evidence``)."""
        return self.policy.last
