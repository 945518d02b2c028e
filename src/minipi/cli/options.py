"""The flags of the run commands, in groups that ``ask``, ``chat`` and ``batch`` share.

Each group is a decorator; the settings groups (model, loop, tools) are made from the table
of ``minipi.cli.keys``. ``run_options(kwargs)`` turns what click parsed into the
``RunOptions`` the settings chain reads. Numbers are checked here, before anything starts:
a non-finite or absurd value (``nan``, ``inf``, ``1e300``) is a usage error (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from minipi.cli.keys import KEYS, SECONDS, Finite, Group
from minipi.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "SECONDS",
    "Finite",
    "loop_options",
    "mcp_options",
    "model_options",
    "output_options",
    "project_options",
    "run_options",
    "session_options",
    "tool_options",
]


def _apply(function: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        function = option(function)
    return function


def project_options(function: F) -> F:
    return _apply(
        function,
        [
            click.option(
                "-p",
                "--project",
                type=click.Path(path_type=Path),
                help="Project root the file tools are confined to [default: the current "
                "directory; /, your home directory and minipi's own need --allow-broad-root].",
            ),
            click.option(
                "--allow-broad-root",
                is_flag=True,
                help="Let /, your home directory itself, or a folder of secrets (~/.aws, "
                "~/.ssh, minipi's own config and data) be the project root.",
            ),
        ],
    )


def _group(name: Group) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        return _apply(function, [key.option() for key in KEYS if key.flags and key.group == name])

    decorate.__doc__ = f"The flags of the {name} settings (``minipi.cli.keys``)."
    return decorate


model_options = _group("model")
"""Where the model is and how to talk to it."""
loop_options = _group("loop")
"""The run's budgets and policies."""
tool_options = _group("tools")
"""What the tools may do."""


def output_options(function: F) -> F:
    return _apply(
        function,
        [
            click.option(
                "--json",
                "json_lines",
                is_flag=True,
                help="Write one JSON event per line on stdout.",
            ),
            click.option(
                "--trace",
                type=click.Path(path_type=Path, dir_okay=False),
                help="Write the run's evidence record (requests, responses, calls) here.",
            ),
            click.option(
                "-q",
                "--quiet",
                is_flag=True,
                help="Print the answer, the sources block and errors only (no log).",
            ),
            click.option(
                "-v",
                "--verbose",
                is_flag=True,
                help="Show each tool output whole in the log (by default a long one is folded "
                "to a few lines, with a count of what was left out).",
            ),
        ],
    )


def session_options(function: F) -> F:
    return _apply(
        function,
        [
            click.option(
                "--session",
                metavar="NAME",
                help="Save the conversation as session NAME, or resume it (history, open calls).",
            ),
            click.option(
                "-c",
                "--continue",
                "resume",
                is_flag=True,
                help="Resume the session of this project that was used last.",
            ),
        ],
    )


def mcp_options(function: F) -> F:
    """The MCP flags (``ask``, ``chat``, ``mcp list``)."""
    return _apply(
        function,
        [
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
                help='An {"mcpServers": ...} JSON file, as other MCP clients read; ${VAR} '
                "expanded.",
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
                type=SECONDS,
                default=30.0,
                show_default=True,
                help="Seconds for an MCP server to start and list its tools.",
            ),
            click.option(
                "--mcp-call-timeout",
                type=SECONDS,
                default=120.0,
                show_default=True,
                help="Seconds one MCP tool call may take.",
            ),
        ],
    )


def mcp_from(kwargs: dict[str, Any]) -> Any:
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


def _one_of(kwargs: dict[str, Any]) -> None:
    """The pairs of flags that exclude each other: a usage error naming both."""
    if kwargs.get("session") is not None and kwargs.get("resume"):
        raise ConfigError("use --session NAME or --continue, not both")
    if kwargs.get("quiet") and kwargs.get("verbose"):
        raise ConfigError("use -q/--quiet or -v/--verbose, not both")


def run_options(kwargs: dict[str, Any]) -> Any:
    """``RunOptions`` from what the run groups parsed (``kwargs`` is consumed): the settings
    flags given (not None, not empty) by key, the other flags as they are."""
    from minipi.cli.settings import RunOptions

    _one_of(kwargs)
    flags = {}
    for key in KEYS:
        if key.flags and key.name in kwargs:
            value = kwargs.pop(key.name)
            if value is not None and value != ():
                flags[key.name] = tuple(value) if key.multiple else value
    mcp = mcp_from(kwargs) if "mcp_commands" in kwargs else None
    json_lines = kwargs.pop("json_lines", False)
    return RunOptions(**kwargs, json=json_lines, mcp=mcp, flags=flags)
