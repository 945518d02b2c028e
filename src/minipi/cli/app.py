"""What ``minipi ask`` does, and the setup ``minipi chat`` shares (``chat.py``): settings ->
library -> sinks -> exit code."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TextIO

from minipi.agent import AgentEvent, AgentTool, RunResult
from minipi.agent.ends import EXIT_CODES, status_of
from minipi.agent.events import fan_out
from minipi.ai.types import Item, ModelClient
from minipi.assemble import ModelHandle, Settings, open_model, run_tools
from minipi.cli.approve import make_approver
from minipi.cli.evidence import cited_lines, evidence_lines
from minipi.cli.render import HumanLog, JsonLines, answer_shown, colour_allowed, fit, terminal_width
from minipi.cli.runner import run_question
from minipi.cli.settings import RunOptions, data_dir, project_root, resolve_settings
from minipi.cli.status import Ticker
from minipi.cli.terminal import safe
from minipi.cli.trace import TraceRecorder, trace_header
from minipi.cli.words import Words, words_for
from minipi.errors import ConfigError, MiniPiError
from minipi.files import ProjectFiles
from minipi.files.sandbox import ReadCache

if TYPE_CHECKING:
    from minipi.mcp import McpTools
    from minipi.session import OpenSession

__all__ = ["EXIT_UNBACKED", "ask", "exit_code"]

EXIT_UNBACKED = 4
"""The exit code of a run that succeeded with an ``unbacked`` answer (a claim in no tool
result, or an answer too long to check whole): a script is not told 0 for an answer minipi
itself marks unsupported. Its status stays ``succeeded`` (``--json``'s ``run_end``)."""


@dataclass
class _Session:
    """What one CLI invocation holds open: the model, the project's files, the run config."""

    settings: Settings
    model: ModelHandle
    files: ProjectFiles
    ticker: Ticker | None = None
    """The status line (a terminal, not --json)."""
    mcp: McpTools | None = None
    started: float | None = None
    """The ``time.monotonic()`` the command started at (``--max-seconds`` of ask counts from
    it)."""
    reads: ReadCache | None = None
    """The files this conversation read, reused while unchanged (a chat's; ``ReadCache``)."""

    @property
    def client(self) -> ModelClient:
        return self.model.client

    def close(self) -> None:
        if self.ticker is not None:
            self.ticker.close()
        self.model.close()
        self.files.close()


def _open(
    options: RunOptions, settings: Settings, words: Words, deadline: float | None = None
) -> _Session:
    ticker = Ticker(sys.stderr) if sys.stderr.isatty() and not options.json else None
    files = ProjectFiles(options.root, allow=settings.allow)
    can_approve = settings.approve == "all" or (settings.approve == "ask" and _interactive())
    try:
        model = _open_model(settings, can_approve, ticker, words, deadline)
    except BaseException:
        files.close()
        if ticker is not None:
            ticker.close()
        raise
    return _Session(settings, model, files, ticker)


def _open_model(
    settings: Settings,
    can_approve: bool,
    ticker: Ticker | None,
    words: Words,
    deadline: float | None = None,
) -> ModelHandle:
    """The model, with the status line ticking while an engine starts or a model downloads;
    an engine started now is ready by ``deadline`` or fails ``max_seconds``."""
    if ticker is None:
        return open_model(settings, os.environ, can_approve=can_approve, deadline=deadline)

    def report(message: str) -> None:
        with ticker.writing():
            print(safe(f"minipi: {message}"), file=sys.stderr, flush=True)

    ticker.show(words("status_start"))
    try:
        return open_model(
            settings, os.environ, can_approve=can_approve, report=report, deadline=deadline
        )
    finally:
        ticker.hide()


def _sinks(
    options: RunOptions,
    words: Words,
    session: _Session,
    tools: Sequence[AgentTool],
    book: OpenSession | None = None,
) -> Callable[[AgentEvent], None]:
    sinks: list[Callable[[AgentEvent], None]] = []
    if options.json:
        sinks.append(JsonLines())
    elif not options.quiet:
        sinks.append(HumanLog(words, ticker=session.ticker, verbose=options.verbose))
    if book is not None:
        sinks.insert(0, book.recorder)  # saved before it is shown, and before the next step
    if options.trace is not None:
        header = trace_header(session.settings, session.model, tools, options.root)
        sinks.append(TraceRecorder(options.trace, header))
    if options.otel:  # the run's spans (the provider was set up with the options)
        from minipi.otel import span_sink, tracing

        sinks.append(span_sink(tracing(), base_url=session.model.base_url))

    return fan_out(*sinks)  # every sink sees every event; the first error is raised


def _tools(
    session: _Session,
    options: RunOptions,
    words: Words,
    stdin: TextIO | None,
    book: OpenSession | None,
) -> list[AgentTool]:
    approver = make_approver(session.settings.approve, words, stdin, ticker=session.ticker)
    if book is not None:
        approver = book.recorder.approver(approver)  # each question and answer saved
    # MCP tools that change things ask: server, tool, arguments
    extra = session.mcp.with_approval(approver) if session.mcp is not None else []
    return run_tools(session.settings, session.files, approver, extra, reads=session.reads)


def _run(
    session: _Session,
    options: RunOptions,
    question: str,
    history: Sequence[Item],
    stdin: TextIO | None = None,
    book: OpenSession | None = None,
    *,
    started: float | None = None,
) -> RunResult:
    """One question's run; its ``--max-seconds`` counts from ``started`` (ask's start: the
    servers' start was part of it), else from now (each question of a chat)."""
    words = words_for(question)
    tools = _tools(session, options, words, stdin, book)
    emit = _sinks(options, words, session, tools, book)
    return run_question(
        session.model,
        session.settings,
        session.files,
        tools,
        question,
        history,
        emit,
        book,
        started=started,
        mcp=session.mcp,
        output=options.schema,
    )


def _start(
    options: RunOptions,
    stack: ExitStack,
    stdin: TextIO | None,
    words: Words,
    *,
    auto: bool = False,
    question: str | None = None,
) -> tuple[OpenSession | None, _Session, list[Item]]:
    """The session (locked), the model and files, and the history to go on from; all
    closed when ``stack`` closes. ``auto``: without --session, a session of its own. The
    start counts against ``--max-seconds`` (``_Session.started``): an MCP server not ready
    by then fails it with code ``max_seconds``. A ``question`` only withheld MCP tools fit
    is refused before the model starts (``refuse_withheld``)."""
    started = time.monotonic()
    book = _hold(options, stack)
    if book is None and auto:
        book = _hold_unnamed(options, stack)
    settings = resolve_settings(options)
    deadline = None if settings.max_seconds is None else started + settings.max_seconds
    mcp = _start_mcp(options, stack, deadline)  # before the model: a bad server fails in seconds
    if mcp is not None and question is not None:
        from minipi.cli.mcp import refuse_withheld

        with closing(ProjectFiles(options.root, allow=settings.allow)) as files:
            refuse_withheld(mcp, settings, files, question)
    session = _open(options, settings, words, deadline)
    stack.callback(session.close)
    session.mcp, session.started = mcp, started
    if mcp is not None:
        from minipi.cli.mcp import offer_lines

        for line in offer_lines(mcp, session.settings.approve, words):
            _note(line)
    return book, session, _resume(book, session, options, stdin)


def _start_mcp(options: RunOptions, stack: ExitStack, deadline: float | None) -> McpTools | None:
    """The configured MCP servers' tools, stopped when ``stack`` closes: ``open_for_run``'s,
    with every server ready by ``deadline`` (``McpConfig.deadline``)."""
    if options.mcp is None:
        return None
    from minipi.cli.mcp import open_for_run

    directory = options.data_dir or data_dir(os.environ)
    tools = open_for_run(options.mcp, os.environ, directory, options.root, deadline=deadline)
    return stack.enter_context(tools)


def _hold(options: RunOptions, stack: ExitStack) -> OpenSession | None:
    """The session named by --session or --continue, locked until ``stack`` closes."""
    if options.session is None and not options.resume:
        return None
    from minipi.cli.settings import data_dir
    from minipi.session import open_session  # sqlite3 and the store: only when asked for

    directory = options.data_dir or data_dir(os.environ)
    book = open_session(directory, options.root, options.session)
    stack.callback(book.close)
    return book


def _hold_unnamed(options: RunOptions, stack: ExitStack) -> OpenSession | None:
    """A chat without --session is recorded all the same, as ``chat-DATE-TIME-PID`` (said at
    exit; one that asked nothing leaves no session). Where the store cannot be used, the
    chat runs unrecorded and says at exit how to keep one."""
    from minipi.session import open_session

    name = time.strftime("chat-%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    try:
        book = open_session(options.data_dir or data_dir(os.environ), options.root, name)
    except MiniPiError as error:
        stack.callback(
            _note,
            f"minipi: this chat was not saved ({error}); keep one with: minipi chat --session NAME",
        )
        return None
    stack.callback(_leave_unnamed, book)
    return book


def _leave_unnamed(book: OpenSession) -> None:
    """Say where the chat was saved, or drop its session if it holds no question."""
    try:
        kept = book.runs() > 0
        if not kept:
            book.store.delete(book.info.id)
    finally:
        book.close()
    if kept:
        _note(
            f"[session {book.name}] saved: minipi sessions show {book.name} (or export it); "
            f"go on with: minipi chat --session {book.name}"
        )


def _resume(
    book: OpenSession | None, session: _Session, options: RunOptions, stdin: TextIO | None
) -> list[Item]:
    """The saved history, after answering the calls a killed process left open."""
    if book is None:
        return []
    words = words_for(book.last_question())
    for run in book.unfinished():
        _note(f"[session {book.name}] an earlier run did not finish: {run.question}")
    tools = _tools(session, options, words, stdin, book)
    for fix in book.repair(tools, ask_again=session.settings.approve == "ask"):
        _note(f"[session {book.name}] {fix.name} ({fix.call_id}) left open: {fix.output}")
    return book.history()


def _note(text: str) -> None:
    print(safe(text), file=sys.stderr, flush=True)


def ask(question: str | None, options: RunOptions) -> int:
    """Answer one question (None or ``-``: read from stdin); print the answer on stdout
    (unless --json); return the exit code."""
    question = _read_question(question)
    words = words_for(question)
    options, by_default = _rooted(options)
    try:
        with ExitStack() as stack:
            book, session, history = _start(options, stack, None, words, question=question)
            _say_root(options, words, by_default)
            result = _run(session, options, question, history, book=book, started=session.started)
            _show(result, options, words)  # before MCP servers and the model stop
    except KeyboardInterrupt:  # before the run began (the engine starting), in its language
        _note(words("cancelled_start"))
        return EXIT_CODES["cancelled"]
    except MiniPiError as error:
        return _out_of_time(error)
    return exit_code(result)


def exit_code(result: RunResult) -> int:
    """The status's exit code (``EXIT_CODES``), except ``EXIT_UNBACKED`` for a run that
    succeeded with an ``unbacked`` verdict; a ``weak`` one exits 0 (its summary is yellow)."""
    verdict = result.verdict
    if result.succeeded and verdict is not None and verdict.kind == "unbacked":
        return EXIT_UNBACKED
    return EXIT_CODES[result.status]


def _out_of_time(error: MiniPiError) -> int:
    """The exit code of a start that ``--max-seconds`` ended (a server or the engine not
    ready in time: code ``max_seconds``), said as a run's end is; other errors go on up."""
    status = status_of(error.code)
    if status != "budget_exhausted":
        raise error
    _note(f"minipi: {status}: {error.code}: {error}")
    return EXIT_CODES[status]


def _read_question(question: str | None) -> str:
    """The question as given, or the whole of stdin for ``-`` or none (``cat q.txt |``)."""
    if question is not None and question != "-":
        text = question
    elif question is None and sys.stdin.isatty():
        raise ConfigError(
            'no question: give one (minipi ask "...") or pipe it in (cat q.txt | minipi ask -)'
        )
    else:
        text = sys.stdin.read()
    if not text.strip():
        raise ConfigError("the question is empty: say what you want to know about the project")
    return text.strip()


def _rooted(options: RunOptions) -> tuple[RunOptions, bool]:
    """``options`` with the project root resolved (refused if too broad), and whether it
    was the current directory by default."""
    return replace(options, project=project_root(options)), options.project is None


def _say_root(options: RunOptions, words: Words, by_default: bool) -> None:
    """Which root the tools are confined to (once the run is set up; not with --json)."""
    if not (options.json or options.quiet):
        where = words("project_cwd") if by_default else ""
        print(safe(words("project", root=options.root) + where), file=sys.stderr, flush=True)


def _show(result: RunResult, options: RunOptions, words: Words, *, answer: bool = True) -> None:
    """The answer on stdout (unless the log showed it on the same terminal; on a terminal
    under minipi's heading, behind the gutter), then the sources of its figures on stderr
    (not with --json: ``run_end`` carries both)."""
    if options.json:
        return
    marked = sys.stderr.isatty()  # the answer and minipi's blocks mix on one terminal
    if result.output is not None:  # --schema: the JSON alone, for a program to read
        print(result.answer, flush=True)
    elif result.succeeded and answer:
        print(answer_shown(result.answer, words, sys.stdout, marked=marked), flush=True)
    lines = cited_lines(result.facts, words, marked=marked) if result.succeeded else []
    if result.evidence is not None:
        fancy, verbose = colour_allowed(sys.stderr), options.verbose
        shown = result.evidence.to_json()
        lines += evidence_lines(shown, words, fancy=fancy, verbose=verbose, marked=marked)
    if lines:
        print(fit("\n".join(lines), terminal_width(sys.stderr)), file=sys.stderr, flush=True)
    if options.quiet and result.succeeded:  # the verdict, one line: the log is off
        _note(f"minipi: {words.status_of(result)}")
    elif options.quiet:
        detail = str(result.error).replace("\n", "\\n")
        _note(f"minipi: {result.status}: {result.code}: {detail}")


def _interactive() -> bool:
    return sys.stdin.isatty()
