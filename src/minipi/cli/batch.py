"""``minipi batch TASKS.jsonl --out DIR``: many questions at once, resumable (``minipi.batch``).

At the top only click, the stdlib and the flag groups, which ``minipi.cli.main`` loads
anyway: ``minipi --help`` pays nothing for batch. The rest is imported when it runs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from minipi.cli.options import (
    HEADINGS,
    SECONDS,
    GroupedCommand,
    loop_options,
    model_options,
    run_options,
    tool_options,
)

if TYPE_CHECKING:
    from minipi.agent import AgentTool
    from minipi.agent.events import EventSink
    from minipi.assemble import ModelHandle, Settings
    from minipi.batch import BatchOutcome
    from minipi.cli.words import Words

__all__ = ["BatchTrace", "batch"]

F = TypeVar("F", bound=Callable[..., Any])

WORKERS = 4
"""Tasks run at once on an endpoint, unless ``--workers`` says otherwise."""
LOCAL_WORKERS = 1
"""...and on the local engine: it answers one request at a time (one llama.cpp slot), so a
second worker would only wait in its queue (and see its time limits run out there)."""


class _BatchGroup(click.Group):
    """``minipi batch TASKS.jsonl ...`` runs a batch; ``minipi batch report|show DIR`` reads
    one: any first argument that is not a subcommand's name is the run's."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


BATCH = "Batch"
"""The ``--help`` section of the batch's own flags (before the run flags' sections)."""


class _BatchOption(click.Option):
    """A flag of ``minipi batch`` itself, shown under ``heading``."""

    def __init__(self, *args: Any, heading: str = BATCH, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heading = heading


def _flag(*decls: str, heading: str = BATCH, **kwargs: Any) -> Callable[[F], F]:
    return click.option(*decls, cls=_BatchOption, heading=heading, **kwargs)


class _RunCommand(GroupedCommand):
    """The run: its usage line reads ``minipi batch [OPTIONS] TASKS.jsonl``, and its help
    is grouped as ``ask``'s, the batch's own flags first under "Batch"."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        path = ctx.parent.command_path if ctx.parent is not None else ctx.command_path
        formatter.write_usage(path, " ".join(self.collect_usage_pieces(ctx)))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {BATCH: []}
        sections.update({title: [] for title in HEADINGS.values()})
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and isinstance(param, click.Option):
                sections.setdefault(_heading(param), []).append(record)
        rows = [record for records in sections.values() for record in records]
        width = min(max((len(term) for term, _ in rows), default=0), 30)
        for title, records in sections.items():
            if records:  # the first term padded: every section's help starts in one column
                with formatter.section(title):
                    formatter.write_dl([(records[0][0].ljust(width), records[0][1]), *records[1:]])


def _heading(param: click.Option) -> str:
    """The section of ``param``: a batch flag's own, a run flag's group's, else Other."""
    if isinstance(param, _BatchOption):
        return param.heading
    group = getattr(param, "group", None)  # minipi.cli.options: a key's or _Option's
    return HEADINGS[group] if group else "Other"


_EXAMPLES = """
# Every task of tasks.jsonl on the local engine, one at a time (the same command resumes):
minipi batch tasks.jsonl --out out
# A server that answers many requests at once (vLLM, llama-server --parallel 8):
minipi batch tasks.jsonl --out out --base-url http://gpu-box:8000/v1 -m my-model -w 8
# What came of it: a table on the terminal; a page, each task's transcript a click away:
minipi batch show out
minipi batch report out --html report.html
"""


@click.group(cls=_BatchGroup)
def batch() -> None:
    """Many questions at once (minipi batch TASKS.jsonl --out DIR; --help for its options),
    and what a batch directory holds (report, show)."""


@batch.command("report")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--html",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The page to write (each task's transcript goes in FILE's folder, STEM.tasks/).",
)
def report(directory: Path, html: Path) -> None:
    """A page of every task of DIR: the totals, a breakdown by status, a sortable table;
    each row opens that task's transcript."""
    from minipi.cli.batch_report import report_batch
    from minipi.cli.main import _guard

    sys.exit(_guard(lambda: report_batch(directory, html)))


@batch.command("show")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path, file_okay=False))
def show(directory: Path) -> None:
    """The totals and a table of every task of DIR on the terminal, in id order."""
    from minipi.cli.batch_report import show_batch
    from minipi.cli.main import _guard

    sys.exit(_guard(lambda: show_batch(directory)))


@batch.command("run", cls=_RunCommand, hidden=True, examples=_EXAMPLES)
@click.argument(
    "tasks_file", metavar="TASKS.jsonl", type=click.Path(path_type=Path, dir_okay=False)
)
@_flag(
    "-o",
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="The batch directory: results.jsonl, traces/, summary.json. Run the same command "
    "again to resume it.",
)
@_flag(
    "-w",
    "--workers",
    type=click.IntRange(1, 256),
    metavar="N",
    help=f"Tasks run at once [default: {WORKERS}; {LOCAL_WORKERS} with the local engine, which "
    "answers one request at a time: more workers would only wait in its queue].",
)
@_flag(
    "--max-connections",
    type=click.IntRange(1, 100),
    metavar="N",
    help="Model requests at once, all workers together [default: --workers; 1 for the "
    "local engine, which answers one at a time].",
)
@_flag(
    "--task-timeout",
    type=SECONDS,
    help="Seconds each task may take (its --max-seconds; the smaller wins): then it ends "
    "budget_exhausted.",
)
@_flag(
    "--force",
    is_flag=True,
    help="Go on in a directory whose results were made with other options or tasks.",
)
@_flag(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    metavar="[ADDRESS]",
    help="Run the tasks on Ray: alone, a new local instance; or a cluster's address "
    "(--ray=auto, --ray=ray://HOST:10001). Needs minipi[ray].",
)
@_flag(
    "--allow-broad-root",
    heading=HEADINGS["project"],
    is_flag=True,
    help="Let a task's project be /, your home directory itself, or a directory of secrets "
    "(~/.aws, ~/.ssh, minipi's own config and data).",
)
@_flag(
    "--otel",
    heading=HEADINGS["output"],
    is_flag=True,
    help="Send OpenTelemetry spans of each task's run over OTLP/HTTP to "
    "$OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318), as ask --otel does; needs "
    "pip install 'minipi[otel]'.",
)
@tool_options
@loop_options
@model_options
def run_batch_command(
    tasks_file: Path,
    out: Path,
    workers: int | None,
    max_connections: int | None,
    task_timeout: float | None,
    force: bool,
    ray_address: str | None,
    allow_broad_root: bool,
    otel: bool,
    **kwargs: Any,
) -> None:
    """Answer every task of TASKS.jsonl, one JSON object a line: {"id": "t1", "question":
    "...", "project": "DIR", "expect": ["..."], "max_turns": 8, "schema": "date,
    orders:int"} (expect, max_turns and schema optional; schema asks for the answer as JSON
    of that shape, each field traced, as ask --schema; a relative project is taken from the
    task file's folder). Each finished task
    is a line of DIR/results.jsonl (its trace in DIR/traces/ID.json); a second run skips
    them. Nobody is asked to approve a change: --approve deny (the default) or all. Exit 0
    when every task succeeded, 1 when one did not (or a line was not a task), 4 when every
    one did and an answer is unbacked (as minipi ask), 130 after Ctrl-C. Then: minipi batch
    show DIR (a table), minipi batch report DIR --html FILE."""
    from minipi.batch import BatchOptions
    from minipi.cli.main import _guard

    options = BatchOptions(tasks_file, out, workers or WORKERS, max_connections, force, ray_address)

    def run() -> int:
        return _run(options, workers, task_timeout, allow_broad_root, otel, kwargs)

    sys.exit(_guard(run))


def _run(
    options: Any,
    workers: int | None,
    task_timeout: float | None,
    allow_broad_root: bool,
    otel: bool,
    kwargs: dict[str, Any],
) -> int:
    from dataclasses import replace

    from minipi.batch import Plan, run_batch
    from minipi.cli.app import EXIT_UNBACKED
    from minipi.cli.settings import resolve_settings
    from minipi.cli.words import Words

    run = run_options(kwargs)
    if otel:  # the exporter set up now: a missing extra stops nothing started
        from minipi.otel import tracing

        tracing()
    settings = _batch_approval(resolve_settings(run), run.flags.get("approve"))
    chinese = _in_chinese(options.tasks_file)
    words = Words(bool(chinese))
    options = replace(options, workers=_workers(workers, settings, options.ray))
    if chinese is not None and options.ray is None:  # Ray says its own start line
        _start_line(options.workers, workers, words)
    plan = Plan(
        settings,
        os.environ,
        task_timeout,
        trace=BatchTrace(),
        check_root=partial(task_root, allow_broad_root, options.out),
        spans=otel,
    )
    outcome = run_batch(options, plan)
    _show(outcome, options.out, words)
    if outcome.stopped:
        return 130
    if not outcome.all_succeeded:
        return 1  # a task that did not end is worse news than an answer not backed
    unbacked = outcome.summary["verdicts"].get("unbacked", 0)
    return EXIT_UNBACKED if unbacked else 0


def _in_chinese(tasks_file: Path) -> bool | None:
    """Whether the batch speaks Chinese (its start and closing lines): when most of its
    questions are written in Chinese. None when the file holds no task (``run_batch`` says
    why, and no start line is shown before it)."""
    from minipi.batch import load_tasks
    from minipi.language import written_in_chinese

    try:
        tasks, _ = load_tasks(tasks_file)
    except OSError:
        return None
    if not tasks:
        return None
    return 2 * sum(written_in_chinese(task.question) for task in tasks) > len(tasks)


def _workers(given: int | None, settings: Settings, ray: str | None) -> int:
    """``--workers``, else one on the local engine (it answers one request at a time: a
    second worker would only wait in its queue), else ``WORKERS``. On Ray each worker opens
    its own engine: ``WORKERS`` there."""
    if given is not None:
        return given
    local = settings.base_url is None or settings.model_file is not None
    return LOCAL_WORKERS if local and ray is None else WORKERS


def _start_line(workers: int, given: int | None, words: Words) -> None:
    """How many tasks run at once, and why one when the local engine chose it."""
    defaulted = given is None and workers == LOCAL_WORKERS
    line = words("batch_start_local") if defaulted else words("batch_start", workers=workers)
    print(line, file=sys.stderr, flush=True)


def _batch_approval(settings: Settings, flag: str | None) -> Settings:
    """``ask`` is refused: a batch has nobody to ask. A batch changes things only when its
    own command line or environment says ``--approve all``: the config file's ``approve =
    "all"`` is a default for runs a person watches, and reaches no batch (it is said so)."""
    from dataclasses import replace

    from minipi.cli.settings import resolve_one
    from minipi.errors import ConfigError

    _, source = resolve_one("approve", flag, os.environ)
    if settings.approve == "ask":
        raise ConfigError(
            "--approve ask needs a person at a terminal, and a batch has none (approve from "
            f"{source}): use --approve deny (read-only, the default) or --approve all "
            "(changes allowed, nobody asked)"
        )
    if source.startswith("config file") and settings.approve == "all":
        print(
            f'minipi batch: approve = "all" in the {source} is not used: a batch is '
            "read-only unless its command line says --approve all",
            file=sys.stderr,
            flush=True,
        )
        return replace(settings, approve="deny")
    return settings


def _show(outcome: BatchOutcome, out: Path, words: Words) -> None:
    """The closing lines: the figures, where they are, what to do next, and the commands
    that show every task (in the batch's language)."""
    from shlex import quote

    from minipi.batch import summary_lines
    from minipi.cli.terminal import safe

    lines = summary_lines(outcome.summary, chinese=words.chinese)
    results, summary = out / "results.jsonl", out / "summary.json"
    lines.append(words("batch_results", results=results, summary=summary))
    if outcome.problems:
        lines.append(words("batch_fix_lines"))
    elif outcome.stopped or outcome.summary["pending"]:
        lines.append(words("batch_again"))
    if outcome.summary["finished"]:
        where = quote(str(out))
        page = quote(str(out / "report.html"))
        lines.append(words("batch_show", command=f"minipi batch show {where}"))
        lines.append(words("batch_report", command=f"minipi batch report {where} --html {page}"))
    print(safe("\n".join(lines)), flush=True)


def task_root(allow_broad_root: bool, out: Path, project: Path) -> Path:
    """A task's project as the tools' root: the rule of ``--project`` (``/``, the home
    directory, a directory of secrets and minipi's own refused unless ``--allow-broad-root``;
    one holding minipi's own where the sensitive-path guard cannot see it, always), and never
    one that holds the batch directory or lies in it (its tools would read the other tasks'
    traces, or move ``results.jsonl``)."""
    from minipi.cli.settings import RunOptions, project_root
    from minipi.errors import ConfigError
    from minipi.files.paths import is_within

    root = project_root(RunOptions(project=project, allow_broad_root=allow_broad_root))
    batch_dir = os.path.realpath(out)
    if is_within(root, batch_dir) or is_within(batch_dir, root):
        raise ConfigError(
            f"the project {root} and the batch directory {batch_dir} overlap: the task's "
            "tools could read the other tasks' traces or move results.jsonl; use an --out "
            "outside every project",
            code="batch_dir_in_project",
        )
    return root


class BatchTrace:
    """``--trace``'s recorder for each task (``minipi.cli.trace``), the header made once per
    model: it holds the model file's sha256, which takes about a second a GB to compute."""

    def __init__(self) -> None:
        self._headers: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # shipped to Ray workers: without the cache
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._headers = {}
        self._lock = threading.Lock()

    def __call__(
        self,
        path: Path,
        settings: Settings,
        model: ModelHandle,
        tools: Sequence[AgentTool],
        project: Path,
    ) -> EventSink:
        from minipi.cli.trace import TraceRecorder, trace_header

        with self._lock:
            header = self._headers.get(id(model))
            if header is None:
                header = trace_header(settings, model, tools, project)
                self._headers[id(model)] = header
        return TraceRecorder(path, {**header, "project": str(project)})
