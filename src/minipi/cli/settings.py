"""The CLI's one settings chain: parsed flags (``RunOptions``) > QWEN_* > OPENAI_* > defaults.

``resolve_settings`` is the only place the environment is read for a run; what it returns
(``minipi.assemble.Settings``) is all the rest of the CLI looks at.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minipi.agent.config import EvidenceMode
from minipi.ai.types import Wire
from minipi.assemble import DEFAULT_INSTRUCTIONS, ApproveMode, Settings
from minipi.errors import ConfigError

if TYPE_CHECKING:
    from minipi.cli.mcp import McpOptions

__all__ = ["RunOptions", "data_dir", "project_root", "resolve_settings"]


@dataclass(frozen=True)
class RunOptions:
    """The flags of ``ask`` and ``chat`` as parsed (None: not given)."""

    project: Path | None = None
    """The project root (None: the current directory, said so)."""
    allow_broad_root: bool = False
    """Let ``/`` or the home directory itself be the root."""
    system: str | None = None
    """The user's own instructions, added after minipi's."""
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    wire: str | None = None
    max_turns: int = 8
    max_tool_calls: int | None = None
    max_calls_per_reply: int = 32
    max_seconds: float | None = None
    required_tools: tuple[str, ...] = ()
    approve: str | None = None
    """``deny`` (read-only: tools that change things are not offered), ``ask`` or ``all``;
    None: ``deny``."""
    json: bool = False
    trace: Path | None = None
    temperature: float | None = None
    allow: tuple[str, ...] = ()
    model_file: str | None = None
    guided: bool | None = None
    stream: bool | None = None
    timeout: float | None = None
    context_tokens: int | None = None
    evidence: str | None = None
    """``off``, ``warn`` or ``require`` (None: ``MINIPI_EVIDENCE``, else ``warn``)."""
    session: str | None = None
    """Save the conversation under this name (created, or resumed with its history)."""
    resume: bool = False
    """``--continue``: resume the session of ``project`` that was updated last."""
    data_dir: Path | None = None
    """Where sessions are kept; None: ``$MINIPI_DATA_DIR``, XDG data home, ~/.local/share."""
    mcp: McpOptions | None = None
    """MCP servers whose tools the run offers (their stderr logs go to the data directory)."""

    @property
    def root(self) -> Path:
        """``project``, or the current directory."""
        return self.project if self.project is not None else Path(".")


def data_dir(env: Mapping[str, str]) -> Path:
    """``$MINIPI_DATA_DIR``, else ``$XDG_DATA_HOME/minipi``, else ``~/.local/share/minipi``."""
    explicit = env.get("MINIPI_DATA_DIR")
    if explicit:
        return Path(os.path.abspath(os.path.expanduser(explicit)))
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "minipi"
    return Path.home() / ".local" / "share" / "minipi"


def _first(*values: str | None) -> str | None:
    return next((v for v in values if v), None)


def resolve_settings(options: RunOptions, env: Mapping[str, str] | None = None) -> Settings:
    """Merge the flags with the environment; ConfigError for values that make no sense."""
    env = os.environ if env is None else env
    url = _first(options.base_url, env.get("QWEN_BASE_URL"), env.get("OPENAI_BASE_URL"))
    named = _first(options.wire, env.get("MINIPI_WIRE")) or "chat"
    if named not in ("chat", "responses"):
        raise ConfigError(f"unknown wire {named!r}: use chat or responses")
    chosen_wire: Wire = "responses" if named == "responses" else "chat"
    stream = options.stream
    instructions = DEFAULT_INSTRUCTIONS
    if options.system and options.system.strip():
        instructions += "\n\n" + options.system.strip()
    return Settings(
        base_url=url,
        model=_first(options.model, env.get("QWEN_MODEL"), env.get("OPENAI_MODEL")),
        api_key=_first(options.api_key, env.get("QWEN_API_KEY"), env.get("OPENAI_API_KEY")),
        wire=chosen_wire,
        request_options=_request_options(env, chosen_wire, options.temperature),
        stream=stream if stream is not None else env.get("MINIPI_STREAM", "1") not in _OFF,
        timeout=options.timeout,
        model_file=options.model_file,
        instructions=instructions,
        guided=options.guided,
        max_turns=options.max_turns,
        max_tool_calls=options.max_tool_calls,
        max_calls_per_reply=options.max_calls_per_reply,
        max_seconds=options.max_seconds,
        required_tools=options.required_tools,
        context_tokens=options.context_tokens,
        evidence=_evidence(_first(options.evidence, env.get("MINIPI_EVIDENCE")) or "warn"),
        approve=_approve(options.approve or "deny"),
        allow=options.allow,
    )


def project_root(options: RunOptions, env: Mapping[str, str] | None = None) -> Path:
    """The root the file tools are confined to: ``--project``, else the current directory.
    ``/`` and the home directory itself are refused unless ``--allow-broad-root``: a question
    about a project should not let the model read every file of the machine or the user."""
    env = os.environ if env is None else env
    root = Path(os.path.realpath(options.project if options.project is not None else "."))
    home = env.get("HOME")
    broad = root == Path(root.anchor) or (home and root == Path(os.path.realpath(home)))
    if broad and not options.allow_broad_root:
        what = "the file system's root" if root == Path(root.anchor) else "your home directory"
        given = "--project" if options.project is not None else "the current directory"
        raise ConfigError(
            f"the project root would be {root} ({what}, from {given}): the model could read "
            "any file there; pass --project DIR for the project you mean, or "
            "--allow-broad-root if you really mean it",
            code="broad_project_root",
        )
    return root


def _approve(value: str) -> ApproveMode:
    modes: dict[str, ApproveMode] = {"deny": "deny", "ask": "ask", "all": "all"}
    if value in modes:
        return modes[value]
    raise ConfigError(f"--approve takes deny, ask or all, not {value!r}")


def _evidence(value: str) -> EvidenceMode:
    modes: dict[str, EvidenceMode] = {"off": "off", "warn": "warn", "require": "require"}
    if value in modes:
        return modes[value]
    raise ConfigError(f"MINIPI_EVIDENCE must be off, warn or require, not {value!r}")


_OFF = ("0", "false", "no", "off")


def _request_options(
    env: Mapping[str, str], wire: str, temperature: float | None
) -> dict[str, Any]:
    options: dict[str, Any] = {}
    reasoning = env.get("QWEN_REASONING")
    if reasoning:
        if wire == "responses":
            options["reasoning"] = {"effort": reasoning}
        else:
            options["reasoning_effort"] = reasoning
    max_tokens = env.get("QWEN_MAX_OUTPUT_TOKENS")
    if max_tokens:
        if not max_tokens.isdigit():
            raise ConfigError(f"QWEN_MAX_OUTPUT_TOKENS must be a number, got {max_tokens!r}")
        options["max_output_tokens"] = int(max_tokens)
    if temperature is not None:
        options["temperature"] = temperature
    return options
