"""One question's run, as every CLI entry point makes it: ``ask``/``chat`` (``app``) and the
MCP server (``minipi mcp serve``, ``cli.mcp``).

    result = run_question(model, settings, files, tools, question, history, emit, book)

The loop's config comes from the settings (``assemble.agent_config``), its ``--max-seconds``
counts from ``started`` (also during MCP calls, when ``mcp`` is given), and with a session
(``book``) the question is saved before the run and a run that escapes the loop is closed in
the store.

A process that answers many questions with no person at hand (the MCP server) holds its
setup open in a ``Served`` (``open_served``): the settings, the model, the project's files
and the session, each question a run of its own after the session's history.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from minipi.agent import AgentTool, RunResult, run_agent
from minipi.agent.events import EventSink, fan_out
from minipi.ai.types import Item, Message
from minipi.assemble import ModelHandle, Settings, agent_config, open_model, run_tools
from minipi.cli.approve import make_approver
from minipi.cli.settings import RunOptions, data_dir, resolve_settings
from minipi.cli.words import Words, words_for
from minipi.errors import ConfigError
from minipi.files import ProjectFiles

if TYPE_CHECKING:
    from minipi.mcp import McpTools
    from minipi.session import OpenSession, Repair

__all__ = ["Served", "open_served", "run_question"]


def run_question(
    model: ModelHandle,
    settings: Settings,
    files: ProjectFiles,
    tools: Sequence[AgentTool],
    question: str,
    history: Sequence[Item],
    emit: EventSink | None,
    book: OpenSession | None = None,
    *,
    started: float | None = None,
    mcp: McpTools | None = None,
    output: object = None,
) -> RunResult:
    """``question`` after ``history``, with ``tools``; its ``--max-seconds`` counts from
    ``started`` (a start the caller waited through), else from now; ``output``: the shape
    of a structured answer (``run_agent``'s)."""
    items = [*history, Message("user", question)]
    config = agent_config(settings, model, tools, question=question, files=files)
    started = started if started is not None else time.monotonic()
    config = replace(config, started=started)
    if mcp is not None and config.max_seconds is not None:  # also during MCP calls
        mcp.set_deadline(started + config.max_seconds)
    if book is None:
        return run_agent(model.client, tools, config, items, emit, output=output)
    book.recorder.begin_run(question, model.client.model)
    try:
        return run_agent(model.client, tools, config, items, emit, output=output)
    except BaseException as error:  # a bug, or Ctrl-C outside the loop: record what can be
        book.recorder.abandon(error)
        raise


@dataclass
class Served:
    """What a server holds open for its questions. Every run, and every use of the session
    (its SQLite connection belongs to one thread), happens in ``worker``, one at a time;
    nobody answers approvals (``approve`` is ``deny`` or ``all``, never ``ask``)."""

    settings: Settings
    model: ModelHandle
    files: ProjectFiles
    worker: ThreadPoolExecutor
    book: OpenSession | None = None

    def ask(self, question: str, emit: EventSink | None = None, output: object = None) -> RunResult:
        """One question's run after the session's history (none without a session),
        waited for; ``output``: the shape of a structured answer (``run_agent``'s), checked
        before anything is sent or saved (``ConfigError``)."""
        return self.worker.submit(self._ask, question, emit, output).result()

    def _ask(self, question: str, emit: EventSink | None, output: object) -> RunResult:
        if output is not None:
            from minipi.structured.shape import shape_of

            output = shape_of(output)
        tools = self.tools(words_for(question))
        sinks: list[EventSink] = []
        history: list[Item] = []
        if self.book is not None:
            sinks.append(self.book.recorder)  # saved before anything else sees it
            history = self.book.history()
        if emit is not None:
            sinks.append(emit)
        return run_question(
            self.model,
            self.settings,
            self.files,
            tools,
            question,
            history,
            fan_out(*sinks),
            self.book,
            output=output,
        )

    def tools(self, words: Words) -> list[AgentTool]:
        """The run's tools, their approvals the fixed policy of ``settings.approve`` (said on
        stderr, and saved with the session)."""
        approver = make_approver(self.settings.approve, words, stdin=io.StringIO())
        if self.book is not None:
            approver = self.book.recorder.approver(approver)
        return run_tools(self.settings, self.files, approver)


def open_served(
    options: RunOptions, stack: ExitStack, note: Callable[[str], None], env: Mapping[str, str]
) -> Served:
    """The setup of ``options`` (its project root resolved), closed with ``stack``: the
    files, the session (locked; what a killed process left open repaired and said through
    ``note``) and the model. ConfigError when approvals would need a person."""
    settings = resolve_settings(options, env)
    if settings.approve == "ask":
        raise ConfigError(
            "--approve ask: a server has nobody to ask; use --approve deny (read-only, the "
            "default) or --approve all (changes allowed without asking)"
        )
    files = stack.enter_context(ProjectFiles(options.root, allow=settings.allow))
    worker = ThreadPoolExecutor(1, thread_name_prefix="minipi-run")
    stack.callback(worker.shutdown)
    book = worker.submit(_session, options, env).result()
    if book is not None:
        stack.callback(lambda: worker.submit(book.close).result())
    model = open_model(settings, env, can_approve=settings.approve == "all")
    stack.callback(model.close)
    served = Served(settings, model, files, worker, book)
    if book is not None:
        for fix in worker.submit(_repair, served, book).result():
            note(f"[session {book.name}] {fix.name} ({fix.call_id}) left open: {fix.output}")
    return served


def _session(options: RunOptions, env: Mapping[str, str]) -> OpenSession | None:
    """The session of ``--session``/``--continue``, locked, or None."""
    if options.session is None and not options.resume:
        return None
    from minipi.session import open_session

    return open_session(options.data_dir or data_dir(env), options.root, options.session)


def _repair(served: Served, book: OpenSession) -> list[Repair]:
    """Answer the calls a killed process left open (never run again, never asked again)."""
    return book.repair(served.tools(Words(False)), ask_again=False)
