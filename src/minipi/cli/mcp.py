"""The MCP flags of ``ask`` / ``chat``, and ``minipi mcp list``: options -> servers -> tools.

    with open_for_run(options, os.environ, data_dir, project, BUILTIN_TOOLS) as mcp:
        ...  # mcp is None when no server is configured (the SDK is then never imported)

Each stdio server's stderr goes to ``DATA_DIR/mcp/NAME.log``, never to the screen.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from minipi.cli.terminal import safe, safe_json
from minipi.errors import ConfigError
from minipi.files import PROJECT_TOOLS
from minipi.mcp.config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    McpConfig,
    McpServer,
    load_servers,
    parse_server_command,
    unique_servers,
)

if TYPE_CHECKING:
    from minipi.agent import AgentEvent, RunResult
    from minipi.agent.events import EventSink
    from minipi.ai.types import ToolSpec
    from minipi.assemble import Settings
    from minipi.cli.runner import Served
    from minipi.cli.settings import RunOptions
    from minipi.cli.words import Words
    from minipi.files import ProjectFiles
    from minipi.mcp import McpTools, ServerTools, ToolInfo

__all__ = [
    "BUILTIN_TOOLS",
    "TOKEN_ESTIMATE",
    "McpOptions",
    "answer_text",
    "configured_servers",
    "list_servers",
    "mcp_config",
    "offer_lines",
    "open_for_run",
    "refuse_withheld",
    "serve_project",
]

BUILTIN_TOOLS = PROJECT_TOOLS
"""Names MCP tools may not take (unless prefixed): the project file tools'."""
TOKEN_ESTIMATE = "estimate: UTF-8 bytes / 3"


@dataclass(frozen=True)
class McpOptions:
    """The MCP flags, as parsed."""

    commands: tuple[str, ...] = ()
    """``--mcp 'COMMAND ARGS…'`` (repeatable): stdio servers."""
    config_file: Path | None = None
    """``--mcp-config FILE``: an ``mcpServers`` JSON file."""
    trusted: tuple[str, ...] = ()
    """``--mcp-trust NAME`` (repeatable): believe these servers' read-only hints."""
    prefix: bool = False
    """``--mcp-prefix``: call MCP tools SERVER__TOOL."""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    """``--mcp-connect-timeout SECONDS``."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    """``--mcp-call-timeout SECONDS``."""

    @property
    def configured(self) -> bool:
        return bool(self.commands) or self.config_file is not None


def configured_servers(options: McpOptions, env: Mapping[str, str]) -> tuple[McpServer, ...]:
    """The servers of ``--mcp-config`` then ``--mcp``, names made unique, ``--mcp-trust``
    applied (ConfigError for a name that is not configured)."""
    from_file = load_servers(options.config_file, env) if options.config_file else ()
    servers = unique_servers([*from_file, *(parse_server_command(c) for c in options.commands)])
    names = {s.name for s in servers}
    unknown = sorted(set(options.trusted) - names)
    if unknown:
        raise ConfigError(
            f"--mcp-trust {', '.join(unknown)}: no such MCP server; configured: "
            f"{', '.join(sorted(names)) or 'none'}",
            code="mcp_config",
        )
    return tuple(replace(s, trust=True) if s.name in options.trusted else s for s in servers)


def mcp_config(
    options: McpOptions, data_dir: Path, project: Path | None, reserved: Sequence[str] = ()
) -> McpConfig:
    """The library's settings; logs in ``data_dir/mcp``, which must lie outside the project
    (the file tools could read the logs otherwise)."""
    log_dir = data_dir / "mcp"
    if project is not None:
        logs, root = Path(os.path.realpath(log_dir)), Path(os.path.realpath(project))
        if logs == root or logs.is_relative_to(root):
            raise ConfigError(
                f"the MCP server logs would go to {log_dir}, inside the project root {root}; "
                "set MINIPI_DATA_DIR to a directory outside the project",
                code="mcp_config",
            )
    return McpConfig(
        connect_timeout=options.connect_timeout,
        call_timeout=options.call_timeout,
        log_dir=log_dir,
        prefix_names=options.prefix,
        reserved_names=tuple(reserved),
    )


@contextmanager
def open_for_run(
    options: McpOptions,
    env: Mapping[str, str],
    data_dir: Path,
    project: Path | None,
    reserved: Sequence[str] = BUILTIN_TOOLS,
    *,
    deadline: float | None = None,
) -> Iterator[McpTools | None]:
    """The configured servers' tools for ``ask``/``chat`` (None when none is configured),
    stopped on exit, each ready by ``deadline`` (``McpConfig.deadline``). ConfigError (exit
    2) when one cannot be used, naming it."""
    if not options.configured:
        yield None
        return
    from minipi.mcp import open_mcp_tools

    servers = configured_servers(options, env)
    config = replace(mcp_config(options, data_dir, project, reserved), deadline=deadline)
    with open_mcp_tools(servers, config) as tools:
        yield tools


def offer_lines(mcp: McpTools, approve: str, words: Words) -> list[str]:
    """What the run's start says about each server whose tools are not all offered: which
    are, and why each other one is not, naming the flag that changes it (nothing when all
    are offered), in the run's language."""
    return [line for server in mcp.servers for line in _offer(server, approve, words)]


def refuse_withheld(mcp: McpTools, settings: Settings, files: ProjectFiles, question: str) -> None:
    """ConfigError ``tools_withheld`` (exit 2, before any model request) when ``question``
    fits only MCP tools this run withholds (``_withheld_fitting``), naming them and the flag
    that offers them: the model, offered none of them, would answer something else."""
    from minipi.assemble import run_tools
    from minipi.cli.words import words_for

    tools = run_tools(settings, files, lambda request: False, mcp.tools)
    offered = [tool.spec() for tool in tools if tool.offered]
    fitting = _withheld_fitting(mcp, settings.approve, question, offered)
    if fitting:
        raise ConfigError(_withheld_said(fitting, words_for(question)), code="tools_withheld")


def _withheld_fitting(
    mcp: McpTools, approve: str, question: str, offered: Sequence[ToolSpec]
) -> list[ToolInfo]:
    """The MCP tools this run withholds that ``question`` fits, when it fits none of the
    tools ``offered``; [] otherwise (the run goes ahead).

    A question asks for a tool when it names what the tool's declaration names: fitting is
    guided mode's (``minipi.guided.fit``: content words shared with a tool's name,
    description and parameter names), read here for every tool, the file tools too (their
    words, not guided mode's "they fit every question": that says where their arguments come
    from). A question that shares words with a withheld tool and none with an offered one
    is one only the withheld tool could answer. Where words cannot tell (no shared script:
    ``fit`` is None) an offered tool counts as fitting, and a question that names a path
    (``guided.rank.Question.paths``) fits the tools that explore the project, whose
    parameters take it."""
    from minipi.guided.fit import fit, question_words, tool_words
    from minipi.guided.rank import Question
    from minipi.guided.schema import explores

    asked = question_words(question)
    withheld = [t for server in mcp.servers for t in _withheld(server, approve)]
    fitting = [t for t in withheld if fit(asked, tool_words(_spec(t)))]
    if not fitting or any(fit(asked, tool_words(spec)) != 0 for spec in offered):
        return []
    if Question.of(question).paths and any(explores(spec) for spec in offered):
        return []
    return fitting


def _withheld_said(tools: Sequence[ToolInfo], words: Words) -> str:
    """Why a run stops ``tools_withheld``: the tools, and for each reason the flag that
    offers them, in the run's language."""
    lines = [words("tools_withheld")]
    for server in dict.fromkeys(t.server for t in tools):
        lines += _reasons(server, [t for t in tools if t.server == server], words)
    return "\n".join(lines)


def _withheld(server: ServerTools, approve: str) -> list[ToolInfo]:
    """The tools of ``server`` a run does not offer: in a read-only run, those that may
    change things (``ToolInfo.mutating``)."""
    return [t for t in server.tools if t.mutating] if approve == "deny" else []


def _spec(tool: ToolInfo) -> ToolSpec:
    from minipi.ai.types import ToolSpec

    return ToolSpec(tool.name, tool.description, tool.parameters, mutating=tool.mutating)


def _offer(server: ServerTools, approve: str, words: Words) -> list[str]:
    withheld = _withheld(server, approve)
    if not (withheld or server.left_out):
        return []
    offered = [t.name for t in server.tools if t not in withheld]
    total = len(server.tools) + len(server.left_out)
    names = ", ".join(offered) or words("mcp_none")
    name = repr(server.server.name)
    head = words("mcp_offers", name=name, offered=len(offered), total=total, names=names)
    return [head, *_not_offered(server, withheld, words)]


def _not_offered(server: ServerTools, withheld: list[ToolInfo], words: Words) -> list[str]:
    """Why the other tools are not offered: one line per reason tools were withheld, naming
    the flag that offers them, then one per tool left out."""
    lines = _reasons(server.server.name, withheld, words)
    lines.extend(words("mcp_left_out", name=tool, why=why) for tool, why in server.left_out)
    return lines


def _reasons(server: str, withheld: Sequence[ToolInfo], words: Words) -> list[str]:
    """One line per reason ``server``'s tools were withheld, naming the flag that offers
    them."""
    lines = []
    for hint, why in ((False, "mcp_mutating"), (True, "mcp_untrusted")):
        named = [t.name for t in withheld if t.read_only_hint == hint]
        if named:
            reason = words(why, server=server)
            lines.append(words("mcp_not_offered", names=", ".join(named), why=reason))
    return lines


def list_servers(
    options: McpOptions,
    env: Mapping[str, str],
    data_dir: Path,
    *,
    as_json: bool = False,
    out: TextIO | None = None,
) -> int:
    """``minipi mcp list``: each server, its tools, descriptions, read-only or not, and the
    tokens their declarations take. 0 when every server can be used as configured, 2 when
    one cannot (it did not start, or a name clashes)."""
    from minipi.mcp import inspect_servers
    from minipi.mcp.toolset import name_clashes

    stream = out or sys.stdout
    if not options.configured:
        raise ConfigError("no MCP server configured: give --mcp 'COMMAND' or --mcp-config FILE")
    config = mcp_config(options, data_dir, None, BUILTIN_TOOLS)
    listed = inspect_servers(configured_servers(options, env), config)
    clashes = name_clashes(listed, BUILTIN_TOOLS)
    if as_json:
        stream.write(safe_json(json.dumps(_report(listed, clashes), ensure_ascii=False)) + "\n")
    else:
        _print(listed, clashes, stream)
    ok = not clashes and all(s.error is None for s in listed)
    return 0 if ok else 2


def _print(listed: Sequence[ServerTools], clashes: Sequence[str], out: TextIO) -> None:
    for server in listed:
        _print_server(server, out)
    total = sum(t.tokens for s in listed for t in s.tools)
    count = sum(len(s.tools) for s in listed)
    out.write(f"{count} tools, ~{total:,} tokens added to every request ({TOKEN_ESTIMATE})\n")
    for clash in clashes:
        out.write(safe(f"name clash: {clash}") + "\n")


def _print_server(server: ServerTools, out: TextIO) -> None:
    trust = "trusted" if server.server.trust else "not trusted"
    head = f"{server.server.name} ({server.server.label()}, {trust})"
    if server.error is not None:
        out.write(safe(f"{head}: cannot be used\n  {server.error}") + "\n\n")
        return
    tokens = sum(t.tokens for t in server.tools)
    out.write(safe(f"{head}: {len(server.tools)} tools, ~{tokens:,} tokens") + "\n")
    width = max((len(t.name) for t in server.tools), default=0)
    for tool in server.tools:
        line = f"  {tool.name.ljust(width)}  {_kind(tool):<22} ~{tool.tokens:<5,} {_first(tool)}"
        out.write(safe(line.rstrip()) + "\n")
    for name, why in server.left_out:
        out.write(safe(f"  left out: {name}: {why}") + "\n")
    if server.log_path is not None:
        out.write(safe(f"  log: {server.log_path}") + "\n")
    out.write("\n")


def _kind(tool: ToolInfo) -> str:
    if not tool.mutating:
        return "read-only"
    return "read-only hint, asks" if tool.read_only_hint else "may change, asks"


def _first(tool: ToolInfo) -> str:
    line = tool.description.strip().split("\n", 1)[0]
    return line if len(line) <= 80 else line[:79] + "…"


def _report(listed: Sequence[ServerTools], clashes: Sequence[str]) -> dict[str, Any]:
    return {
        "servers": [_server_json(s) for s in listed],
        "tokens": sum(t.tokens for s in listed for t in s.tools),
        "token_estimate": TOKEN_ESTIMATE,
        "clashes": list(clashes),
    }


def _server_json(server: ServerTools) -> dict[str, Any]:
    return {
        "name": server.server.name,
        "transport": server.server.transport,
        "label": server.server.label(),
        "trusted": server.server.trust,
        "protocol": server.protocol,
        "error": server.error,
        "log": str(server.log_path) if server.log_path is not None else None,
        "tokens": sum(t.tokens for t in server.tools),
        "tools": [
            {
                "name": t.name,
                "server_name": t.remote_name,
                "description": t.description,
                "read_only_hint": t.read_only_hint,
                "asks": t.mutating,
                "tokens": t.tokens,
                "parameters": t.parameters,
            }
            for t in server.tools
        ],
        "left_out": [{"name": n, "why": w} for n, w in server.left_out],
    }


TOKEN_VARIABLE = "MINIPI_MCP_TOKEN"
"""``minipi mcp serve --port``: when set, every HTTP request must carry this bearer token."""


def serve_project(
    options: RunOptions, port: int | None, env: Mapping[str, str] | None = None
) -> int:
    """``minipi mcp serve``: the project's ``ask_project`` and ``read_sources`` as an MCP
    server (``minipi.mcp.server``), over stdio until stdin closes, or over streamable HTTP on
    127.0.0.1:``port`` until interrupted. Read-only unless ``--approve all``; the model,
    budgets and session are ``ask``'s. ConfigError (exit 2) for what cannot start."""
    import anyio

    from minipi.cli.runner import open_served
    from minipi.cli.words import Words
    from minipi.mcp.server import ServedProject, build_server, serve_http, serve_stdio

    env = os.environ if env is None else env
    options = _served_options(options, env)
    with ExitStack() as stack:
        served = open_served(options, stack, _note, env)
        read_only = served.settings.approve == "deny"
        project = ServedProject(_asker(served), answer_text, _reader(served.files), read_only)
        server = build_server(project)
        words = Words(False)
        mode = words("serving_read_only" if read_only else "serving_changes")
        if served.book is not None:
            mode += "; " + words("serving_session", name=served.book.name)
        if port is None:
            _note(words("serving", transport="stdio", root=options.root, mode=mode))
            anyio.run(serve_stdio, server)
            return 0
        token = _token(env)
        mode += "; " + words("serving_open" if token is None else "serving_token")
        sock = _listening(port)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        _note(words("serving", transport=url, root=options.root, mode=mode))
        anyio.run(serve_http, server, sock, token)
    return 0


def _token(env: Mapping[str, str]) -> str | None:
    """The bearer token HTTP requests must carry (``MINIPI_MCP_TOKEN``), or None: none is
    asked for. Set but blank is a usage error, not an open server."""
    token = env.get(TOKEN_VARIABLE)
    if token is None:
        return None
    if not token.strip():
        raise ConfigError(
            f"{TOKEN_VARIABLE} is set but empty: give the token HTTP clients must send "
            "(Authorization: Bearer TOKEN), or unset it"
        )
    return token.strip()


def _served_options(options: RunOptions, env: Mapping[str, str]) -> RunOptions:
    """``options`` with the project root resolved (given, never the current directory: a
    host starts its servers wherever it runs) and ``--approve deny`` unless given: a
    server's changes are allowed on its own command line only, never by a config file."""
    from minipi.cli.settings import project_root

    if options.project is None:
        raise ConfigError(
            "minipi mcp serve needs --project DIR: the folder whose files it answers about"
        )
    flags = {"approve": "deny", **options.flags}
    root = project_root(options, env)
    return replace(options, project=root, flags=flags)


def _reader(files: ProjectFiles) -> Callable[[object], tuple[str, list[str]]]:
    """``read_sources``' way into the project: the run's own sandbox, a file whole (as
    ``read_file`` reads it, up to its size limit), its lines without their ends."""
    from minipi.files.text import split_lines

    def read(path: object) -> tuple[str, list[str]]:
        text = files.read_text(path)
        return text.path, [line.rstrip("\r\n") for line in split_lines(text.text)]

    return read


def _listening(port: int) -> socket.socket:
    from minipi.mcp.server import listening_socket

    try:
        return listening_socket(port)
    except OSError as error:
        raise ConfigError(
            f"--port {port}: cannot listen on 127.0.0.1:{port} ({error.strerror}); "
            "choose another port, or 0 for a free one"
        ) from None


def _asker(
    served: Served,
) -> Callable[[str, Callable[[str], None], dict[str, Any] | None], RunResult]:
    """Each question's run (with the schema of a structured answer, or None), its progress
    said through ``report`` and its summary line on stderr (the server's log), in the
    question's language."""
    from minipi.cli.words import words_for

    def ask(
        question: str, report: Callable[[str], None], schema: dict[str, Any] | None
    ) -> RunResult:
        words = words_for(question)
        result = served.ask(question, _progress(words, report), schema)
        _note(words.summary(result))
        return result

    return ask


def _progress(words: Words, report: Callable[[str], None]) -> EventSink:
    """The events a host may show while it waits: each model request, each tool run."""
    from minipi.agent.events import ToolExecuting, TurnStart

    def sink(event: AgentEvent) -> None:
        if isinstance(event, TurnStart):
            report(words("status_model", turn=event.turn))
        elif isinstance(event, ToolExecuting):
            report(words("status_tool", name=event.name))

    return sink


def answer_text(question: str, result: RunResult) -> str:
    """What ``ask_project`` says to a host that reads only text, in the question's language:
    the answer, the verdict, the facts minipi cited and each figure's sources (every row);
    for a run that did not succeed, its summary and why it ended."""
    from minipi.cli.evidence import cited_lines, evidence_lines
    from minipi.cli.words import words_for

    words = words_for(question)
    if not result.succeeded:
        return words.summary(result)
    verdict = result.verdict
    if verdict is None or verdict.backed:
        said = words("served_verdict", kind="backed", why=words("served_backed"))
    else:
        said = words("served_verdict", kind=verdict.kind, why=words(f"why_{verdict.reason}"))
    lines = [result.answer, "", said, *cited_lines(result.facts, words)]
    if result.evidence is not None:
        lines += evidence_lines(result.evidence.to_json(), words, fancy=False, verbose=True)
    return "\n".join(lines)


def _note(text: str) -> None:
    print(safe(text), file=sys.stderr, flush=True)
