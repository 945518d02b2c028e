"""The user's config file: defaults so that ``--model`` is not needed every time.

``$MINIPI_CONFIG`` (an absolute path), else ``$XDG_CONFIG_HOME/minipi/config.toml``, else
``~/.config/minipi/config.toml``; missing is fine (but not a ``MINIPI_CONFIG`` naming a
missing file: a usage error). Its keys are those of ``minipi.cli.keys``. It sits last in the
settings chain: flags > environment > this file > built-in defaults. Example::

    base_url = "http://127.0.0.1:8021/v1"
    model = "my-model"
    api_key_command = "pass show openai/minipi"   # its stdout is the key, asked only when needed
    approve = "ask"
    evidence = "require"
    max_turns = 12
    timeout = 300
    system = "Answer briefly."

Unknown keys and wrong types are usage errors naming the file and the key; the key itself
is never in a message.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minipi.cli.keys import KEYS
from minipi.errors import ConfigError

__all__ = ["UserConfig", "config_path", "load_config"]

_KEYS: dict[str, tuple[type, ...]] = {
    **{key.name: key.file for key in KEYS if key.file},
    "api_key_command": (str,),
}
"""The keys the file may hold and their types (the table's, and the key command)."""


@dataclass(frozen=True)
class UserConfig:
    """What the file says (an empty one when there is none)."""

    values: Mapping[str, Any]
    path: Path | None = None

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def api_key(self) -> str | None:
        """The stdout of ``api_key_command`` (stripped), run only when a key is needed, in
        the config file's folder: never in the project, whose own ``keyring.py`` or
        manifests (``uv run``, ``npx``) would be what runs. A file that someone else owns,
        or that others may write, is refused: its command would be theirs."""
        command = self.values.get("api_key_command")
        if not command or self.path is None:
            return None
        folder = self.path.resolve().parent
        _check_own(self.path)
        try:
            done = subprocess.run(
                shlex.split(command),
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                cwd=folder,
            )
        except (OSError, ValueError, subprocess.TimeoutExpired) as error:
            raise ConfigError(f"api_key_command in {self.path} could not run: {error}") from None
        if done.returncode != 0 or not done.stdout.strip():
            raise ConfigError(
                f"api_key_command in {self.path} exited {done.returncode} without printing a "
                "key; run it yourself to see why"
            )
        return done.stdout.strip()


def _check_own(path: Path) -> None:
    """``ConfigError`` unless ``path`` and its folder are this user's and nobody else may
    write them (a command in them runs with this user's rights)."""
    for target in (path, path.resolve().parent):
        try:
            info = os.stat(target)
        except OSError as error:
            raise ConfigError(f"cannot check {target}: {error.strerror}") from None
        others = info.st_mode & 0o022 and not (target.is_dir() and info.st_mode & 0o1000)
        if info.st_uid != os.getuid() or others:
            mode = f"{info.st_mode & 0o7777:04o}"
            raise ConfigError(
                f"api_key_command in {path} is not run: {target} can be written by someone "
                f"else (owner uid {info.st_uid}, mode {mode}); make it yours alone "
                f"(chmod go-w {target}), or give the key in OPENAI_API_KEY",
                code="config_not_private",
            )


def config_path(env: Mapping[str, str]) -> Path:
    """The config file's path; ``ConfigError`` for a relative ``MINIPI_CONFIG``, which would be
    read (and its ``api_key_command`` run) from whatever the current directory is."""
    explicit = env.get("MINIPI_CONFIG")
    if explicit:
        path = Path(os.path.expanduser(explicit))
        if not path.is_absolute():
            raise ConfigError(
                f"MINIPI_CONFIG is {explicit!r}, a relative path: it would be read from "
                "whatever the current directory is, and its api_key_command run; give an "
                "absolute path (like ~/.config/minipi/config.toml)",
                code="relative_config_path",
            )
        return path
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "minipi" / "config.toml"


def load_config(env: Mapping[str, str]) -> UserConfig:
    """The config file's settings, checked; an empty config when the file does not exist
    (``ConfigError`` when ``MINIPI_CONFIG`` names it)."""
    path = config_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if env.get("MINIPI_CONFIG"):
            raise ConfigError(
                f"MINIPI_CONFIG names {path}, which does not exist: create it, or unset "
                "MINIPI_CONFIG to use the default config file",
                code="missing_config_file",
            ) from None
        return UserConfig({})
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read the config file {path}: {error}") from None
    return UserConfig(_checked(path, text), path)


def _checked(path: Path, text: str) -> dict[str, Any]:
    import tomllib  # only when there is a file

    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"the config file {path} is not valid TOML: {error}") from None
    for key, value in values.items():
        kinds = _KEYS.get(key)
        if kinds is None:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"the config file {path} has an unknown key {key!r}; known: {known}")
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise ConfigError(f"in the config file {path}, {key} must be a {names}")
    return values
