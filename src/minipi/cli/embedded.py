"""The model a CLI run talks to: a configured endpoint, a running ``minipi serve``, or an
embedded engine that this command starts and stops itself.

Guided tool calling wraps the client here, outside the loop: the loop never knows.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.types import ModelClient
from minipi.cli.settings import Settings
from minipi.errors import ConfigError

__all__ = ["ModelHandle", "open_model"]


@dataclass
class ModelHandle:
    """An open model client (``client.model`` is the model's name), where it is, and what to
    stop when the command ends."""

    client: ModelClient
    base_url: str
    embedded: bool
    stops: list[Callable[[], None]] = field(default_factory=list)
    context_tokens: int | None = None
    """The model's context window, when the engine tells (our own engine's ``n_ctx``)."""

    def close(self) -> None:
        self.client.close()
        for stop in reversed(self.stops):
            stop()


def open_model(
    settings: Settings,
    *,
    model_file: str | None,
    guided: bool | None,
    env: Mapping[str, str],
    can_approve: bool = True,
) -> ModelHandle:
    """Connect to the configured endpoint, or to the local engine when none is configured.

    ``guided=None`` means: on for the embedded engine, off for other endpoints. Without
    ``can_approve``, guided replies cannot name the mutating tools at all.
    """
    configured = settings.base_url is not None and model_file is None
    guided = guided if guided is not None else not configured
    # A guided reply is a JSON document, not text to show as it comes: not streamed.
    config = settings.client_config(stream=not guided)
    if configured:
        if settings.model is None:
            raise ConfigError("no model name: pass --model NAME (or set QWEN_MODEL / OPENAI_MODEL)")
        assert settings.base_url is not None
        endpoint = Endpoint(settings.base_url, settings.model, settings.api_key, settings.wire)
        client = connect(endpoint, config)
        handle = ModelHandle(client, endpoint.base_url, embedded=False)
    else:
        handle = _local(settings, model_file, env, config)
    if guided:
        from minipi.local.guided import GuidedClient

        handle.client = GuidedClient(handle.client, offer_mutating=can_approve)
    return handle


def _say(message: str) -> None:
    print(f"minipi: {message}", file=sys.stderr, flush=True)


def _local(
    settings: Settings, model_file: str | None, env: Mapping[str, str], config: ClientConfig
) -> ModelHandle:
    """A running ``minipi serve`` on 127.0.0.1:8021, else a fresh engine on a free port.

    Usage errors (exit 2), in this order: ``--wire responses``; a bad ``--model-file`` or
    ``MINIPI_MODEL_FILE``, whatever is installed; the missing ``local`` extra, which only
    starting an engine needs (a running ``minipi serve`` is used without it)."""
    from minipi.local.client import EngineClient
    from minipi.local.engine import Engine, require_local_extra
    from minipi.local.models import explicit_model, resolve_model
    from minipi.local.ports import DEFAULT_PORT, find_running

    if settings.wire == "responses":
        raise ConfigError("the local engine speaks /chat/completions only: drop --wire responses")
    if model_file is None:
        running = find_running(DEFAULT_PORT)
        if running is not None:
            _say(f"using the engine already running at {running.base_url} (model {running.model})")
            endpoint = Endpoint(running.base_url, running.model, wire="chat")
            client = connect(endpoint, config)
            return ModelHandle(client, running.base_url, embedded=True)
    choice = explicit_model(model_file, env)
    require_local_extra()  # before a download that would be of no use
    choice = choice or resolve_model(None, env, report=_say)
    for line in (choice.notice or "").splitlines():
        _say(line)
    _say(f"starting the local engine: {choice.name} ({choice.path}, {choice.source})")
    engine = Engine.start(choice)
    endpoint = Endpoint(engine.base_url, engine.model_name, wire="chat")
    client = EngineClient(connect(endpoint, config), engine)
    return ModelHandle(
        client,
        engine.base_url,
        embedded=True,
        stops=[engine.stop],
        context_tokens=engine.n_ctx,
    )
