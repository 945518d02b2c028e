"""Which MCP servers to connect, and how: frozen values, parsed from the CLI's strings and files.

    parse_server_command("uvx mcp-server-git --repository .")   # McpServer(name="git", ...)
    load_servers(Path("mcp.json"), os.environ)                   # the "mcpServers" file

The file is the one other MCP clients read::

    {"mcpServers": {
        "git":  {"command": "uvx", "args": ["mcp-server-git"], "env": {"TOKEN": "${TOKEN}"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${KEY}"},
                 "trust": true}}}

``${VAR}`` (and ``${VAR:-default}``) is expanded from the environment given, in every string
but the names; an unset variable without a default is an error. ``"disabled": true`` skips a
server. ``trust`` (minipi's key, ignored by other clients) lets the server's read-only hints
count: only then may its tools run without an approval.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from minipi.errors import ConfigError

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "McpConfig",
    "McpServer",
    "load_servers",
    "parse_server_command",
    "unique_servers",
]

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 120.0

_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Words of a command line that name a launcher rather than the server itself.
_RUNNERS = frozenset(
    "uv uvx npx pnpx bunx pipx python python3 node deno bun docker run tool exec x dlx".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class McpServer:
    """One MCP server: a command that speaks MCP on its stdin/stdout, or a streamable-HTTP URL."""

    name: str
    """How minipi names it: in messages, log files, approvals and ``name__tool`` prefixes."""
    command: str | None = None
    """The program to start (stdio); searched on the PATH of ``env``."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to the few the server inherits (HOME, LOGNAME, PATH, SHELL, TERM, USER):
    minipi's own environment, API keys included, is not passed on."""
    cwd: str | None = None
    """The server's working directory (default: minipi's)."""
    url: str | None = None
    """The streamable-HTTP endpoint (``http(s)://host/mcp``)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Sent with every HTTP request (``Authorization`` ...); never shown or logged."""
    trust: bool = False
    """Believe the server's ``readOnlyHint``s: such tools then run without an approval."""
    written_args: tuple[str, ...] | None = None
    """``args`` as the config file wrote them (``${VAR}`` not expanded): what is shown."""
    secrets: tuple[str, ...] = ()
    """Values that ``${VAR}`` put into ``args`` or ``headers``: never shown (``redact``)."""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ConfigError(
                f"MCP server name {self.name!r}: use 1-48 letters, digits, '_' or '-'",
                code="mcp_config",
            )
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"MCP server {self.name!r}: give either a command (stdio) or a url (HTTP)",
                code="mcp_config",
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ConfigError(
                f"MCP server {self.name!r}: url {self.url!r} must start with http:// or https://",
                code="mcp_config",
            )

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def label(self) -> str:
        """``stdio: COMMAND ARGS`` or ``http: URL`` (the URL without credentials or query),
        for messages; headers and env values are never part of it."""
        if self.command is not None:
            args = self.args if self.written_args is None else self.written_args
            return self.redact("stdio: " + shlex.join([self.command, *args]))
        return self.redact("http: " + _public_url(self.url or ""))

    def redact(self, text: str) -> str:
        """``text`` with each of ``secrets`` replaced by ``***`` (for what a server said)."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text


@dataclass(frozen=True)
class McpConfig:
    """How servers are connected and called (the same for every server)."""

    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    """Seconds for a server to start, answer ``initialize`` and list its tools."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    """Seconds one tool call may take; then it is cancelled and answered ``call_timeout``."""
    log_dir: Path | None = None
    """Where each stdio server's stderr goes (``NAME.log``); None: a temporary directory,
    removed on close."""
    prefix_names: bool = False
    """Call the tools ``SERVER__TOOL`` instead of their own names (to resolve a clash)."""
    reserved_names: tuple[str, ...] = ()
    """Names taken by other tools of the run (the built-ins): an MCP tool may not use them."""
    max_output_chars: int = 40_000
    """A longer result is cut, with a notice saying how much was left out."""
    deadline: float | None = None
    """A ``time.monotonic()`` by which every server must have started and listed its tools
    (the run's ``--max-seconds``), whatever ``connect_timeout`` allows: a server not ready
    then fails the start with code ``max_seconds``. None: ``connect_timeout`` only."""

    def __post_init__(self) -> None:
        if self.connect_timeout <= 0 or self.call_timeout <= 0:
            raise ConfigError("MCP timeouts must be positive", code="mcp_config")
        if self.max_output_chars < 100:
            raise ConfigError("max_output_chars must be at least 100", code="mcp_config")


def parse_server_command(text: str, *, name: str | None = None) -> McpServer:
    """A stdio server from a command line (``--mcp 'COMMAND ARGS…'``, split as a POSIX shell
    would, without expanding anything). The name is ``name`` or one derived from the command
    (``uvx mcp-server-git`` -> ``git``, ``python tools/notes.py`` -> ``notes``)."""
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise ConfigError(f"--mcp {text!r}: {error}", code="mcp_config") from None
    if not argv:
        raise ConfigError(
            "--mcp needs a command, e.g. --mcp 'uvx mcp-server-git'", code="mcp_config"
        )
    return McpServer(name or derive_name(argv), command=argv[0], args=tuple(argv[1:]))


def derive_name(argv: Iterable[str]) -> str:
    """A server name from its command line: the first word that is not a launcher or an
    option, without a path, an extension, a version or an ``mcp-server-`` affix."""
    for word in argv:
        base = re.sub(r"@[^/]*$", "", word.rstrip("/")).rsplit("/", 1)[-1]
        base = re.sub(r"\.(py|js|mjs|ts|exe)$", "", base)
        if word.startswith("-") or base.lower() in _RUNNERS or re.fullmatch(r"python[\d.]*", base):
            continue
        base = re.sub(r"^(mcp[-_]server[-_]|server[-_]|mcp[-_])", "", base)
        while (shorter := re.sub(r"[-_](mcp|server)$", "", base)) != base:
            base = shorter
        cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-")[:48]
        if cleaned:
            return cleaned
    return "server"


def unique_servers(servers: Iterable[McpServer]) -> tuple[McpServer, ...]:
    """``servers`` with repeated names made unique (``git``, ``git-2``...), in order."""
    seen: set[str] = set()
    result = []
    for server in servers:
        name, n = server.name, 1
        while name in seen:
            n += 1
            name = f"{server.name[:45]}-{n}"
        seen.add(name)
        result.append(server if name == server.name else replace(server, name=name))
    return tuple(result)


def load_servers(path: Path, env: Mapping[str, str]) -> tuple[McpServer, ...]:
    """The servers of an ``mcpServers`` JSON file, ``${VAR}`` expanded from ``env``; a
    relative ``cwd`` is taken from the file's directory. ConfigError names the file and the
    entry for anything it cannot use."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"--mcp-config {path}: {error.strerror}", code="mcp_config") from None
    except ValueError as error:
        raise ConfigError(
            f"--mcp-config {path}: not valid JSON ({error})", code="mcp_config"
        ) from None
    entries = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(
            f'--mcp-config {path}: expected {{"mcpServers": {{NAME: {{...}}}}}}', code="mcp_config"
        )
    servers = []
    for name, entry in entries.items():
        where = f"--mcp-config {path}: server {name!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected an object", code="mcp_config")
        if entry.get("disabled") is True:
            continue
        servers.append(_server(name, entry, _Expander(env, where), path.parent))
    return tuple(servers)


def _server(name: str, entry: dict[str, Any], expand: _Expander, base: Path) -> McpServer:
    trust = _trust(entry, expand)
    cwd = expand.optional(entry, "cwd")
    before = len(expand.expanded)
    args = tuple(expand.strings(entry, "args"))
    secrets = expand.expanded[before:]
    headers = expand.mapping(entry, "headers")
    secrets += [value for value in headers.values() if len(value) >= 4]
    try:
        return McpServer(
            name,
            command=expand.optional(entry, "command"),
            args=args,
            env=expand.mapping(entry, "env"),
            cwd=str(base / cwd) if cwd is not None else None,
            url=expand.optional(entry, "url"),
            headers=headers,
            trust=trust,
            written_args=tuple(str(v) for v in entry.get("args", [])) if secrets else None,
            secrets=tuple(secrets),
        )
    except ConfigError as error:
        if expand.where in error.message:
            raise
        raise ConfigError(f"{expand.where}: {error.message}", code="mcp_config") from None


def _trust(entry: dict[str, Any], expand: _Expander) -> bool:
    """The entry's ``trust``, once its ``type`` is one minipi speaks."""
    kind = entry.get("type", "stdio" if "command" in entry else "http")
    if kind == "sse":
        raise ConfigError(
            f"{expand.where}: the SSE transport is not supported; use the server's "
            "streamable-HTTP endpoint (type http)",
            code="mcp_config",
        )
    if kind not in ("stdio", "http", "streamable-http", "streamableHttp"):
        raise ConfigError(f"{expand.where}: unknown type {kind!r}", code="mcp_config")
    trust = entry.get("trust", False)
    if not isinstance(trust, bool):
        raise ConfigError(f"{expand.where}: trust must be true or false", code="mcp_config")
    return trust


@dataclass(frozen=True)
class _Expander:
    """Reads one entry's fields, expanding ``${VAR}`` and checking types."""

    env: Mapping[str, str]
    where: str
    expanded: list[str] = field(default_factory=list)
    """The values ``${VAR}`` expanded to so far (at least 4 characters: a secret's)."""

    def text(self, value: object, key: str) -> str:
        if not isinstance(value, str):
            raise ConfigError(f"{self.where}: {key} must be a string", code="mcp_config")
        return _VAR.sub(lambda m: self._lookup(m, key), value)

    def optional(self, entry: Mapping[str, Any], key: str) -> str | None:
        return None if entry.get(key) is None else self.text(entry[key], key)

    def strings(self, entry: Mapping[str, Any], key: str) -> list[str]:
        values = entry.get(key, [])
        if not isinstance(values, list):
            raise ConfigError(f"{self.where}: {key} must be a list of strings", code="mcp_config")
        return [self.text(v, key) for v in values]

    def mapping(self, entry: Mapping[str, Any], key: str) -> dict[str, str]:
        values = entry.get(key, {})
        if not isinstance(values, dict):
            raise ConfigError(
                f"{self.where}: {key} must be an object of strings", code="mcp_config"
            )
        return {str(k): self.text(v, f"{key}.{k}") for k, v in values.items()}

    def _lookup(self, match: re.Match[str], key: str) -> str:
        value = self.env.get(match[1])
        if value is not None:
            if len(value) >= 4:
                self.expanded.append(value)
            return value
        if match[2] is not None:
            return match[2]
        raise ConfigError(
            f"{self.where}: {key} uses ${{{match[1]}}}, which is not set; export it or write "
            f"${{{match[1]}:-default}}",
            code="mcp_config",
        )


def _public_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may carry secrets)."""
    match = re.match(r"^(https?://)(?:[^@/]*@)?([^?#]*)", url)
    return match[1] + match[2] if match else url
