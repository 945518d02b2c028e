"""The configuration a batch directory was made with, and what a resumed run changed.

Results are comparable only when made the same way: the model, the endpoint and every option
that shapes a run are recorded in ``batch.json`` with their sha256 (the API key and the
credentials of a base URL never are: they change who pays, not what the model answers).
How many workers ran is not part of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from minipi.assemble import Settings

__all__ = ["changes", "describe", "fingerprint", "scrub"]

_SECRET = frozenset({"api_key", "model_file_origin"})
"""Not recorded: the key (a secret), and where the model file was named (not how it runs)."""


def describe(
    settings: Settings, env: Mapping[str, str], task_timeout: float | None
) -> dict[str, Any]:
    """The settings that shape a run, as JSON values (keys sorted)."""
    data: dict[str, Any] = {
        f.name: getattr(settings, f.name) for f in fields(settings) if f.name not in _SECRET
    }
    if data["model_file"] is None and settings.base_url is None:
        data["model_file"] = env.get("MINIPI_MODEL_FILE")  # what the local engine will load
    data["task_timeout"] = task_timeout
    normal: dict[str, Any] = scrub(json.loads(json.dumps(data, sort_keys=True, default=_plain)))
    return normal


def scrub(config: Any) -> Any:
    """``config`` with the credentials taken out of its base URL (``user:pw@``): like the
    key, they are a secret, and never written to ``batch.json`` nor shown in a message
    (an older ``batch.json`` that holds them is scrubbed when it is read)."""
    if not isinstance(config, dict) or not isinstance(config.get("base_url"), str):
        return config
    scheme, sep, rest = config["base_url"].partition("://")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:end].rpartition("@")[2]
    return {**config, "base_url": f"{scheme}{sep}{authority}{rest[end:]}"}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | frozenset | set):
        return list(value)
    return str(value)


def fingerprint(config: Mapping[str, Any]) -> str:
    text = json.dumps(config, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``name: old -> new`` for each setting that differs (long values shortened)."""
    return [
        f"{key}: {_shown(old.get(key))} -> {_shown(new.get(key))}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
