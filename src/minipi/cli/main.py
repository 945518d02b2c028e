"""The ``minipi`` command: parse flags, hand over to ``app``, map errors to exit codes."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from minipi import __version__
from minipi.cli.batch import batch
from minipi.cli.options import (
    GroupedCommand,
    loop_options,
    mcp_from,
    mcp_options,
    model_options,
    output_options,
    project_options,
    run_options,
    session_options,
    tool_options,
)
from minipi.local.models import DEFAULT_MODELS_HELP

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["cli", "main"]


def _run_flags(function: F) -> F:
    """The flags ``ask`` and ``chat`` share."""
    for group in (
        session_options,
        output_options,
        mcp_options,
        tool_options,
        loop_options,
        model_options,
        project_options,
    ):
        function = group(function)
    return function


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="minipi")
def cli() -> None:
    """minipi: a small agent loop that answers questions about a project's files."""


_ASK_EXAMPLES = """
# The sample project, with the built-in engine and its tiny model:
minipi ask "How many orders are in the daily report?" -p examples/sample_project
# A question in Chinese (the log and the answer follow its language):
minipi ask "这份日报的营收是多少？" -p examples/sample_project
# A better model, from a GGUF file:
minipi ask "Which animals are in inbox/?" -p examples/shelter --model-file model.gguf
# Any OpenAI-compatible server (minipi serve starts one on port 8021):
minipi ask "What is the revenue?" -p examples/sample_project \\
    --base-url http://127.0.0.1:8021/v1 -m my-model
# The answer as JSON of a shape, each field traced to its file, pointer and line:
minipi ask "日报的日期、订单数和营收？" -p examples/sample_project \
    --schema "date, orders:int, revenue:number"
# One JSON event a line, for a script; the question from stdin:
cat question.txt | minipi ask -p examples/sample_project --json > events.jsonl
"""

_CHAT_EXAMPLES = """
# A conversation about the sample project (Ctrl-D or exit to leave):
minipi chat -p examples/sample_project
# Saved as session shelter (the same command resumes it; -c resumes the last one):
minipi chat -p examples/shelter --session shelter --approve ask
# Any OpenAI-compatible server (minipi serve starts one on port 8021):
minipi chat -p examples/sample_project --base-url http://127.0.0.1:8021/v1 -m my-model
# In the chat: /help lists the commands, /clear starts afresh, /model names the model
"""


@cli.command(cls=GroupedCommand, examples=_ASK_EXAMPLES)
@click.argument("question", required=False)
@_run_flags
def ask(question: str | None, **kwargs: Any) -> None:
    """Answer QUESTION about the project's files, showing each round (QUESTION - or none:
    read it from stdin, as in `cat q.txt | minipi ask`)."""
    from minipi.cli.app import ask as run_ask

    if question is None:
        _project_as_question(kwargs["project"])
    sys.exit(_guard(lambda: run_ask(question, run_options(kwargs))))


def _project_as_question(project: Path | None) -> None:
    """A usage error when ``-p`` was given what reads as the question: a sentence (a space
    or a question mark) that names no folder, and no question besides."""
    text = str(project) if project is not None else ""
    if not any(mark in text for mark in " ?？") or project is None or project.is_dir():
        return
    raise click.UsageError(
        f"no question given, and -p is --project (the folder the tools read), not the "
        f"question: there is no folder {text!r}. Did you mean: "
        f"minipi ask {shlex.quote(text)} [-p DIR]"
    )


@cli.command(cls=GroupedCommand, examples=_CHAT_EXAMPLES)
@_run_flags
def chat(**kwargs: Any) -> None:
    """An interactive conversation; history is kept until exit or Ctrl-D (saved with
    --session NAME; Ctrl-C cancels the current question)."""
    from minipi.cli.chat import chat as run_chat

    sys.exit(_guard(lambda: run_chat(run_options(kwargs))))


@cli.command("config", cls=GroupedCommand)
@tool_options
@loop_options
@model_options
def show_config(**kwargs: Any) -> None:
    """Each effective setting, its value and where it came from (a flag, a variable, the
    config file or the default), for these flags; secrets are never shown."""
    from minipi.cli.show_config import show_config as run_show

    sys.exit(_guard(lambda: run_show(run_options(kwargs).flags)))


@cli.group()
def sessions() -> None:
    """Saved sessions ($MINIPI_DATA_DIR, else $XDG_DATA_HOME/minipi or ~/.local/share/minipi)."""


@sessions.command("list")
@click.option("--project", type=click.Path(path_type=Path), help="Only this project's sessions.")
@click.option("--json", "as_json", is_flag=True, help="Write the list as JSON.")
def list_sessions(project: Path | None, as_json: bool) -> None:
    """Each session: name, project, runs, last update, status of the last run."""
    from minipi.cli import sessions as cmd

    sys.exit(_guard(lambda: cmd.list_sessions(_data_dir(), as_json=as_json, project=project)))


@sessions.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Write every saved step as JSON.")
def show_session(name: str, as_json: bool) -> None:
    """The timeline of session NAME: questions, calls, results, answers, tokens, timings."""
    from minipi.cli import sessions as cmd

    sys.exit(_guard(lambda: cmd.show_session(_data_dir(), name, as_json=as_json)))


@sessions.command("export")
@click.argument("name")
@click.option(
    "--run", "run_number", type=click.IntRange(min=1), help="Only run N (1 is the first)."
)
@click.option(
    "--html",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write one self-contained page (opens offline; every figure links to its source).",
)
@click.option("--md", type=click.Path(path_type=Path, dir_okay=False), help="Write Markdown.")
def export_session(name: str, run_number: int | None, html: Path | None, md: Path | None) -> None:
    """Session NAME as a page to open in a browser (--html) or as Markdown (--md): the
    question, each call with its result, the answer, and where each figure came from."""
    from minipi.cli import sessions as cmd

    sys.exit(
        _guard(lambda: cmd.export_session(_data_dir(), name, run=run_number, html=html, md=md))
    )


@sessions.command("delete")
@click.argument("name")
def delete_session(name: str) -> None:
    """Delete session NAME (refused while a process has it open)."""
    from minipi.cli import sessions as cmd

    sys.exit(_guard(lambda: cmd.delete_session(_data_dir(), name)))


@cli.group()
def mcp() -> None:
    """MCP servers whose tools ask and chat offer (--mcp, --mcp-config), and minipi as an MCP
    server for other agents (serve)."""


@mcp.command("list")
@mcp_options
@click.option("--json", "as_json", is_flag=True, help="Write the list as JSON.")
def list_mcp(as_json: bool, **kwargs: Any) -> None:
    """Each server: its tools, descriptions, read-only or not, and the tokens they add."""
    import os

    from minipi.cli import mcp as cmd

    def run() -> int:
        options = mcp_from(kwargs) or cmd.McpOptions()  # none: list_servers says what to give
        return cmd.list_servers(options, os.environ, _data_dir(), as_json=as_json)

    sys.exit(_guard(run))


_SERVE_EXAMPLES = """
# For a host that starts MCP servers (stdio), e.g. in its mcpServers config:
minipi mcp serve --project examples/sample_project --base-url http://127.0.0.1:8021/v1 -m my-model
# Streamable HTTP on http://127.0.0.1:8765/mcp:
minipi mcp serve --project examples/sample_project --port 8765
# Another minipi asking this one:
minipi ask "What is the revenue?" --mcp 'minipi mcp serve -p examples/sample_project' \\
    --mcp-trust minipi
"""


@mcp.command("serve", cls=GroupedCommand, examples=_SERVE_EXAMPLES)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help="Serve streamable HTTP at http://127.0.0.1:PORT/mcp (0: a free port) instead of stdio.",
)
@session_options
@loop_options
@tool_options
@model_options
@project_options
def serve_mcp(port: int | None, **kwargs: Any) -> None:
    """Serve ask_project (a backed answer: verdict and sources) and read_sources on the
    project to other agents, as an MCP server (stdio; --port: streamable HTTP). Read-only
    unless --approve all."""
    from minipi.cli import mcp as cmd

    sys.exit(_guard(lambda: cmd.serve_project(run_options(kwargs), port)))


def _data_dir() -> Path:
    import os

    from minipi.cli.settings import data_dir

    return data_dir(os.environ)


@cli.command()
@click.option(
    "--model-file",
    type=click.Path(dir_okay=False),
    help="GGUF model [env: MINIPI_MODEL_FILE; config file: model_file; default: "
    f"{DEFAULT_MODELS_HELP}].",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8021, show_default=True)
@click.option(
    "--ctx",
    "n_ctx",
    type=click.IntRange(min=256),
    default=4096,
    show_default=True,
    help="Context size in tokens.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    help="CPU threads (default: half generate, all evaluate prompts).",
)
def serve(model_file: str | None, port: int, n_ctx: int, threads: int | None) -> None:
    """Serve a local GGUF model as an OpenAI-compatible API on 127.0.0.1 (Ctrl-C stops)."""
    from minipi.cli.serve import serve as run_serve

    sys.exit(_guard(lambda: run_serve(model_file, port, n_ctx, threads)))


def _guard(run: Callable[[], int]) -> int:
    """Exit codes in one place: MiniPiError -> message and 2 (config) or 1; Ctrl-C -> 130."""
    from minipi.cli.terminal import safe
    from minipi.errors import AgentError, ConfigError, MiniPiError

    try:
        return run()
    except (ConfigError, AgentError) as error:
        click.echo(f"minipi: error: {safe(str(error))}", err=True)
        return 2
    except MiniPiError as error:
        click.echo(f"minipi: error: {safe(str(error))}", err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("minipi: cancelled", err=True)
        return 130


cli.add_command(batch)


def main() -> None:
    # One name however it is started (``python -m minipi`` too): usage lines and the shell
    # completion variable (_MINIPI_COMPLETE) say minipi.
    cli(prog_name="minipi")
