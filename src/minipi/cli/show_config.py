"""``minipi config [FLAGS]``: each effective setting, its value and where it came from.

One line a key of ``minipi.cli.keys``, in the config file's own syntax, the source after a
``#``: ``--max-turns``, ``env QWEN_MODEL``, ``config file PATH`` or ``default``. A secret is
never printed: the API key shows as ``"***"``, a base URL without its credentials, and the
``api_key_command`` is not run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from minipi.cli.keys import KEYS, Key
from minipi.cli.settings import Resolved, resolve
from minipi.cli.terminal import safe

__all__ = ["show_config"]


def show_config(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> int:
    """Print the settings that ``ask`` would run with these flags; 0."""
    env = os.environ if env is None else env
    resolved = resolve(flags, env)
    path = resolved.file.path
    lines = [f"# config file: {path}" if path is not None else _no_file(env)]
    lines += [_line(key, resolved) for key in KEYS]
    print(safe("\n".join(lines)), flush=True)
    return 0


def _no_file(env: Mapping[str, str]) -> str:
    """The path looked for (``load_config`` already refused a missing ``MINIPI_CONFIG``)."""
    from minipi.cli.config import config_path

    return f"# config file: none at {config_path(env)} (create it to set defaults)"


def _line(key: Key, resolved: Resolved) -> str:
    value, source = resolved.values[key.name], resolved.sources[key.name]
    if key.secret and value is None and resolved.file.get("api_key_command"):
        value = "***"
        source = f"config file {resolved.file.path} (api_key_command, run when needed)"
    if value is None or value == ():
        text = key.default_text() if callable(key.default_text) else key.default_text
        unset = f" ({text})" if text else ""
        return f"# {key.name} is not set{unset}  # {source}"
    return f"{key.name} = {_toml(_masked(key, value))}  # {source}"


def _masked(key: Key, value: Any) -> Any:
    if key.secret:
        return "***"
    if key.name == "base_url":
        from minipi.ai.baseurl import split_base_url

        url, credentials = split_base_url(str(value))
        return url if credentials is None else f"{url} (with credentials, not shown)"
    return value


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)
