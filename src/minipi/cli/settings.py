"""The CLI's one settings chain: for each key of ``minipi.cli.keys``, the flag > the
environment (``QWEN_MODEL`` before ``OPENAI_MODEL``, and so on) > the config file > the
library's default.

``resolve`` is the only place the environment is read for a run, and says where each value
came from (``minipi config`` shows it); ``resolve_settings`` turns it into the
``minipi.assemble.Settings`` that all the rest of the CLI looks at.

An endpoint (``base_url``) and a local model file (``model_file``) exclude each other: given
in two layers, the higher one is used and the other is set aside (its source says why), as
for every other key; both in one layer (two flags, two variables, the file) is a usage error
naming both sources.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from minipi.assemble import DEFAULT_INSTRUCTIONS, Settings
from minipi.cli.config import UserConfig, config_path, load_config
from minipi.cli.keys import KEYS, Key, by_name
from minipi.errors import ConfigError

if TYPE_CHECKING:
    from minipi.cli.mcp import McpOptions
    from minipi.structured import OutputShape

__all__ = [
    "Resolved",
    "RunOptions",
    "data_dir",
    "project_root",
    "resolve",
    "resolve_one",
    "resolve_settings",
]

_OFF = ("0", "false", "no", "off")
_FLAG, _ENV, _FILE, _DEFAULT = 3, 2, 1, 0


@dataclass(frozen=True)
class RunOptions:
    """The flags of ``ask``, ``chat`` and ``batch`` as parsed."""

    project: Path | None = None
    """The project root (None: the current directory, said so)."""
    allow_broad_root: bool = False
    """Let ``/`` or the home directory itself be the root."""
    json: bool = False
    trace: Path | None = None
    quiet: bool = False
    """``-q``: the answer, the sources block and errors only."""
    verbose: bool = False
    """``-v``: every tool output whole in the log (else a long one is folded)."""
    otel: bool = False
    """``--otel``: OpenTelemetry spans of each run, exported over OTLP/HTTP (``minipi.otel``)."""
    schema: OutputShape | None = None
    """``--schema``: the answer as JSON of this shape, each field traced (``minipi.structured``)."""
    session: str | None = None
    """Save the conversation under this name (created, or resumed with its history)."""
    resume: bool = False
    """``--continue``: resume the session of ``project`` that was updated last."""
    data_dir: Path | None = None
    """Where sessions are kept; None: ``$MINIPI_DATA_DIR``, XDG data home, ~/.local/share."""
    mcp: McpOptions | None = None
    """MCP servers whose tools the run offers (their stderr logs go to the data directory)."""
    flags: Mapping[str, Any] = field(default_factory=dict)
    """The settings given on the command line, by key of ``minipi.cli.keys`` (``max_turns``,
    ``base_url``...): only those given."""

    @property
    def root(self) -> Path:
        """``project``, or the current directory."""
        return self.project if self.project is not None else Path(".")


@dataclass(frozen=True)
class Resolved:
    """Each setting's value and where it came from: ``--flag``, ``env VAR``,
    ``config file PATH`` or ``default``."""

    values: dict[str, Any]
    sources: dict[str, str]
    layers: dict[str, int]
    file: UserConfig


def data_dir(env: Mapping[str, str]) -> Path:
    """``$MINIPI_DATA_DIR``, else ``$XDG_DATA_HOME/minipi``, else ``~/.local/share/minipi``."""
    explicit = env.get("MINIPI_DATA_DIR")
    if explicit:
        return Path(os.path.abspath(os.path.expanduser(explicit)))
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "minipi"
    return Path.home() / ".local" / "share" / "minipi"


def resolve(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Resolved:
    """Every key of the table: the flag, else the first variable set, else the config file,
    else the default; values from the environment and the file are checked as a flag's are
    (``ConfigError`` naming the source)."""
    env = os.environ if env is None else env
    file = load_config(env)
    resolved = Resolved({}, {}, {}, file)
    for key in KEYS:
        value, source, layer = _one(key, flags, env, file)
        resolved.values[key.name] = value
        resolved.sources[key.name] = source
        resolved.layers[key.name] = layer
    _one_model(resolved)
    return resolved


def resolve_one(name: str, flag: Any, env: Mapping[str, str]) -> tuple[Any, str]:
    """One key's value and source, as ``resolve`` finds it (``flag`` None: not given)."""
    flags = {} if flag is None else {name: flag}
    value, source, _ = _one(by_name(name), flags, env, load_config(env))
    return value, source


def _one(
    key: Key, flags: Mapping[str, Any], env: Mapping[str, str], file: UserConfig
) -> tuple[Any, str, int]:
    if key.name in flags:
        return flags[key.name], key.flag or key.name, _FLAG
    for name in key.envs:
        text = env.get(name, "").strip()
        if text:
            return _checked(key, text, name), f"env {name}", _ENV
    if key.file and file.get(key.name) is not None:
        source = f"{key.name} in the config file {file.path}"
        return _checked(key, file.get(key.name), source), f"config file {file.path}", _FILE
    return key.default, "default", _DEFAULT


def _checked(key: Key, value: Any, source: str) -> Any:
    """``value`` from ``source`` through the key's check, as a flag's value would be."""
    if key.switch and isinstance(value, str):
        return value.lower() not in _OFF
    if key.kind is None or isinstance(value, bool):
        return value
    try:
        return key.kind.convert(value, None, None)
    except click.BadParameter as error:
        if isinstance(key.kind, click.Choice):
            *rest, last = (str(choice) for choice in key.kind.choices)
            raise ConfigError(
                f"{source} must be {', '.join(rest)} or {last}, not {value!r}"
            ) from None
        raise ConfigError(f"{source}: {error.format_message()}") from None


def _one_model(resolved: Resolved) -> None:
    """An endpoint or a local model file, not both: the one from the higher layer (flag >
    environment > config file) is used, the other set aside; both from one layer is a usage
    error naming both sources."""
    values, layers, sources = resolved.values, resolved.layers, resolved.sources
    if values["base_url"] is None or values["model_file"] is None:
        return
    if layers["base_url"] != layers["model_file"]:
        higher = layers["base_url"] > layers["model_file"]
        winner, loser = ("base_url", "model_file") if higher else ("model_file", "base_url")
        values[loser] = None
        sources[loser] = f"not used: {sources[winner]} given ({sources[loser]})"
        return
    raise ConfigError(
        f"{sources['base_url']} names an endpoint ({_where(resolved, 'base_url')}) and "
        f"{sources['model_file']} a local model file ({values['model_file']}): minipi uses one "
        "of them; drop the one you do not mean",
        code="conflicting_settings",
    )


def _where(resolved: Resolved, name: str) -> str:
    from minipi.ai.baseurl import split_base_url

    return split_base_url(str(resolved.values[name]))[0]


def resolve_settings(options: RunOptions, env: Mapping[str, str] | None = None) -> Settings:
    """The run's ``Settings`` from the flags, the environment and the config file."""
    resolved = resolve(options.flags, env)
    values = resolved.values
    api_key = values["api_key"]
    if api_key is None and values["base_url"] is not None:
        api_key = resolved.file.api_key()  # the key command runs only for an endpoint
    given = {
        key.name: values[key.name]
        for key in KEYS
        if key.name in _SETTINGS and values[key.name] is not None
    }
    return Settings(
        **given,
        api_key=api_key,
        model_file_origin=resolved.sources["model_file"].removeprefix("env "),
        instructions=_instructions(values["system"]),
        request_options=_request_options(values),
    )


_SETTINGS = frozenset(f.name for f in fields(Settings)) - {"api_key"}


def project_root(options: RunOptions, env: Mapping[str, str] | None = None) -> Path:
    """The root the file tools are confined to: ``--project``, else the current directory.
    ``/``, the home directory itself, a directory of secrets and minipi's own directories
    (or one inside them) are refused unless ``--allow-broad-root``: a question about a project
    should not let the model read every file of the machine or the user. A root that holds
    one of minipi's own directories where the sensitive-path guard cannot see it (``~/.config``,
    ``~/.local/share``, a folder above ``$XDG_CONFIG_HOME``) is refused even so."""
    env = os.environ if env is None else env
    root = Path(os.path.realpath(options.project if options.project is not None else "."))
    given = "--project" if options.project is not None else "the current directory"
    own = _own_places(options, env)
    what = _broad(root, env.get("HOME"), own.values())
    if what is not None and not options.allow_broad_root:
        raise ConfigError(
            f"the project root would be {root} ({what}, from {given}): the model could read "
            "any file there; pass --project DIR for the project you mean, or "
            "--allow-broad-root if you really mean it",
            code="broad_project_root",
        )
    for name, place in own.items():
        if _holds_unguarded(root, place):
            raise ConfigError(
                f"minipi's own {name} {place} is inside the project root {root} (from "
                f"{given}), where the model could read minipi's config, sessions, chat history "
                f"and logs; pass --project DIR for the project you mean, or {_MOVE[name]}",
                code="broad_project_root",
            )
    return root


_MOVE = {
    "data directory": "set MINIPI_DATA_DIR to a directory outside the project",
    "config directory": "set MINIPI_CONFIG to a file outside the project",
    "config file": "set MINIPI_CONFIG to a file outside the project",
}
"""How to move each of minipi's own places out of a project."""


def _own_places(options: RunOptions, env: Mapping[str, str]) -> dict[str, Path]:
    """minipi's own places, resolved: the config directory (only the file, when
    ``MINIPI_CONFIG`` names one) and the data directory (sessions, chat history, MCP logs),
    whether or not they exist yet: a run creates the data directory."""
    config = config_path(env)
    places = {"data directory": options.data_dir or data_dir(env)}
    if not env.get("MINIPI_CONFIG"):
        places["config directory"] = config.parent
    elif config.is_file():  # not /dev/null, which holds nothing
        places["config file"] = config
    return {name: Path(os.path.realpath(place)) for name, place in places.items()}


def _holds_unguarded(root: Path, place: Path) -> bool:
    """Whether ``place`` lies below ``root`` where the sensitive-path guard does not cover it."""
    from minipi.files.paths import is_sensitive

    if place == root or not place.is_relative_to(root):
        return False
    return not is_sensitive(place.relative_to(root).parts)


def _broad(root: Path, home: str | None, own: Iterable[Path]) -> str | None:
    """What makes ``root`` too broad a project, or None. The sensitive-path guard looks only
    below the root, so a root in a sensitive directory (``~/.aws``, ``~/.ssh``, a ``.git``,
    minipi's own) would hand its secrets over as plain files."""
    from minipi.files.paths import is_sensitive

    if root == Path(root.anchor):
        return "the file system's root"
    if home and root == Path(os.path.realpath(home)):
        return "your home directory"
    hidden = [part for part in root.parts if part.startswith(".")]
    if is_sensitive(hidden) or any(root.is_relative_to(place) for place in own):
        return "a directory of secrets, which the sensitive-path guard then cannot cover"
    return None


def _instructions(system: str | None) -> str:
    """minipi's instructions, then the user's own (``--system``)."""
    if system and system.strip():
        return DEFAULT_INSTRUCTIONS + "\n\n" + system.strip()
    return DEFAULT_INSTRUCTIONS


def _request_options(values: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    reasoning = values["reasoning"]
    if reasoning:
        if values["wire"] == "responses":
            options["reasoning"] = {"effort": reasoning}
        else:
            options["reasoning_effort"] = reasoning
    if values["max_output_tokens"] is not None:
        options["max_output_tokens"] = values["max_output_tokens"]
    if values["temperature"] is not None:
        options["temperature"] = values["temperature"]
    return options
