"""The rules protocol, driven through the real loop with the library's ScriptedModel: every
rule (the caller's too) is asked at the same hooks, a refusal names its rule, and a rule
knows its own refusals by identity, never by a code string a tool could return."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from minipi.agent import (
    AgentConfig,
    AgentTool,
    CallOutcome,
    Checked,
    End,
    Refusal,
    Rule,
    RunView,
    ToolResult,
    run_agent,
)
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import FunctionCallOutput, ModelRequest

SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "string"}},
    "required": ["x"],
    "additionalProperties": False,
}


def _tool(ran: list[str], answer: ToolResult | None = None, name: str = "probe") -> AgentTool:
    def handler(arguments: Mapping[str, Any]) -> ToolResult:
        ran.append(arguments["x"])
        return answer or ToolResult(f"{name}:{arguments['x']}")

    return AgentTool(name, "probe", SCHEMA, handler)


def _outputs(request: ModelRequest) -> list[str]:
    return [i.output for i in request.items if isinstance(i, FunctionCallOutput)]


class RefuseAll(Rule):
    """A caller's rule that lets no call run."""

    def screen(self, call: Checked, view: RunView) -> Refusal | None:
        return self.refuse("not_allowed", f"{call.call.name} is not allowed in this run")


def test_a_callers_screen_is_consulted_and_its_refusal_is_what_the_model_gets() -> None:
    """The bug: ``Rules.screen`` asked only the repeat guard and the budget, so the handler
    ran and the run succeeded as if the rule did not exist."""
    ran: list[str] = []
    model = ScriptedModel([reply_calls(("probe", {"x": "a"})), reply_text("I could not")])
    result = run_agent(model, [_tool(ran)], AgentConfig(rules=[RefuseAll]), "q")
    assert ran == []
    assert _outputs(model.requests[1]) == ["error [not_allowed]: probe is not allowed in this run"]
    assert result.tool_calls == 0


def test_a_refusal_names_its_rule_in_the_outcome() -> None:
    seen: list[CallOutcome] = []

    class Watch(Rule):
        def observe(self, outcome: CallOutcome, view: RunView) -> End | None:
            seen.append(outcome)
            return None

    refuse_all = RefuseAll()
    model = ScriptedModel([reply_calls(("probe", {"x": "a"})), reply_text("no")])
    run_agent(model, [_tool([])], AgentConfig(rules=[lambda: refuse_all, Watch]), "q")
    (outcome,) = seen
    assert (outcome.refused_by, outcome.ran) == (refuse_all, False)


@pytest.mark.parametrize(
    ("code", "config"),
    [
        ("duplicate_call", AgentConfig(max_repeats=2, max_repeated_errors=10)),
        ("budget_exhausted", AgentConfig(max_tool_calls=5, max_repeated_errors=10)),
        ("user_denied", AgentConfig(max_repeated_errors=10)),
    ],
)
def test_a_tool_that_returns_a_rules_code_is_not_taken_for_the_rule(
    code: str, config: AgentConfig
) -> None:
    """The bug: the rules knew their refusals by ``result.code``, a namespace shared with
    tools: a handler's ``duplicate_call`` counted as a repeat (``stuck_loop``), a read-only
    tool's ``user_denied`` ended the run ``user_denied``."""
    ran: list[str] = []
    tool = _tool(ran, ToolResult.error(code, "the tool's own words"))
    calls = [reply_calls(("probe", {"x": "a"})) for _ in range(3)]
    model = ScriptedModel([*calls, reply_text("the probe failed three times")])
    result = run_agent(model, [tool], config, "q")
    assert (result.status, result.code) == ("succeeded", None)
    assert ran == ["a", "a", "a"]


def test_the_budget_counts_calls_that_ran_not_calls_screened() -> None:
    """A call another rule refused uses none of the budget, whichever rule is asked first."""

    class RefuseA(Rule):
        def screen(self, call: Checked, view: RunView) -> Refusal | None:
            return self.refuse("not_allowed", "no a") if call.arguments["x"] == "a" else None

    ran: list[str] = []
    both = reply_calls(("probe", {"x": "a"}), ("probe", {"x": "b"}))
    model = ScriptedModel([both, reply_text("b it is")])
    config = AgentConfig(max_tool_calls=1, rules=[RefuseA])
    result = run_agent(model, [_tool(ran)], config, "q")
    assert ran == ["b"]
    assert (result.status, result.answer, result.tool_calls) == ("succeeded", "b it is", 1)


def test_the_budget_lets_through_only_what_is_left_of_it_in_one_reply() -> None:
    ran: list[str] = []
    three = reply_calls(*(("probe", {"x": x}) for x in "abc"))
    model = ScriptedModel([three])
    result = run_agent(model, [_tool(ran)], AgentConfig(max_tool_calls=2), "q")
    assert ran == ["a", "b"]
    assert (result.status, result.code) == ("budget_exhausted", "max_tool_calls")
    assert (
        "[budget_exhausted]"
        in [i for i in result.items if isinstance(i, FunctionCallOutput)][-1].output
    )


def test_a_rule_reads_the_run_through_a_view_it_cannot_change() -> None:
    views: list[RunView] = []

    class Keep(Rule):
        def before_request(self, view: RunView) -> None:
            views.append(view)

    model = ScriptedModel([reply_calls(("probe", {"x": "a"})), reply_text("ok")])
    run_agent(model, [_tool([])], AgentConfig(rules=[Keep]), "q")
    assert [(type(v.history), v.turns, v.calls_run) for v in views] == [
        (tuple, 0, 0),
        (tuple, 1, 1),
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        views[0].turns = 5  # type: ignore[misc]


def test_a_change_that_returns_user_denied_unasked_failed_and_was_not_denied() -> None:
    """Only the approval path says a person refused (``ToolResult.denied``): a change whose
    handler returns the code itself failed, and the run says so."""
    tool = AgentTool(
        "write", "write", SCHEMA, lambda _: ToolResult.error("user_denied", "mine"), mutating=True
    )
    model = ScriptedModel([reply_calls(("write", {"x": "a"})), reply_text("done")])
    result = run_agent(model, [tool], AgentConfig(), "q")
    assert (result.status, result.code) == ("failed", "change_failed")
