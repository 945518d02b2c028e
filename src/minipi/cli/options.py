"""The flags of the run commands, in groups that ``ask``, ``chat`` and ``batch`` share.

Each group is a decorator; the settings groups (model, project, budgets, evidence) are made
from the table of ``minipi.cli.keys``. ``run_options(kwargs)`` turns what click parsed into the
``RunOptions`` the settings chain reads. Numbers are checked here, before anything starts:
a non-finite or absurd value (``nan``, ``inf``, ``1e300``) is a usage error (exit 2).

Every flag has a ``group`` (a key's own, else the one its decorator gives), and
``GroupedCommand`` shows ``--help`` in those sections, titled by ``HEADINGS``, then the
command's examples as written (click would re-wrap an epilog into one paragraph).
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
    "HEADINGS",
    "SECONDS",
    "Finite",
    "GroupedCommand",
    "loop_options",
    "mcp_options",
    "model_options",
    "output_options",
    "project_options",
    "run_options",
    "session_options",
    "tool_options",
]


HEADINGS: dict[Group, str] = {
    "model": "Model",
    "project": "Project and tools",
    "budgets": "Budgets",
    "evidence": "Evidence",
    "output": "Output",
    "sessions": "Sessions",
    "mcp": "MCP servers",
}
"""The ``--help`` sections in order; a flag of none (``--help``) comes last, under Other."""


class _Option(click.Option):
    """A flag shown under the ``--help`` section ``group``."""

    def __init__(self, *args: Any, group: Group, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group


def _option(group: Group, *decls: str, **kwargs: Any) -> Callable[[F], F]:
    return click.option(*decls, cls=_Option, group=group, **kwargs)


class GroupedCommand(click.Command):
    """``--help`` with the flags under the headings of their groups, then ``examples``
    (before ``click.Group`` in a group's bases, it lists the subcommands after the flags)."""

    def __init__(self, *args: Any, examples: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.examples = examples

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {title: [] for title in HEADINGS.values()}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and isinstance(param, click.Option):
                group: Group | None = getattr(param, "group", None)  # a key's or _Option's
                sections.setdefault(HEADINGS[group] if group else "Other", []).append(record)
        width = min(
            max((len(term) for rows in sections.values() for term, _ in rows), default=0), 30
        )
        for title, records in sections.items():
            if records:  # the first term padded: every section's help starts in one column
                with formatter.section(title):
                    formatter.write_dl([(records[0][0].ljust(width), records[0][1]), *records[1:]])
        if isinstance(self, click.Group):  # a group's subcommands, as click lists them
            self.format_commands(ctx, formatter)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.examples:
            with formatter.section("Examples"):
                for line in self.examples.strip().splitlines():
                    formatter.write(f"{'':>{formatter.current_indent}}{line}\n")


def _apply(function: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        function = option(function)
    return function


def project_options(function: F) -> F:
    return _apply(
        function,
        [
            _option(
                "project",
                "-p",
                "--project",
                type=click.Path(path_type=Path),
                help="Project root the file tools are confined to [default: the current "
                "directory; /, your home directory and minipi's own need --allow-broad-root].",
            ),
            _option(
                "project",
                "--allow-broad-root",
                is_flag=True,
                help="Let /, your home directory itself, or a folder of secrets (~/.aws, "
                "~/.ssh, minipi's own config and data) be the project root.",
            ),
        ],
    )


def _group(*names: Group) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        return _apply(function, [key.option() for key in KEYS if key.flags and key.group in names])

    decorate.__doc__ = f"The flags of the {', '.join(names)} settings (``minipi.cli.keys``)."
    return decorate


model_options = _group("model")
"""Where the model is and how to talk to it."""
loop_options = _group("budgets", "evidence")
"""The run's budgets and what must back its answer."""
tool_options = _group("project")
"""What the tools may do (the project's own flags are ``project_options``)."""


def output_options(function: F) -> F:
    return _apply(
        function,
        [
            _option(
                "output",
                "--json",
                "json_lines",
                is_flag=True,
                help="Write one JSON event per line on stdout.",
            ),
            _option(
                "output",
                "--schema",
                metavar="SCHEMA",
                help="Answer as JSON of this shape, each field traced to the file, JSON "
                "Pointer and line it came from: a JSON Schema (a file or inline), "
                '\'{"date": "string", "orders": "integer"}\' or "date, orders:int, '
                "revenue:number\". stdout gets the JSON alone; --json adds each field's "
                "sources.",
            ),
            _option(
                "output",
                "--trace",
                type=click.Path(path_type=Path, dir_okay=False),
                help="Write the run's evidence record (requests, responses, calls) here.",
            ),
            _option(
                "output",
                "-q",
                "--quiet",
                is_flag=True,
                help="Print the answer, the sources block and errors only (no log).",
            ),
            _option(
                "output",
                "-v",
                "--verbose",
                is_flag=True,
                help="Show each tool output whole in the log (by default a long one is folded "
                "to a few lines, with a count of what was left out).",
            ),
            _option(
                "output",
                "--otel",
                is_flag=True,
                help="Send OpenTelemetry spans of each run (model requests, tool calls) over "
                "OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318); "
                "needs pip install 'minipi[otel]'.",
            ),
        ],
    )


def session_options(function: F) -> F:
    return _apply(
        function,
        [
            _option(
                "sessions",
                "--session",
                metavar="NAME",
                help="Save the conversation as session NAME, or resume it (history, open calls).",
            ),
            _option(
                "sessions",
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
            _option(
                "mcp",
                "--mcp",
                "mcp_commands",
                multiple=True,
                metavar="'COMMAND ARGS'",
                help="Start this MCP server (stdio) and offer its tools; repeatable.",
            ),
            _option(
                "mcp",
                "--mcp-config",
                type=click.Path(path_type=Path, dir_okay=False),
                help='An {"mcpServers": ...} JSON file, as other MCP clients read; ${VAR} '
                "expanded.",
            ),
            _option(
                "mcp",
                "--mcp-trust",
                multiple=True,
                metavar="NAME",
                help="Believe server NAME's read-only hints: those tools then run without asking.",
            ),
            _option("mcp", "--mcp-prefix", is_flag=True, help="Call MCP tools SERVER__TOOL."),
            _option(
                "mcp",
                "--mcp-connect-timeout",
                type=SECONDS,
                default=30.0,
                show_default=True,
                help="Seconds for an MCP server to start and list its tools.",
            ),
            _option(
                "mcp",
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
    if kwargs.get("otel"):  # the exporter set up now: a missing extra stops nothing started
        from minipi.otel import tracing

        tracing()
    flags = {}
    for key in KEYS:
        if key.flags and key.name in kwargs:
            value = kwargs.pop(key.name)
            if value is not None and value != ():
                flags[key.name] = tuple(value) if key.multiple else value
    mcp = mcp_from(kwargs) if "mcp_commands" in kwargs else None
    json_lines = kwargs.pop("json_lines", False)
    schema = kwargs.pop("schema", None)
    if schema is not None:  # read now: a bad shape is a usage error before anything starts
        from minipi.structured import shape_of

        schema = shape_of(schema)
    return RunOptions(**kwargs, json=json_lines, mcp=mcp, flags=flags, schema=schema)
