"""The loopback ports of the local engine: a free one, a busy one, a server already there.

``find_running`` lets ``minipi ask`` reuse a ``minipi serve`` on the default port instead of
starting an engine of its own. Loopback requests ignore proxy settings (``trust_env=False``):
a proxy cannot reach this machine's 127.0.0.1.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

import httpx

from minipi.errors import ConfigError

__all__ = [
    "DEFAULT_PORT",
    "HOST",
    "RunningServer",
    "busy_port_error",
    "check_port",
    "find_running",
    "free_port",
    "model_ids",
]

DEFAULT_PORT = 8021
"""The port of ``minipi serve`` (the seed's ``QWEN_BASE_URL``), where ``find_running`` looks."""
HOST = "127.0.0.1"
"""The engine listens on loopback only."""


@dataclass(frozen=True)
class RunningServer:
    """An OpenAI-compatible server found answering on the loopback interface."""

    base_url: str
    """``http://127.0.0.1:PORT/v1``."""
    model: str
    """The first model id its ``/v1/models`` lists."""


def find_running(port: int = DEFAULT_PORT) -> RunningServer | None:
    """The OpenAI-compatible server answering ``GET /v1/models`` on 127.0.0.1:``port`` with at
    least one model, or None. Takes at most about half a second; never raises for network
    trouble."""
    base_url = f"http://{HOST}:{port}/v1"
    timeout = httpx.Timeout(0.3, connect=0.2)
    try:
        with httpx.Client(trust_env=False, timeout=timeout) as client:
            response = client.get(base_url + "/models")
        ids = model_ids(response)
    except (httpx.HTTPError, ValueError):
        return None
    return RunningServer(base_url, ids[0]) if ids else None


def model_ids(response: httpx.Response) -> list[str]:
    """The model ids a ``GET /v1/models`` answer lists: none unless it is a 200 with JSON.
    Raises ``ValueError`` for a 200 whose body is not JSON."""
    data = response.json() if response.status_code == 200 else None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


def free_port() -> int:
    """A port nothing listens on now (another program may still take it before we do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def check_port(port: int) -> int:
    """``port`` if a server could listen on it (probed as uvicorn binds: with SO_REUSEADDR),
    else ``ConfigError`` (one line; it names the server already there, if any)."""
    if not 0 < port < 65536:
        raise ConfigError(f"port {port} is out of range — pass --port between 1 and 65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise busy_port_error(port) from None
            raise ConfigError(
                f"cannot listen on {HOST}:{port} ({exc.strerror or exc}) — pass another --port"
            ) from None
    return port


def busy_port_error(port: int) -> ConfigError:
    """The error for a busy ``port``: what listens there, and what to do."""
    running = find_running(port)
    what = (
        f"an OpenAI-compatible server (model '{running.model}') already answers at "
        f"{running.base_url} — use it (--base-url {running.base_url}), stop it, or pass another "
        "--port"
        if running
        else "another program listens there — stop it or pass another --port"
    )
    return ConfigError(f"port {port} on {HOST} is busy: {what}", code="port_busy")
