"""Where the CLI's settings come from: flags > QWEN_* > OPENAI_* (the only place env is read)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minipi.ai.endpoint import ClientConfig
from minipi.ai.types import Wire
from minipi.errors import ConfigError

__all__ = ["DEFAULT_INSTRUCTIONS", "Settings", "resolve_settings"]

DEFAULT_INSTRUCTIONS = (
    "You answer questions about the files of one project, using the tools. "
    'Paths are relative to the project root; use "." for the root. '
    "Find files with list_files (or search_files), then read_file a path that a tool returned. "
    "Never guess file contents: every figure in your answer must come from a file you read. "
    "Finish the task before you answer; do not ask the user to open files. "
    "Answer in the language of the question."
)


@dataclass(frozen=True)
class Settings:
    """Everything ``minipi ask``/``chat`` need to connect to a model."""

    base_url: str | None
    """OpenAI-compatible base URL (``…/v1``); None: use the local engine."""
    model: str | None
    """Model name; None means: ask the server's /models and use its only model."""
    api_key: str | None
    """Bearer token, if the endpoint needs one. Never printed or written to traces."""
    wire: Wire
    """``chat`` (/chat/completions) or ``responses`` (/responses)."""
    request_options: Mapping[str, Any]
    """Extra request keys from QWEN_REASONING / QWEN_MAX_OUTPUT_TOKENS / --temperature."""
    stream: bool = True
    """Stream replies (``--no-stream`` / ``MINIPI_STREAM=0`` for servers that cannot)."""
    timeout: float | None = None
    """Seconds to wait for an answer, and the longest silence in a stream (``--timeout``)."""

    def client_config(self, *, stream: bool = True) -> ClientConfig:
        """The HTTP client settings these flags ask for (``stream=False``: never stream)."""
        streamed = self.stream and stream
        if self.timeout is None:
            return ClientConfig(stream=streamed)
        return ClientConfig(
            stream=streamed, read_timeout=self.timeout, stream_idle_timeout=self.timeout
        )


def _first(*values: str | None) -> str | None:
    return next((v for v in values if v), None)


def resolve_settings(
    *,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    wire: str | None,
    temperature: float | None = None,
    stream: bool | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge flags with the environment; raise ConfigError for values that make no sense."""
    env = os.environ if env is None else env
    url = _first(base_url, env.get("QWEN_BASE_URL"), env.get("OPENAI_BASE_URL"))
    named = _first(wire, env.get("MINIPI_WIRE")) or "chat"
    if named not in ("chat", "responses"):
        raise ConfigError(f"unknown wire {named!r}: use chat or responses")
    chosen_wire: Wire = "responses" if named == "responses" else "chat"
    return Settings(
        base_url=url,
        model=_first(model, env.get("QWEN_MODEL"), env.get("OPENAI_MODEL")),
        api_key=_first(api_key, env.get("QWEN_API_KEY"), env.get("OPENAI_API_KEY")),
        wire=chosen_wire,
        request_options=_request_options(env, chosen_wire, temperature),
        stream=stream if stream is not None else env.get("MINIPI_STREAM", "1") not in _OFF,
        timeout=timeout,
    )


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
