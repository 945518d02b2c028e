"""The CLI's one settings chain: parsed flags (``RunOptions``) > QWEN_* > OPENAI_* > defaults.

``resolve_settings`` is the only place the environment is read for a run; what it returns
(``minipi.assemble.Settings``) is all the rest of the CLI looks at.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minipi.agent.config import EvidenceMode
from minipi.ai.types import Wire
from minipi.assemble import DEFAULT_INSTRUCTIONS, ApproveMode, Settings
from minipi.cli.config import UserConfig, load_config
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
    max_turns: int | None = None
    """None: the config file's, else 8."""
    max_tool_calls: int | None = None
    max_calls_per_reply: int | None = None
    """None: the config file's, else 32."""
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
    max_response_mb: int | None = None
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
    """Merge the flags, the environment and the config file (in that order of precedence);
    ConfigError for values that make no sense."""
    env = os.environ if env is None else env
    file = load_config(env)
    return Settings(
        **_endpoint(options, env, file),
        **_budgets(options, file),
        instructions=_instructions(_first(options.system, file.get("system"))),
        guided=options.guided,
        required_tools=options.required_tools,
        context_tokens=options.context_tokens,
        evidence=_evidence(
            _first(options.evidence, env.get("MINIPI_EVIDENCE"), file.get("evidence")) or "warn"
        ),
        approve=_approve(_first(options.approve, file.get("approve")) or "deny"),
        allow=options.allow,
    )


def _endpoint(options: RunOptions, env: Mapping[str, str], file: UserConfig) -> dict[str, Any]:
    """Where the model is and how to talk to it."""
    url = _first(options.base_url, env.get("QWEN_BASE_URL"), env.get("OPENAI_BASE_URL"))
    url = url or file.get("base_url")
    named = _first(options.wire, env.get("MINIPI_WIRE"), file.get("wire")) or "chat"
    if named not in ("chat", "responses"):
        raise ConfigError(f"unknown wire {named!r}: use chat or responses")
    wire: Wire = "responses" if named == "responses" else "chat"
    model_file = _first(options.model_file, file.get("model_file"))
    key = _first(options.api_key, env.get("QWEN_API_KEY"), env.get("OPENAI_API_KEY"))
    if key is None and url is not None and model_file is None:
        key = file.api_key()  # the key command runs only for an endpoint that needs one
    model = _first(options.model, env.get("QWEN_MODEL"), env.get("OPENAI_MODEL"))
    temperature = _pick(options.temperature, file.get("temperature"))
    return {
        "base_url": url,
        "model": model or file.get("model"),
        "api_key": key,
        "wire": wire,
        "request_options": _request_options(env, wire, temperature),
        "stream": _stream(options.stream, env, file),
        "timeout": _positive(_pick(options.timeout, file.get("timeout")), "timeout"),
        "max_response_mb": int(_pick(options.max_response_mb, file.get("max_response_mb"), 16)),
        "model_file": model_file,
    }


def _budgets(options: RunOptions, file: UserConfig) -> dict[str, Any]:
    per_reply = _pick(options.max_calls_per_reply, file.get("max_calls_per_reply"), 32)
    return {
        "max_turns": int(_pick(options.max_turns, file.get("max_turns"), 8)),
        "max_tool_calls": options.max_tool_calls,
        "max_calls_per_reply": int(per_reply),
        "max_seconds": _positive(
            _pick(options.max_seconds, file.get("max_seconds")), "max_seconds"
        ),
    }


def _pick(*values: Any) -> Any:
    """The first value that is set (not None)."""
    return next((v for v in values if v is not None), None)


def _positive(value: Any, key: str) -> float | None:
    """A number of seconds from a flag or the config file: finite, positive, sensible."""
    if value is None:
        return None
    number = float(value)
    if not math.isfinite(number) or not 0 < number <= 86_400:
        raise ConfigError(f"{key} must be a number of seconds above 0 and at most 86400")
    return number


def _stream(flag: bool | None, env: Mapping[str, str], file: UserConfig) -> bool:
    if flag is not None:
        return flag
    if "MINIPI_STREAM" in env:
        return env["MINIPI_STREAM"] not in _OFF
    configured = file.get("stream")
    return True if configured is None else bool(configured)


def _instructions(system: str | None) -> str:
    """minipi's instructions, then the user's own (``--system``)."""
    if system and system.strip():
        return DEFAULT_INSTRUCTIONS + "\n\n" + system.strip()
    return DEFAULT_INSTRUCTIONS


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
