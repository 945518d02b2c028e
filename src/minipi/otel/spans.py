"""The event sink that turns a run's events into spans (``minipi.otel`` says which).

Events carry no clock, so each span takes its times from when its events arrive, sharpened
by the durations they carry: a request's span starts at ``TurnStart`` and lasts the
``seconds`` of its ``ModelResponded``; a call's starts at ``ToolExecuting`` (at
``ToolCallStarted`` for a call refused before it ran) and lasts its result's ``seconds``.
A request that got no response (a broken stream asked again, a failure that ended the run)
ends when the next thing the run says arrives, with ``error.type`` the run's end code where
it has one, else ``_OTHER``. Spans of requests and calls are made once they are over, with
those times, as children of the run's span.

``error.type`` values: a run's or request's end code (``minipi.agent.ends.END_CODES``), a
call's result code (``unknown_tool``, ``not_found``...), ``_OTHER`` when none is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from minipi import __version__
from minipi.agent.events import (
    AgentEvent,
    ModelResponded,
    Notice,
    RunEnd,
    RunStart,
    ToolCallStarted,
    ToolExecuting,
    ToolResultReady,
    TurnStart,
)
from minipi.agent.result import RunResult
from minipi.ai.secrets import redact
from minipi.ai.types import ModelResponse

__all__ = ["OTHER", "SpanSink", "server_attributes"]

OTHER = "_OTHER"
"""``error.type`` when no code says what went wrong (the conventions' fallback)."""

Attributes = dict[str, AttributeValue]


@dataclass(slots=True)
class _Call:
    """A call under way: its name, turn, and when it was asked for and began to run."""

    name: str
    turn: int
    asked: int
    running: int | None = None


class SpanSink:
    """An ``EventSink`` making the spans of one run at a time (``minipi.otel.span_sink``)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        base_url: str | None = None,
        provider_name: str = "openai",
    ) -> None:
        self._tracer = trace.get_tracer("minipi", __version__, tracer_provider)
        self._common: Attributes = {
            "gen_ai.provider.name": provider_name,
            **server_attributes(base_url),
        }
        self._run: Span | None = None
        self._parent: Context | None = None
        self._model = ""
        self._asked: tuple[int, int] | None = None  # the open request: turn, start (ns)
        self._calls: dict[str, _Call] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
            RunStart: self._run_start,
            TurnStart: self._turn_start,
            ModelResponded: self._responded,
            Notice: self._notice,
            ToolCallStarted: self._call_asked,
            ToolExecuting: self._call_running,
            ToolResultReady: self._call_answered,
            RunEnd: self._run_end,
        }

    def __call__(self, event: AgentEvent) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:  # deltas, items, text: nothing a span holds
            handler(event)

    # the run

    def _run_start(self, event: RunStart) -> None:
        if self._run is not None:  # the last run never ended (an exception out of the loop)
            self._finish_run(time.time_ns(), OTHER, {"minipi.status": "unfinished"})
        self._model = event.model
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            **self._common,
            "gen_ai.agent.name": "minipi",
            "gen_ai.request.model": event.model,
        }
        self._run = self._tracer.start_span(
            "invoke_agent minipi", kind=SpanKind.INTERNAL, attributes=attributes
        )
        self._parent = trace.set_span_in_context(self._run)

    def _run_end(self, event: RunEnd) -> None:
        if self._run is None:  # a second RunEnd (the first could not be saved): said already
            return
        now, result = time.time_ns(), event.result
        failure = None if result.succeeded else (result.code or OTHER)
        self._request_lost(now, failure or OTHER)
        for call_id, call in list(self._calls.items()):
            if call.running is not None:  # began, never answered (Ctrl-C, the deadline)
                self._call_span(call_id, call, (call.running, now), failure or OTHER, ran=True)
        self._finish_run(now, failure, _run_attributes(result))

    def _finish_run(self, now: int, failure: str | None, attributes: Attributes) -> None:
        assert self._run is not None
        self._run.set_attributes(attributes)
        _fail(self._run, failure)
        self._run.end(now)
        self._run = self._parent = None
        self._asked = None
        self._calls.clear()

    # the model's requests

    def _turn_start(self, event: TurnStart) -> None:
        now = time.time_ns()
        self._request_lost(now, OTHER)
        self._asked = (event.turn, now)

    def _notice(self, event: Notice) -> None:
        self._request_lost(time.time_ns(), OTHER)  # a request answered by a notice: retried

    def _responded(self, event: ModelResponded) -> None:
        if self._asked is None:
            return
        turn, start = self._asked
        self._asked = None
        span = self._request_span(turn, start, _response_attributes(event.response))
        span.end(start + _ns(event.seconds))

    def _request_lost(self, now: int, failure: str) -> None:
        """End the open request, if any, as one that got no response."""
        if self._asked is None:
            return
        turn, start = self._asked
        self._asked = None
        span = self._request_span(turn, start, {})
        _fail(span, failure)
        span.end(now)

    def _request_span(self, turn: int, start: int, more: Attributes) -> Span:
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            **self._common,
            "gen_ai.request.model": self._model,
            "minipi.turn": turn,
            **more,
        }
        return self._tracer.start_span(
            f"chat {self._model}",
            self._parent,
            SpanKind.CLIENT,
            attributes,
            start_time=start,
        )

    # the tool calls

    def _call_asked(self, event: ToolCallStarted) -> None:
        self._calls[event.call_id] = _Call(event.name, event.turn, time.time_ns())

    def _call_running(self, event: ToolExecuting) -> None:
        call = self._calls.get(event.call_id)
        if call is not None:
            call.running = time.time_ns()

    def _call_answered(self, event: ToolResultReady) -> None:
        now = time.time_ns()
        call = self._calls.pop(event.call_id, None) or _Call(event.name, event.turn, now)
        ran = call.running is not None
        start = call.running if call.running is not None else call.asked
        end = start + _ns(event.seconds) if ran else start
        result = event.result
        failure = (result.code or OTHER) if result.is_error else None
        self._call_span(event.call_id, call, (start, end), failure, ran=ran)

    def _call_span(
        self, call_id: str, call: _Call, times: tuple[int, int], failure: str | None, *, ran: bool
    ) -> None:
        self._calls.pop(call_id, None)
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "minipi.turn": call.turn,
            "minipi.tool.ran": ran,
        }
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            self._parent,
            SpanKind.INTERNAL,
            attributes,
            start_time=times[0],
        )
        _fail(span, failure)
        span.end(times[1])


def server_attributes(base_url: str | None) -> Attributes:
    """``server.address`` and ``server.port`` of ``base_url`` (none for a URL without a
    host): the host only, never credentials or the path, cleaned of any secret minipi sends."""
    if not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:  # not a URL, or a bad port
        return {}
    if not parts.hostname:
        return {}
    default = 443 if parts.scheme == "https" else 80
    return {"server.address": redact(parts.hostname), "server.port": port or default}


def _response_attributes(response: ModelResponse) -> Attributes:
    attributes: Attributes = {"gen_ai.response.finish_reasons": (response.finish_reason,)}
    if response.id:
        attributes["gen_ai.response.id"] = response.id
    model = response.raw.get("model")
    if isinstance(model, str) and model:
        attributes["gen_ai.response.model"] = model
    usage = response.usage
    if usage.input_tokens or usage.output_tokens:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cached_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    return attributes


def _run_attributes(result: RunResult) -> Attributes:
    attributes: Attributes = {
        "minipi.status": result.status,
        "minipi.turns": result.turns,
        "minipi.tool_calls": result.tool_calls,
    }
    if result.code:
        attributes["minipi.end_code"] = result.code
    if result.verdict is not None:
        attributes["minipi.verdict"] = result.verdict.kind
        if result.verdict.reason:
            attributes["minipi.verdict.reason"] = result.verdict.reason
    usage = result.usage
    if usage.input_tokens or usage.output_tokens:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    return attributes


def _fail(span: Span, failure: str | None) -> None:
    """Mark ``span`` failed with ``error.type`` ``failure`` (None: it did not fail)."""
    if failure is not None:
        span.set_attribute("error.type", failure)
        span.set_status(Status(StatusCode.ERROR, failure))


def _ns(seconds: float) -> int:
    return max(0, int(seconds * 1e9))
