"""One task, start to end: its project, its tools, the loop, its trace, its record.

``run_task`` never raises for what one task can get wrong (a missing project, an endpoint
that fails, a tool that crashes): that task's record says so and the batch goes on. It
raises ``ConfigError``/``AgentError`` only for what is wrong with the whole batch's
configuration (an unknown ``--require-tool``, an option that cannot be sent): every task
would fail alike, so the batch stops instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from minipi.agent import AgentTool, ApprovalRequest, Approver, run_agent
from minipi.agent.events import EventSink, fan_out
from minipi.ai.types import Item
from minipi.assemble import ModelHandle, Settings, agent_config, run_tools
from minipi.batch.gate import Gate, GatedClient
from minipi.batch.journal import history_for, open_journal
from minipi.batch.moves import with_identity
from minipi.batch.records import Record, failed_record, record_of
from minipi.batch.tasks import Task
from minipi.errors import MiniPiError
from minipi.files import ProjectFiles
from minipi.session import OpenSession

__all__ = ["Plan", "TraceFactory", "flush_spans", "run_task", "task_settings"]


class TraceFactory(Protocol):
    """Makes the sink that writes one task's trace to ``path`` (the CLI passes a
    ``minipi.cli.trace.TraceRecorder`` maker; batch itself knows no trace format)."""

    def __call__(
        self,
        path: Path,
        settings: Settings,
        model: ModelHandle,
        tools: Sequence[AgentTool],
        project: Path,
    ) -> EventSink: ...


def _same_root(project: Path) -> Path:
    return project


@dataclass(frozen=True)
class Plan:
    """How every task of a batch runs; plain data and module-level functions, so that Ray
    can ship it to its workers."""

    settings: Settings
    env: Mapping[str, str] = field(default_factory=dict)
    """Passed to ``open_model`` to find a local model file (``MINIPI_MODEL_FILE``...)."""
    task_timeout: float | None = None
    """Each task's wall-clock budget (the run's ``max_seconds``; the smaller one wins)."""
    trace: TraceFactory | None = None
    check_root: Callable[[Path], Path] = _same_root
    """The task's project as the root to confine the tools to, or ``ConfigError`` (the CLI
    refuses ``/`` and the home directory unless ``--allow-broad-root``)."""
    spans: bool = False
    """Each task's run as OpenTelemetry spans (``minipi.otel``), exported by the process that
    runs it (``--otel``)."""


def task_settings(plan: Plan, task: Task) -> Settings:
    """The batch's settings with this task's own ``max_turns`` and the task timeout."""
    changes: dict[str, Any] = {}
    if task.max_turns is not None:
        changes["max_turns"] = task.max_turns
    limits = [s for s in (plan.settings.max_seconds, plan.task_timeout) if s is not None]
    if limits:
        changes["max_seconds"] = min(limits)
    return replace(plan.settings, **changes) if changes else plan.settings


def _allow(request: ApprovalRequest) -> bool:
    """``--approve all``: nobody is asked (a batch has no one to ask)."""
    return True


def _deny(request: ApprovalRequest) -> bool:
    return False


def run_task(
    task: Task,
    plan: Plan,
    model: ModelHandle,
    gate: Gate,
    trace: Path | None = None,
    on_event: EventSink | None = None,
    journal: Path | None = None,
) -> Record:
    """Run ``task`` on ``model`` behind ``gate``; its trace goes to ``trace`` (named in the
    record as ``traces/NAME``), and every event to ``on_event`` too (a caller's own tally,
    such as ``bench/local_tasks.py``'s tokens per turn). With ``journal`` (a directory), a
    task that may change things saves each step there and resumes from it after a kill
    (``minipi.batch.journal``)."""
    started = time.perf_counter()
    settings = task_settings(plan, task)
    with ExitStack() as stack:
        try:
            root = plan.check_root(task.project)
            files = stack.enter_context(ProjectFiles(root, allow=settings.allow))
            changes = journal if settings.approve == "all" else None
            book = stack.enter_context(open_journal(changes, task, root))
        except MiniPiError as error:
            seconds = time.perf_counter() - started
            return failed_record(task, "bad_project", error.message, seconds)
        tools = run_tools(settings, files, _approver(settings, book, files.root))
        asked = _begin(book, tools, task.question, model)
        traced = None
        if plan.trace is not None and trace is not None:
            traced = plan.trace(trace, settings, model, tools, root)
        recorder = book.recorder if book is not None else None  # first: saved before shown
        spans = _span_sink(model) if plan.spans else None
        sink = fan_out(*(s for s in (recorder, traced, spans, on_event) if s is not None))
        client = GatedClient(model.client, gate)
        config = agent_config(settings, model, tools, question=task.question, files=files)
        result = run_agent(client, tools, config, asked, sink, output=task.schema)
    shown = f"traces/{trace.name}" if traced is not None and trace is not None else None
    return record_of(task, result, time.perf_counter() - started, shown)


def _span_sink(model: ModelHandle) -> EventSink:
    """The spans of one task's run, to this process's exporter (``minipi.otel.tracing``)."""
    from minipi.otel import span_sink, tracing

    return span_sink(tracing(), base_url=model.base_url)


def flush_spans() -> None:
    """Send the spans this process holds now (a Ray worker may be stopped without its exit
    hook); the CLI's own process flushes at exit."""
    from minipi.otel.export import otlp_provider

    otlp_provider().force_flush()


def _approver(settings: Settings, book: OpenSession | None, root: str) -> Approver:
    """``--approve all`` or deny; with a journal, each approval saved before its change,
    with the identity of a file to move (what proves the move made after a kill)."""
    approver: Approver = _allow if settings.approve == "all" else _deny
    return approver if book is None else with_identity(root, book.recorder.approver(approver))


def _begin(
    book: OpenSession | None, tools: Sequence[AgentTool], question: str, model: ModelHandle
) -> str | list[Item]:
    """What the run is asked: the question, or after a kill the journal's history (its open
    calls answered, never re-run) and the question again."""
    if book is None:
        return question
    asked, _ = history_for(book, tools, question)
    book.recorder.begin_run(question, model.client.model)
    return asked


def crashed(task: Task, error: BaseException, seconds: float) -> Record:
    """The record of a task whose run raised (a bug in minipi or a tool): it failed alone."""
    what = f"{type(error).__name__}: {error}"[:500]
    return failed_record(
        task, "task_crashed", f"minipi crashed on this task ({what}); please report it", seconds
    )
