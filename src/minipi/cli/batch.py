"""``minipi batch TASKS.jsonl --out DIR``: many questions at once, resumable (``minipi.batch``).

At the top only click, the stdlib and the flag groups, which ``minipi.cli.main`` loads
anyway: ``minipi --help`` pays nothing for batch. The rest is imported when it runs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from minipi.cli.options import SECONDS, loop_options, model_options, run_options, tool_options

if TYPE_CHECKING:
    from minipi.agent import AgentTool
    from minipi.agent.events import EventSink
    from minipi.assemble import ModelHandle, Settings
    from minipi.batch import BatchOutcome

__all__ = ["BatchTrace", "batch"]


class _BatchGroup(click.Group):
    """``minipi batch TASKS.jsonl ...`` runs a batch; ``minipi batch report|show DIR`` reads
    one: any first argument that is not a subcommand's name is the run's."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


class _RunCommand(click.Command):
    """The run, whose usage line reads ``minipi batch [OPTIONS] TASKS.jsonl``."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        path = ctx.parent.command_path if ctx.parent is not None else ctx.command_path
        formatter.write_usage(path, " ".join(self.collect_usage_pieces(ctx)))


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


@batch.command("run", cls=_RunCommand, hidden=True)
@click.argument(
    "tasks_file", metavar="TASKS.jsonl", type=click.Path(path_type=Path, dir_okay=False)
)
@click.option(
    "-o",
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The batch directory: results.jsonl, traces/, summary.json. Run the same command "
    "again to resume it.",
)
@click.option(
    "-w",
    "--workers",
    type=click.IntRange(1, 256),
    default=4,
    show_default=True,
    help="Tasks run at once.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1, 100),
    help="Model requests at once, all workers together [default: --workers; 1 for the "
    "local engine, which answers one at a time].",
)
@click.option(
    "--task-timeout",
    type=SECONDS,
    help="Seconds each task may take (its --max-seconds; the smaller wins): then it ends "
    "budget_exhausted.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Go on in a directory whose results were made with other options or tasks.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    metavar="[ADDRESS]",
    help="Run the tasks on Ray: alone, a new local instance; or a cluster's address "
    "(--ray=auto, --ray=ray://HOST:10001). Needs minipi[ray].",
)
@click.option(
    "--allow-broad-root",
    is_flag=True,
    help="Let a task's project be /, your home directory itself, or a directory of secrets "
    "(~/.aws, ~/.ssh, minipi's own config and data).",
)
@tool_options
@loop_options
@model_options
def run_batch_command(
    tasks_file: Path,
    out: Path,
    workers: int,
    max_connections: int | None,
    task_timeout: float | None,
    force: bool,
    ray_address: str | None,
    allow_broad_root: bool,
    **kwargs: Any,
) -> None:
    """Answer every task of TASKS.jsonl, one JSON object a line: {"id": "t1", "question":
    "...", "project": "DIR", "expect": ["..."], "max_turns": 8} (expect and max_turns
    optional; a relative project is taken from the task file's folder). Each finished task
    is a line of DIR/results.jsonl (its trace in DIR/traces/ID.json); a second run skips
    them. Nobody is asked to approve a change: --approve deny (the default) or all. Exit 0
    when every task succeeded, 1 when one did not (or a line was not a task), 4 when every
    one did and an answer is unbacked (as minipi ask), 130 after Ctrl-C. Then: minipi batch
    show DIR (a table), minipi batch report DIR --html FILE."""
    from minipi.batch import BatchOptions
    from minipi.cli.main import _guard

    options = BatchOptions(tasks_file, out, workers, max_connections, force, ray_address)

    def run() -> int:
        return _run(options, task_timeout, allow_broad_root, kwargs)

    sys.exit(_guard(run))


def _run(
    options: Any, task_timeout: float | None, allow_broad_root: bool, kwargs: dict[str, Any]
) -> int:
    from minipi.batch import Plan, run_batch
    from minipi.cli.app import EXIT_UNBACKED
    from minipi.cli.settings import resolve_settings

    run = run_options(kwargs)
    settings = _batch_approval(resolve_settings(run), run.flags.get("approve"))
    plan = Plan(
        settings,
        os.environ,
        task_timeout,
        trace=BatchTrace(),
        check_root=partial(task_root, allow_broad_root, options.out),
    )
    outcome = run_batch(options, plan)
    _show(outcome, options.out)
    if outcome.stopped:
        return 130
    if not outcome.all_succeeded:
        return 1  # a task that did not end is worse news than an answer not backed
    unbacked = outcome.summary["verdicts"].get("unbacked", 0)
    return EXIT_UNBACKED if unbacked else 0


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


def _show(outcome: BatchOutcome, out: Path) -> None:
    from minipi.batch import summary_lines
    from minipi.cli.terminal import safe

    lines = summary_lines(outcome.summary)
    lines.append(f"  results: {out / 'results.jsonl'}; summary: {out / 'summary.json'}")
    if outcome.problems:
        lines.append("  fix the lines named above and run the same command to run them")
    elif outcome.stopped or outcome.summary["pending"]:
        lines.append("  run the same command again to finish the rest")
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
