"""A structured answer: after the model answered, the answer as JSON of the caller's shape.

``run_agent(..., output=SHAPE)`` (``minipi ask --schema``) ends a run whose model answered
with one more request: the conversation so far, then minipi's message asking for the answer
as one JSON value of the schema. The request is constrained where the server can be told:

the request's ``output_schema`` (``minipi.ai.types.ModelRequest``), which each client sends
its own way: the chat wire's ``response_format`` (``json_schema``), the responses wire's
``text.format``, guided mode's grammar with its history and instructions unchanged (the
engine's prefix cache holds). A server that refuses it (400) is asked again without it.

The reply is parsed and validated; a reply that does not fit is answered once with the
validator's message and asked again; a second misfit ends the run ``invalid_output``. The
value's every leaf is then traced to the reads (``minipi.structured.trace``) and the verdict
is the fields' combined; under ``--evidence require`` a field no read backs ends the run
``unsupported_fields``. The result's ``answer`` is the JSON text, ``output`` the traced value.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from minipi.agent.types import End, FinalAnswer, Structured
from minipi.ai.types import Message, ModelRequest, ModelResponse, output_text
from minipi.errors import ModelError

if TYPE_CHECKING:
    from minipi.agent.run_state import Run
    from minipi.structured.shape import OutputShape

__all__ = ["structured_answer"]


def structured_answer(run: Run, shape: OutputShape, answer: FinalAnswer) -> FinalAnswer | End:
    """The run's answer as a value of ``shape``, traced; or the end that says why not."""
    run.add(Message("user", _ask_for(shape.schema), by_minipi=True))
    value, problem = _ask(run, shape)
    if problem is not None:
        run.add(Message("user", _refit(problem), by_minipi=True))
        value, problem = _ask(run, shape)
    if problem is not None:
        return End.saying("invalid_output", problem=problem)
    return _traced(run, shape, value)


def _ask_for(schema: dict[str, Any]) -> str:
    """minipi's message asking for the answer as JSON of ``schema``."""
    shown = json.dumps(schema, ensure_ascii=False)
    return (
        "Give your answer to my question as one JSON value that matches this JSON Schema:\n"
        f"{shown}\n"
        "Write each value as the files you read write it. Reply with the JSON only."
    )


def _refit(problem: str) -> str:
    return f"That JSON does not match the schema: {problem}. Reply with corrected JSON only."


def _ask(run: Run, shape: OutputShape) -> tuple[Any, str | None]:
    """One request for the JSON; (value, None) or (None, why it does not fit)."""
    response = _request(run, shape.schema)
    run.add(*response.items)
    text = output_text(response.items)
    try:
        value = json.loads(_unfenced(text))
    except json.JSONDecodeError as error:
        return None, f"not JSON ({error.msg})"
    return value, shape.problem(value)


def _request(run: Run, schema: dict[str, Any]) -> ModelResponse:
    """The reply to the request for JSON, constrained as the client allows; asked again
    without the constraint when the server refuses it (400: a server that knows no JSON
    Schema output). Through ``Run.ask``, as every request of the run: counted, shown,
    given to the rules."""

    def constrained(request: ModelRequest) -> ModelRequest:
        return replace(request, tool_choice="none", on_delta=None, output_schema=schema)

    try:
        reply = run.ask(constrained)
    except ModelError as error:
        if error.code != "bad_request":
            raise
        reply = run.ask(lambda request: replace(constrained(request), output_schema=None))
    if reply.response is None:  # a broken stream: the run's model error
        assert reply.failure is not None
        raise reply.failure
    return reply.response


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


def _unfenced(text: str) -> str:
    """The JSON of a reply, without a Markdown code fence around it."""
    fenced = _FENCE.match(text)
    return fenced.group(1) if fenced else text.strip()


def _traced(run: Run, shape: OutputShape, value: Any) -> FinalAnswer | End:
    from minipi.structured.trace import StructuredOutput, trace_fields, verdict_of

    fields, evidence = trace_fields(value, run.history, run.question)
    output = StructuredOutput(value, fields, shape.build(value))
    if run.config.evidence == "require" and output.unsupported:
        listed = ", ".join(f"{f.pointer}={json.dumps(f.value)}" for f in output.unsupported)
        return End.saying("unsupported_fields", fields=listed)
    text = json.dumps(value, ensure_ascii=False)
    verdict = verdict_of(fields) if run.config.evidence != "off" else None
    return FinalAnswer(text, Structured(output, evidence, verdict))
