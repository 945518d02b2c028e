"""The embedded model engine: model resolution and a llama.cpp server as a child process.

    from minipi.local import Engine, EngineClient, find_running, resolve_model

    running = find_running()                     # a `minipi serve` on 127.0.0.1:8021?
    model = resolve_model(None, os.environ)      # --model-file, HF cache, download, demo model
    with Engine.start(model) as engine:          # a free 127.0.0.1 port
        client = EngineClient(connect(Endpoint(engine.base_url, engine.model_name)), engine)

Needs the ``local`` extra (``pip install 'minipi[local]'``) only to start an engine; resolving
a model and finding a running server work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minipi._lazy import lazy_names

if TYPE_CHECKING:
    from minipi.local.client import EngineClient
    from minipi.local.engine import (
        DEFAULT_PORT,
        Engine,
        PromptStats,
        RunningServer,
        find_running,
        require_local_extra,
    )
    from minipi.local.models import ModelChoice, resolve_model

__all__ = [
    "DEFAULT_PORT",
    "Engine",
    "EngineClient",
    "ModelChoice",
    "PromptStats",
    "RunningServer",
    "find_running",
    "require_local_extra",
    "resolve_model",
]

# Imported on first use (PEP 562): the CLI reads ``minipi.local.models`` for its help text
# without paying for the engine and its HTTP client.
_HOMES = {
    "minipi.local.client": ("EngineClient",),
    "minipi.local.engine": (
        "DEFAULT_PORT",
        "Engine",
        "PromptStats",
        "RunningServer",
        "find_running",
        "require_local_extra",
    ),
    "minipi.local.models": ("ModelChoice", "resolve_model"),
}
__getattr__ = lazy_names(__name__, _HOMES)
