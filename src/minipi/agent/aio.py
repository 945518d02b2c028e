"""``await arun_agent(...)``: the loop for servers and notebooks, run where it always runs.

    async def show(event: AgentEvent) -> None:
        print(event.type)

    result = await arun_agent(client, tools, config, question, on_event=show)

There is one loop (``run_agent``); this is not a second one. Each call starts a thread
(``minipi-arun``) that runs ``run_agent``, with the caller's context variables, and the
awaiting task waits for it without blocking the event loop, so many runs can be awaited at
once (each is one thread; their requests share the client's connections).

Events: ``on_event`` is an ``async def`` sink (``asyncio.Queue.put`` is one) awaited on the
event loop, one event at a time, in the order the run sends them; the run waits while the sink
is busy with an event, as it waits for a sync sink. A ``MiniPiError`` the sink raises ends the
run as it does from a sync sink (``failed`` with its code, or ``cancelled`` for code
``cancelled``), and the sink still sees the rest of the events.

Cancelling the awaiting task (``task.cancel()``, ``asyncio.timeout``, a server whose client
went away, Ctrl-C under ``asyncio.run``) cancels the run through the loop's own ways: the
request in flight is given up (its ``ModelRequest.cancel`` is set: the HTTP layer drops it
within a fraction of a second), no request is sent after, and the next step the run begins (a
turn, a call) raises, from its event, a ``MiniPiError`` of code ``cancelled``, which ends the
run (``Run.finish``) ``cancelled`` with every call answered: a call that returned keeps its
result, one not begun is "not executed", one stopped at its start "interrupted: outcome
unknown". A handler that is running is not stopped (nothing can stop a thread): the run ends
when it returns (the loop waits for no read-only handler past ``AgentConfig.max_seconds``,
when one is set). The await raises ``CancelledError`` once the run has ended and its thread
is gone, never before: asyncio's contract, so that ``asyncio.timeout`` and task groups work.
The cancelled ``RunResult`` is the sink's last event (``RunEnd``). Cancelling again while the
run ends does not make the await return sooner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from minipi.agent.config import AgentConfig
from minipi.agent.events import AgentEvent, ItemsAdded, RunEnd, ToolResultReady
from minipi.agent.loop import run_agent
from minipi.agent.result import RunResult
from minipi.agent.tools import AgentTool
from minipi.ai.types import Item, ModelClient, ModelRequest, ModelResponse
from minipi.errors import ModelError

__all__ = ["AsyncEventSink", "arun_agent"]

AsyncEventSink = Callable[[AgentEvent], Awaitable[None]]
"""An ``async def`` that takes each event of the run (``asyncio.Queue.put`` is one)."""

_LOOK = 0.25
"""Seconds between two looks, while the run waits for the async sink, at whether the event
loop is still there (a closed loop never runs the sink: the run is cancelled instead)."""


async def arun_agent(
    client: ModelClient,
    tools: Sequence[AgentTool],
    config: AgentConfig,
    question_or_history: str | Sequence[Item],
    on_event: AsyncEventSink | None = None,
    *,
    output: object = None,
) -> RunResult:
    """``run_agent`` awaited: the same arguments (``on_event`` an ``async def``; ``output``
    the shape of a structured answer), the same ``RunResult`` and errors, the loop run in a
    thread of its own.

    Cancelling the awaiting task cancels the run: it ends ``cancelled`` with every call
    answered (its ``RunEnd`` reaches ``on_event``), and then the await raises
    ``CancelledError``. It never returns while the run's thread is still running.
    """
    loop = asyncio.get_running_loop()
    cancel = threading.Event()
    ended: asyncio.Future[RunResult] = loop.create_future()
    relay = _Relay(on_event, loop, cancel)
    watched = _Watched(client, cancel)

    def work() -> None:
        try:
            result = run_agent(watched, tools, config, question_or_history, relay, output=output)
        except BaseException as error:  # handed to the awaiting task, raised there
            _settle(loop, ended, error)
        else:
            _settle(loop, ended, result)

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(work,), name="minipi-arun", daemon=True)
    thread.start()
    caught = await _wait_for(ended, cancel)
    thread.join()  # it has settled ``ended``: all it has left to do is return
    if caught is not None:
        if not ended.cancelled():
            ended.exception()  # seen: cancellation wins over the run's outcome
        raise caught
    return ended.result()


async def _wait_for(
    ended: asyncio.Future[RunResult], cancel: threading.Event
) -> asyncio.CancelledError | None:
    """Wait until the run has ended, however often the awaiting task is cancelled meanwhile
    (each time, the run is told to stop); the first cancellation, if any."""
    caught: asyncio.CancelledError | None = None
    while not ended.done():
        try:
            await asyncio.wait({ended})
        except asyncio.CancelledError as error:
            cancel.set()
            caught = caught or error
    return caught


def _settle(
    loop: asyncio.AbstractEventLoop,
    ended: asyncio.Future[RunResult],
    outcome: RunResult | BaseException,
) -> None:
    """Hand the run's outcome to the event loop (from the run's thread)."""

    def settle() -> None:
        if ended.done():
            return
        if isinstance(outcome, BaseException):
            ended.set_exception(outcome)
        else:
            ended.set_result(outcome)

    with contextlib.suppress(RuntimeError):  # a closed event loop: nobody awaits the run
        loop.call_soon_threadsafe(settle)


_DONE = (ToolResultReady, ItemsAdded, RunEnd)
"""The events that record what was done: a cancelled run still takes them in."""


def _cancelled() -> ModelError:
    return ModelError("the run was cancelled: the task awaiting it was", code="cancelled")


class _Relay:
    """The run's event sink, in the run's thread: hands each event to the async sink on the
    event loop and waits until the sink is done with it. Once the run is cancelled, an event
    that begins something (a turn, a call) raises ``cancelled`` after it is handed over; one
    that records what was done (``_DONE``) does not, so a call that has returned keeps its
    result."""

    def __init__(
        self,
        sink: AsyncEventSink | None,
        loop: asyncio.AbstractEventLoop,
        cancel: threading.Event,
    ) -> None:
        self.sink = sink
        self.loop = loop
        self.cancel = cancel

    def __call__(self, event: AgentEvent) -> None:
        if self.sink is not None:
            self._hand_over(self.sink, event)
        if self.cancel.is_set() and not isinstance(event, _DONE):
            raise _cancelled()

    def _hand_over(self, sink: AsyncEventSink, event: AgentEvent) -> None:
        async def deliver() -> None:
            await sink(event)

        try:
            future = asyncio.run_coroutine_threadsafe(deliver(), self.loop)
        except RuntimeError:  # the event loop is closed: nobody is listening
            self.cancel.set()
            return
        while not future.done():
            concurrent.futures.wait([future], timeout=_LOOK)
            if self.loop.is_closed() and not future.done():
                self.cancel.set()
                return
        if future.cancelled():  # the loop is shutting down and cancelled the sink's task
            self.cancel.set()
            return
        future.result()  # the sink's error, raised in the run as a sync sink's would be


class _Watched:
    """``client``, its requests given up once the run is cancelled (``ModelRequest.cancel``,
    as a batch stopping at Ctrl-C does) and none sent after. Closing it leaves ``client``
    open: it is the caller's."""

    def __init__(self, client: ModelClient, cancel: threading.Event) -> None:
        self.client = client
        self.cancel = cancel

    @property
    def model(self) -> str:
        return self.client.model

    def create(self, request: ModelRequest) -> ModelResponse:
        if self.cancel.is_set():
            raise _cancelled()
        try:
            return self.client.create(replace(request, cancel=self.cancel))
        except ModelError as error:
            if self.cancel.is_set() and error.code != "cancelled":
                raise _cancelled() from error  # what broke it was the cancel
            raise

    def close(self) -> None:
        """Nothing to release: the client belongs to the caller."""
