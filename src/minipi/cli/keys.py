"""The table of run settings: one entry a setting makes its flag, its config-file key, its
environment variables, its help and its check; its default is the library's
(``minipi.assemble.Settings``, whose loop defaults are ``AgentConfig``'s and whose HTTP ones
are ``ClientConfig``'s), never written here.

``minipi.cli.options`` makes the click options from it, ``minipi.cli.settings`` resolves each
key (flag > environment > config file > default), ``minipi config`` shows the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from functools import cache
from typing import Any, Literal, TypeAlias

import click

__all__ = ["KEYS", "SECONDS", "Finite", "Key", "by_name"]

Group: TypeAlias = Literal["model", "project", "budgets", "evidence", "output", "sessions", "mcp"]
"""The sections of the run commands' ``--help``, in the order a newcomer needs them
(``minipi.cli.options`` titles them); a key's ``group`` is one of the first four."""


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


@cache
def _defaults() -> dict[str, Any]:
    """``Settings``' defaults (imported when first needed: ``minipi --help`` loads no more
    than the help it shows)."""
    from minipi.assemble import Settings

    return {f.name: f.default for f in fields(Settings) if f.default is not MISSING}


def _read_timeout() -> str:
    from minipi.ai import ClientConfig

    return f"{ClientConfig().read_timeout:g}"


class _KeyOption(click.Option):
    """An option whose help, with the library's default, is made when help is shown."""

    def __init__(self, *args: Any, key: Key, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key = key

    @property
    def group(self) -> Group:
        """The ``--help`` section it is shown in."""
        return self.key.group

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self.key.help_text()
        return super().get_help_record(ctx)


@dataclass(frozen=True, kw_only=True)
class Key:
    """One run setting."""

    name: str
    """Its name: the config-file key, the click parameter, the ``Settings`` field if any."""
    group: Group
    """The ``--help`` section of its flag."""
    help: str
    flags: tuple[str, ...] = ()
    """``("-m", "--model")``; ``("--stream/--no-stream",)`` for a switch; () no flag."""
    kind: click.ParamType[Any] | None = None
    """The check of a value from any source (None: any text)."""
    envs: tuple[str, ...] = ()
    """Environment variables, first set wins."""
    file: tuple[type, ...] = ()
    """Types the config file may give (() : not a config-file key)."""
    multiple: bool = False
    metavar: str | None = None
    default_text: str | Callable[[], str] | None = None
    """What the help says of the default when it is not a plain value."""
    secret: bool = False
    """Never shown (``minipi config`` masks it)."""

    @property
    def flag(self) -> str | None:
        """The long flag as the user writes it (``--model``), for messages."""
        return self.flags[-1].split("/")[0] if self.flags else None

    @property
    def switch(self) -> bool:
        return bool(self.flags) and "/" in self.flags[-1]

    @property
    def default(self) -> Any:
        """The library's default (None where it has none: the setting is then unset)."""
        return _defaults().get(self.name)

    def help_text(self) -> str:
        """``help`` with the default and the variables appended."""
        notes = []
        text = self.default_text() if callable(self.default_text) else self.default_text
        shown = text or _shown(self.default)
        if shown:
            notes.append(f"default: {shown}")
        if self.envs:
            notes.append("env: " + ", ".join(self.envs))
        return f"{self.help} [{'; '.join(notes)}]." if notes else f"{self.help}."

    def option(self) -> Any:
        """The click option (its value None when not given: the other sources then count)."""
        extra: dict[str, Any] = {"multiple": True} if self.multiple else {"default": None}
        if self.kind is not None:
            extra["type"] = self.kind
        if self.metavar is not None or isinstance(self.kind, click.IntRange):
            extra["metavar"] = self.metavar or "N"  # not click's "INTEGER RANGE"
        return click.option(*self.flags, self.name, cls=_KeyOption, key=self, **extra)


def _shown(value: Any) -> str:
    if value is None or value == () or value is False:
        return ""
    if value is True:
        return "on"
    return str(value)


_CHOICES = {"wire": ("chat", "responses"), "evidence": ("off", "warn", "require")}

KEYS: tuple[Key, ...] = (
    Key(
        name="base_url",
        group="model",
        flags=("--base-url",),
        envs=("QWEN_BASE_URL", "OPENAI_BASE_URL"),
        file=(str,),
        help="OpenAI-compatible base URL (none: the local engine)",
    ),
    Key(
        name="model",
        group="model",
        flags=("-m", "--model"),
        envs=("QWEN_MODEL", "OPENAI_MODEL"),
        file=(str,),
        help="Model name",
    ),
    Key(
        name="api_key",
        group="model",
        flags=("--api-key",),
        envs=("QWEN_API_KEY", "OPENAI_API_KEY"),
        secret=True,
        help="API key (config file: api_key_command, run only when a key is needed)",
    ),
    Key(
        name="wire",
        group="model",
        flags=("--wire",),
        kind=click.Choice(_CHOICES["wire"]),
        envs=("MINIPI_WIRE",),
        file=(str,),
        help="Wire API: /chat/completions (chat) or /responses",
    ),
    Key(
        name="model_file",
        group="model",
        flags=("--model-file",),
        kind=click.Path(dir_okay=False),
        envs=("MINIPI_MODEL_FILE",),
        file=(str,),
        help="A GGUF model for the local engine (not with --base-url)",
    ),
    Key(
        name="guided",
        group="model",
        flags=("--guided/--no-guided",),
        file=(bool,),
        default_text="on for the local engine, else off",
        help="Constrain each reply to one valid tool call or an answer (llama.cpp servers)",
    ),
    Key(
        name="system",
        group="model",
        flags=("-s", "--system"),
        file=(str,),
        help="Instructions of your own, added after minipi's (which say how to use the tools)",
    ),
    Key(
        name="temperature",
        group="model",
        flags=("--temperature",),
        kind=Finite(0, 10),
        file=(int, float),
        default_text="the server's; 0 for the local engine",
        help="Sampling temperature",
    ),
    Key(
        name="reasoning",
        group="model",
        envs=("QWEN_REASONING",),
        help="Reasoning effort sent with each request",
    ),
    Key(
        name="max_output_tokens",
        group="model",
        kind=click.IntRange(min=1),
        envs=("QWEN_MAX_OUTPUT_TOKENS",),
        help="Output tokens one reply may use",
    ),
    Key(
        name="stream",
        group="model",
        flags=("--stream/--no-stream",),
        envs=("MINIPI_STREAM",),
        file=(bool,),
        help="Show the reply as it is generated; --no-stream for servers that cannot",
    ),
    Key(
        name="timeout",
        group="model",
        flags=("--timeout",),
        kind=SECONDS,
        file=(int, float),
        default_text=_read_timeout,
        help="Seconds to wait for the model, and the longest pause in a stream",
    ),
    Key(
        name="max_response_mb",
        group="model",
        flags=("--max-response-mb",),
        kind=click.IntRange(min=1, max=1024),
        file=(int,),
        help="The most minipi reads of one reply, after decompression; a larger one fails "
        "response_too_large",
    ),
    Key(
        name="context_tokens",
        group="model",
        flags=("--context-tokens",),
        kind=click.IntRange(min=256, max=10_000_000),
        envs=("MINIPI_CONTEXT_TOKENS",),
        file=(int,),
        default_text="the local engine's, else unlimited",
        help="The model's context window: older tool outputs are shortened to stay inside it",
    ),
    Key(
        name="max_turns",
        group="budgets",
        flags=("--max-turns",),
        kind=click.IntRange(min=1, max=100_000),
        file=(int,),
        help="Model requests allowed; the calls of the last one still run",
    ),
    Key(
        name="max_tool_calls",
        group="budgets",
        flags=("--max-tool-calls",),
        kind=click.IntRange(min=1, max=1_000_000),
        file=(int,),
        help="Tool calls allowed in the run",
    ),
    Key(
        name="max_calls_per_reply",
        group="budgets",
        flags=("--max-calls-per-reply",),
        kind=click.IntRange(min=1, max=10_000),
        file=(int,),
        help="Calls one reply may ask for; the rest are answered 'not run'",
    ),
    Key(
        name="max_seconds",
        group="budgets",
        flags=("--max-seconds",),
        kind=SECONDS,
        file=(int, float),
        help="Wall-clock budget of the whole run (requests, streams, tools)",
    ),
    Key(
        name="required_tools",
        group="evidence",
        flags=("--require-tool",),
        multiple=True,
        metavar="NAME",
        help="A tool that must succeed first (repeat for an order)",
    ),
    Key(
        name="evidence",
        group="evidence",
        flags=("--evidence",),
        kind=click.Choice(_CHOICES["evidence"]),
        envs=("MINIPI_EVIDENCE",),
        file=(str,),
        help="Check the answer's figures against what the tools read: show it (warn), refuse "
        "an unsupported figure (require: asked once more, then exit 1), or off",
    ),
    Key(
        name="approve",
        group="project",
        flags=("--approve",),
        kind=click.Choice(("deny", "ask", "all")),
        file=(str,),
        help="Tools that change things (moving a file, MCP tools not marked read-only): not "
        "offered (deny: a read-only run), asked before each run (ask), or allowed (all)",
    ),
    Key(
        name="allow",
        group="project",
        flags=("--allow",),
        multiple=True,
        metavar="GLOB",
        help="Allow a sensitive path (like .env) that is refused by default",
    ),
)

_BY_NAME: Mapping[str, Key] = {key.name: key for key in KEYS}


def by_name(name: str) -> Key:
    return _BY_NAME[name]
