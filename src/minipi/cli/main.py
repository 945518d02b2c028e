"""The ``minipi`` command: parse flags, hand over to ``app``, map errors to exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from minipi import __version__

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["cli", "main"]


def _run_options(function: F) -> F:
    """The flags ``ask`` and ``chat`` share."""
    options = [
        click.option(
            "--project",
            type=click.Path(path_type=Path),
            default=Path("."),
            show_default=True,
            help="Project root the file tools are confined to.",
        ),
        click.option(
            "--base-url", help="OpenAI-compatible base URL [env: QWEN_BASE_URL, OPENAI_BASE_URL]."
        ),
        click.option("--model", help="Model name [env: QWEN_MODEL, OPENAI_MODEL]."),
        click.option("--api-key", help="API key [env: OPENAI_API_KEY]."),
        click.option(
            "--wire",
            type=click.Choice(["chat", "responses"]),
            help="Wire API: /chat/completions (default) or /responses.",
        ),
        click.option(
            "--max-turns",
            type=click.IntRange(min=1),
            default=8,
            show_default=True,
            help="Model requests allowed; the calls of the last one still run.",
        ),
        click.option(
            "--max-tool-calls", type=click.IntRange(min=1), help="Tool calls allowed in the run."
        ),
        click.option(
            "--max-seconds",
            type=click.FloatRange(min=0, min_open=True),
            help="Wall-clock budget of the run (checked before each request and while a reply "
            "streams).",
        ),
        click.option(
            "--require-tool",
            "required_tools",
            multiple=True,
            metavar="NAME",
            help="A tool that must succeed first (repeat for an order).",
        ),
        click.option(
            "--approve",
            type=click.Choice(["ask", "deny", "all"]),
            default="ask",
            show_default=True,
            help="Approval of changes (move_file).",
        ),
        click.option(
            "--json", "json_lines", is_flag=True, help="Write one JSON event per line on stdout."
        ),
        click.option(
            "--trace",
            type=click.Path(path_type=Path, dir_okay=False),
            help="Write the run's evidence record (requests, responses, calls) here.",
        ),
        click.option("--temperature", type=float, help="Sampling temperature."),
        click.option(
            "--stream/--no-stream",
            default=None,
            help="Show the reply as it is generated; --no-stream for servers that cannot "
            "[default: stream; env: MINIPI_STREAM=0 turns it off].",
        ),
        click.option(
            "--context-tokens",
            type=click.IntRange(min=256),
            envvar="MINIPI_CONTEXT_TOKENS",
            help="The model's context window: older tool outputs are shortened to stay inside "
            "it [env: MINIPI_CONTEXT_TOKENS; default: the local engine's, else unlimited].",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0, min_open=True),
            help="Seconds to wait for the model, and the longest pause in a stream [default: 120].",
        ),
        click.option(
            "--model-file",
            type=click.Path(dir_okay=False),
            help="A GGUF model for the local engine [env: MINIPI_MODEL_FILE].",
        ),
        click.option(
            "--guided/--no-guided",
            default=None,
            help="Constrain each reply to one valid tool call or an answer (llama.cpp servers; "
            "on by default for the local engine).",
        ),
        click.option(
            "--session",
            metavar="NAME",
            help="Save the conversation as session NAME, or resume it (history, open calls).",
        ),
        click.option(
            "--continue",
            "resume",
            is_flag=True,
            help="Resume the session of this project that was used last.",
        ),
        click.option(
            "--evidence",
            type=click.Choice(["off", "warn", "require"]),
            help="Check the answer's figures against what the tools read: show it (warn), "
            "refuse an unsupported figure (require: asked once more, then exit 1), or off "
            "[default: warn; env: MINIPI_EVIDENCE].",
        ),
        click.option(
            "--allow",
            multiple=True,
            metavar="GLOB",
            help="Allow a sensitive path (like .env) that is refused by default.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return _mcp_options(function)


def _mcp_options(function: F) -> F:
    """The MCP flags (``ask``, ``chat``, ``mcp list``)."""
    seconds = click.FloatRange(min=0, min_open=True)
    options = [
        click.option(
            "--mcp",
            "mcp_commands",
            multiple=True,
            metavar="'COMMAND ARGS'",
            help="Start this MCP server (stdio) and offer its tools; repeatable.",
        ),
        click.option(
            "--mcp-config",
            type=click.Path(path_type=Path, dir_okay=False),
            help='An {"mcpServers": ...} JSON file, as other MCP clients read; ${VAR} expanded.',
        ),
        click.option(
            "--mcp-trust",
            multiple=True,
            metavar="NAME",
            help="Believe server NAME's read-only hints: those tools then run without asking.",
        ),
        click.option("--mcp-prefix", is_flag=True, help="Call MCP tools SERVER__TOOL."),
        click.option(
            "--mcp-connect-timeout",
            type=seconds,
            default=30.0,
            show_default=True,
            help="Seconds for an MCP server to start and list its tools.",
        ),
        click.option(
            "--mcp-call-timeout",
            type=seconds,
            default=120.0,
            show_default=True,
            help="Seconds one MCP tool call may take.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _mcp(kwargs: dict[str, Any]) -> Any:
    """The MCP flags taken out of ``kwargs``: ``McpOptions``, or None when no server is
    configured (nothing of MCP is imported then)."""
    commands, config_file = tuple(kwargs.pop("mcp_commands")), kwargs.pop("mcp_config")
    names = ("trust", "prefix", "connect_timeout", "call_timeout")
    values = {name: kwargs.pop(f"mcp_{name}") for name in names}
    if not commands and config_file is None:
        return None
    from minipi.cli.mcp import McpOptions

    return McpOptions(
        commands,
        config_file,
        tuple(values["trust"]),
        values["prefix"],
        values["connect_timeout"],
        values["call_timeout"],
    )


def _options(kwargs: dict[str, Any]) -> Any:
    from minipi.cli.settings import RunOptions

    kwargs["mcp"] = _mcp(kwargs)
    kwargs["json"] = kwargs.pop("json_lines")
    kwargs["required_tools"] = tuple(kwargs["required_tools"])
    kwargs["allow"] = tuple(kwargs["allow"])
    if kwargs["session"] is not None and kwargs["resume"]:
        from minipi.errors import ConfigError

        raise ConfigError("use --session NAME or --continue, not both")
    return RunOptions(**kwargs)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="minipi")
def cli() -> None:
    """minipi: a small agent loop that answers questions about a project's files."""


@cli.command()
@click.argument("question")
@_run_options
def ask(question: str, **kwargs: Any) -> None:
    """Answer QUESTION about the project's files, showing each round."""
    from minipi.cli.app import ask as run_ask

    sys.exit(_guard(lambda: run_ask(question, _options(kwargs))))


@cli.command()
@_run_options
def chat(**kwargs: Any) -> None:
    """An interactive conversation; history is kept until exit or Ctrl-D (saved with
    --session NAME; Ctrl-C cancels the current question)."""
    from minipi.cli.app import chat as run_chat

    sys.exit(_guard(lambda: run_chat(_options(kwargs))))


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


@sessions.command("delete")
@click.argument("name")
def delete_session(name: str) -> None:
    """Delete session NAME (refused while a process has it open)."""
    from minipi.cli import sessions as cmd

    sys.exit(_guard(lambda: cmd.delete_session(_data_dir(), name)))


@cli.group()
def mcp() -> None:
    """MCP servers whose tools ask and chat offer (--mcp, --mcp-config)."""


@mcp.command("list")
@_mcp_options
@click.option("--json", "as_json", is_flag=True, help="Write the list as JSON.")
def list_mcp(as_json: bool, **kwargs: Any) -> None:
    """Each server: its tools, descriptions, read-only or not, and the tokens they add."""
    import os

    from minipi.cli import mcp as cmd

    def run() -> int:
        options = _mcp(kwargs) or cmd.McpOptions()  # none: list_servers says what to give
        return cmd.list_servers(options, os.environ, _data_dir(), as_json=as_json)

    sys.exit(_guard(run))


def _data_dir() -> Path:
    import os

    from minipi.cli.sessions import data_dir

    return data_dir(os.environ)


@cli.command()
@click.option(
    "--model-file",
    type=click.Path(dir_okay=False),
    help="GGUF model [env: MINIPI_MODEL_FILE; default: Qwen3-0.6B, else SmolLM2-135M].",
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


def main() -> None:
    cli()
