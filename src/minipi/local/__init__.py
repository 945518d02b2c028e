"""The embedded model engine: model resolution and a llama.cpp server as a child process.

    from minipi.local import Engine, EngineClient, find_running, resolve_model

    running = find_running()                     # a `minipi serve` on 127.0.0.1:8021?
    model = resolve_model(None, os.environ)      # --model-file, HF cache, download, SmolLM2
    with Engine.start(model) as engine:          # a free 127.0.0.1 port
        client = EngineClient(connect(Endpoint(engine.base_url, engine.model_name)), engine)

Needs the ``local`` extra (``pip install 'minipi[local]'``) only to start an engine; resolving
a model and finding a running server work without it.
"""

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
