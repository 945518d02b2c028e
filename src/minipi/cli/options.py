"""The flags of the run commands, in groups that ``ask``, ``chat`` and ``batch`` share.

Each group is a decorator; ``run_options(kwargs)`` turns what click parsed into the
``RunOptions`` the settings chain reads. Numbers are checked here, before anything starts:
a non-finite or absurd value (``nan``, ``inf``, ``1e300``) is a usage error (exit 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from minipi.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
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


class Finite(click.ParamType[float]):
    """A finite number in ``[low, high]`` (``low`` excluded when ``open_low``)."""

    name = "number"

    def __init__(self, low: float, high: float, *, open_low: bool = False) -> None:
        self.low, self.high, self.open_low = low, high, open_low

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        too_low = number <= self.low if self.open_low else number < self.low
        if not math.isfinite(number) or too_low or number > self.high:
            side = "more than" if self.open_low else "at least"
            self.fail(
                f"{value} is not usable: give a number {side} {self.low:g} and at most "
                f"{self.high:g}",
                param,
                ctx,
            )
        return number


SECONDS = Finite(0, 86_400, open_low=True)
"""Seconds: more than 0, at most a day (httpx and the OS timers fail far beyond; a day is
what the model layer accepts)."""


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
                "directory; / and your home directory need --allow-broad-root].",
            ),
            click.option(
                "--allow-broad-root",
                is_flag=True,
                help="Let / or your home directory itself be the project root.",
            ),
        ],
    )


def model_options(function: F) -> F:
    """Where the model is and how to talk to it."""
    return _apply(
        function,
        [
            click.option(
                "--base-url",
                help="OpenAI-compatible base URL [env: QWEN_BASE_URL, OPENAI_BASE_URL].",
            ),
            click.option("-m", "--model", help="Model name [env: QWEN_MODEL, OPENAI_MODEL]."),
            click.option("--api-key", help="API key [env: OPENAI_API_KEY]."),
            click.option(
                "--wire",
                type=click.Choice(["chat", "responses"]),
                help="Wire API: /chat/completions (default) or /responses.",
            ),
            click.option(
                "--model-file",
                type=click.Path(dir_okay=False),
                help="A GGUF model for the local engine [env: MINIPI_MODEL_FILE].",
            ),
            click.option(
                "--guided/--no-guided",
                default=None,
                help="Constrain each reply to one valid tool call or an answer (llama.cpp "
                "servers; on by default for the local engine).",
            ),
            click.option(
                "-s",
                "--system",
                help="Instructions of your own, added after minipi's (which say how to use "
                "the tools).",
            ),
            click.option("--temperature", type=Finite(0, 10), help="Sampling temperature."),
            click.option(
                "--stream/--no-stream",
                default=None,
                help="Show the reply as it is generated; --no-stream for servers that cannot "
                "[default: stream; env: MINIPI_STREAM=0 turns it off].",
            ),
            click.option(
                "--timeout",
                type=SECONDS,
                help="Seconds to wait for the model, and the longest pause in a stream "
                "[default: 120].",
            ),
            click.option(
                "--max-response-mb",
                type=click.IntRange(min=1, max=1024),
                help="The most minipi reads of one reply, after decompression; a larger one "
                "fails response_too_large [default: 16].",
            ),
            click.option(
                "--context-tokens",
                type=click.IntRange(min=256, max=10_000_000),
                envvar="MINIPI_CONTEXT_TOKENS",
                help="The model's context window: older tool outputs are shortened to stay "
                "inside it [env: MINIPI_CONTEXT_TOKENS; default: the local engine's, else "
                "unlimited].",
            ),
        ],
    )


def loop_options(function: F) -> F:
    """The run's budgets and policies."""
    return _apply(
        function,
        [
            click.option(
                "--max-turns",
                type=click.IntRange(min=1, max=100_000),
                help="Model requests allowed; the calls of the last one still run [default: 8].",
            ),
            click.option(
                "--max-tool-calls",
                type=click.IntRange(min=1, max=1_000_000),
                help="Tool calls allowed in the run.",
            ),
            click.option(
                "--max-calls-per-reply",
                type=click.IntRange(min=1, max=10_000),
                help="Calls one reply may ask for; the rest are answered 'not run' [default: 32].",
            ),
            click.option(
                "--max-seconds",
                type=SECONDS,
                help="Wall-clock budget of the whole run (requests, streams, tools).",
            ),
            click.option(
                "--require-tool",
                "required_tools",
                multiple=True,
                metavar="NAME",
                help="A tool that must succeed first (repeat for an order).",
            ),
            click.option(
                "--evidence",
                type=click.Choice(["off", "warn", "require"]),
                help="Check the answer's figures against what the tools read: show it "
                "(warn), refuse an unsupported figure (require: asked once more, then exit "
                "1), or off [default: warn; env: MINIPI_EVIDENCE].",
            ),
        ],
    )


def tool_options(function: F) -> F:
    """What the tools may do."""
    return _apply(
        function,
        [
            click.option(
                "--approve",
                type=click.Choice(["deny", "ask", "all"]),
                help="Tools that change things (move_file, MCP tools not marked read-only): "
                "not offered (deny, the default: a read-only run), asked before each run "
                "(ask), or allowed (all).",
            ),
            click.option(
                "--allow",
                multiple=True,
                metavar="GLOB",
                help="Allow a sensitive path (like .env) that is refused by default.",
            ),
        ],
    )


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


def run_options(kwargs: dict[str, Any]) -> Any:
    """``RunOptions`` from what the run groups parsed (``kwargs`` is consumed)."""
    from minipi.cli.settings import RunOptions

    kwargs["mcp"] = mcp_from(kwargs) if "mcp_commands" in kwargs else None
    kwargs["json"] = kwargs.pop("json_lines", False)
    kwargs["required_tools"] = tuple(kwargs.get("required_tools", ()))
    kwargs["allow"] = tuple(kwargs.get("allow", ()))
    if kwargs.get("session") is not None and kwargs.get("resume"):
        raise ConfigError("use --session NAME or --continue, not both")
    return RunOptions(**kwargs)
