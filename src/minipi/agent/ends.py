"""How a run ends: one table of end codes, each with its status (and so its exit code).

A run ends in exactly one status. ``succeeded`` is reserved for a run whose model answered and
whose every call was answered (its ``RunResult.code`` is None); every other end has a code
from ``END_CODES`` (the decision that carries it is ``minipi.agent.types.End``). Codes
raised by the model layer (``minipi.ai``) and by event sinks (a session that could not be
saved) are in the table too; a code that is not (a new server error, a sink of the caller's
own) ends the run ``failed``. The README's table of end codes
is this one (a test keeps them equal).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["END_CODES", "EXIT_CODES", "RunStatus", "status_of"]

RunStatus: TypeAlias = Literal["succeeded", "failed", "budget_exhausted", "cancelled"]

EXIT_CODES: dict[RunStatus, int] = {
    "succeeded": 0,
    "failed": 1,
    "budget_exhausted": 3,
    "cancelled": 130,
}
"""The CLI's exit code for each status (2, a usage error, ends no run: nothing was sent)."""


def status_of(code: str) -> RunStatus:
    """The status a run ending with ``code`` has (``failed`` for a code not in the table)."""
    entry = END_CODES.get(code)
    return entry[0] if entry is not None else "failed"


END_CODES: dict[str, tuple[RunStatus, str]] = {
    # budgets
    "max_turns": ("budget_exhausted", "--max-turns model requests were made, none answered"),
    "max_tool_calls": ("budget_exhausted", "--max-tool-calls calls ran; the model wanted more"),
    "max_seconds": ("budget_exhausted", "--max-seconds passed before an answer"),
    # the user
    "cancelled": ("cancelled", "Ctrl-C; every call answered (outcome unknown if it had begun)"),
    "interrupted": ("cancelled", "the process ended mid-run; repaired when the session resumed"),
    "user_denied": ("failed", "a change the model asked for was denied: the task did not happen"),
    # what the tools did
    "change_failed": ("failed", "a change failed in its tool and no later change succeeded"),
    "change_not_made": ("failed", "the answer says a change was made that no tool made"),
    "stuck_loop": ("failed", "the model repeated an identical call after being told not to"),
    "repeated_tool_error": ("failed", "the same tool error several times in a row"),
    "context_exhausted": ("failed", "the conversation no longer fits the model's context"),
    # what the model replied (each asked once more first)
    "truncated": ("failed", "the reply was cut at the output-token limit, twice in a row"),
    "unfinished": ("failed", "the reply did not say it was finished, twice in a row"),
    "empty_output": ("failed", "neither text nor a call, twice in a row"),
    "calls_missing": ("failed", "the reply said it held tool calls but none arrived, twice"),
    "stream_stalled": ("failed", "the stream went silent for --timeout seconds, twice"),
    "stream_incomplete": ("failed", "the stream ended before its finish, twice"),
    "content_filter": ("failed", "the endpoint filtered the reply"),
    "unsupported_figures": ("failed", "--evidence require: a claim no tool result holds, twice"),
    "answer_unexamined": ("failed", "--evidence require: the answer is too long to check whole"),
    "invalid_output": ("failed", "--schema: the model's JSON did not fit the schema, twice"),
    "unsupported_fields": ("failed", "--evidence require: a field of --schema no read backs"),
    "malformed_call": ("failed", "a tool call without a name: nothing can answer it"),
    # the endpoint
    "endpoint_unreachable": ("failed", "no connection, or it dropped (after retries)"),
    "timeout": ("failed", "no answer within --timeout (after retries)"),
    "rate_limited": ("failed", "429 after retries, or a Retry-After longer than minipi waits"),
    "endpoint_unavailable": ("failed", "5xx (or 408/409) after retries"),
    "unauthorized": ("failed", "401/403: the API key was refused or missing"),
    "model_not_found": ("failed", "404 naming the model"),
    "not_found": ("failed", "404: the base URL is not an OpenAI-compatible API"),
    "bad_request": ("failed", "400: the server refused the request"),
    "redirected": ("failed", "3xx: redirects are not followed"),
    "protocol_error": ("failed", "a 2xx answer that is not a usable reply"),
    "malformed_stream": ("failed", "a stream frame that is not JSON"),
    "response_too_large": ("failed", "a reply (decoded) over --max-response-mb; not retried"),
    "model_error": ("failed", "the server reported an error in its answer"),
    "guided_invalid_json": ("failed", "guided mode: the reply is not JSON despite the grammar"),
    "guided_invalid_reply": ("failed", "guided mode: the reply is neither a call nor an answer"),
    # sinks
    "session_write_failed": ("failed", "a step could not be saved (disk full); resume later"),
    "session_unsavable": ("failed", "a step could not be saved as JSON; resume the session"),
}
