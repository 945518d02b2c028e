"""minipi as an MCP server: a backed answer about one project, as a tool for other agents.

    project = ServedProject(ask=..., text=..., read=..., read_only=True)
    anyio.run(serve_stdio, build_server(project))        # or serve_http(server, port)

Two tools, on the official SDK's low-level ``Server``:

- ``ask_project(question, schema?)``: one minipi run on the project (the caller's ``ask``:
  model, budgets, sandbox and session as ``minipi mcp serve`` set them up). The result's
  structured content is ``{"status", "answer", "verdict": {"kind", "reason"}, "sources":
  [{"figure", "path", "line", ...}], "facts", "end_code", "error", "output"}``
  (``ANSWER_SCHEMA``, the tool's ``outputSchema``; ``output``, given a ``schema``: the answer
  as JSON of it, each field traced); its text content, for hosts that read only text, is the
  caller's ``text`` (the answer, the verdict, the sources). A run that did not succeed is a tool
  error (``isError``) carrying the same content. Runs are one at a time, each in a worker
  thread; the caller's progress reports become ``notifications/progress`` when the client
  asked for them.
- ``read_sources(path, line, context?)``: the lines of a project file around a claim's line,
  through the caller's ``read`` (the run's own sandbox): a path outside the project, a
  sensitive one or a line past the end is a tool error, never a crash.

The server never opens or closes what it serves. Messages it words itself are
``minipi.said``'s (in the question's language for ``ask_project``).
"""

from __future__ import annotations

import hmac
import json
import signal
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from minipi import __version__
from minipi.agent import RunResult
from minipi.errors import MiniPiError
from minipi.evidence import CheckedClaim, Evidence, Source
from minipi.language import written_in_chinese
from minipi.said import Said

__all__ = [
    "ANSWER_SCHEMA",
    "ASK_TOOL",
    "DEFAULT_CONTEXT",
    "MAX_CONTEXT",
    "READ_TOOL",
    "SOURCES_SCHEMA",
    "ServedProject",
    "build_server",
    "listening_socket",
    "serve_http",
    "serve_stdio",
    "structured_answer",
]

ASK_TOOL = "ask_project"
READ_TOOL = "read_sources"
DEFAULT_CONTEXT = 3
"""Lines shown on each side of the line ``read_sources`` is asked for."""
MAX_CONTEXT = 50

Report = Callable[[str], None]
"""Says how a run is going (one short line); the server sends it as progress."""


@dataclass(frozen=True)
class ServedProject:
    """What the server answers from."""

    ask: Callable[[str, Report, dict[str, Any] | None], RunResult]
    """One question's run (blocking), with the JSON Schema of a structured answer or None;
    the server never runs two at once. ``MiniPiError``: the run could not start."""
    text: Callable[[str, RunResult], str]
    """The text content of a run's result, for hosts that read only text."""
    read: Callable[[object], tuple[str, list[str]]]
    """The file at a path, through the run's own sandbox: the path as the project names it,
    and its lines without their ends (``MiniPiError`` when it is refused)."""
    read_only: bool
    """No tool of a run can change anything (``--approve deny``)."""


_SOURCE = {
    "type": "object",
    "properties": {
        "figure": {"type": "string", "description": "The figure as the answer wrote it."},
        "kind": {"type": "string"},
        "status": {
            "type": "string",
            "description": "exact, normalized, rounded, derived, ambiguous: backed; weak, "
            "path, from_question: shown, no support; unsupported: in no tool result",
        },
        "path": {"type": ["string", "null"]},
        "line": {"type": ["integer", "null"]},
        "column": {"type": ["integer", "null"]},
        "pointer": {"type": ["string", "null"], "description": "JSON Pointer in the file"},
        "tool": {"type": ["string", "null"]},
        "origin": {"type": ["string", "null"], "description": "content, path or question"},
    },
    "required": ["figure", "status", "path", "line"],
}

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "type": "string",
            "enum": ["succeeded", "failed", "budget_exhausted", "cancelled"],
        },
        "answer": {"type": "string", "description": "Empty unless status is succeeded."},
        "verdict": {
            "type": ["object", "null"],
            "description": "What the answer rests on (null unless status is succeeded).",
            "properties": {
                "kind": {"type": "string", "enum": ["backed", "weak", "unbacked"]},
                "reason": {"type": ["string", "null"]},
            },
            "required": ["kind", "reason"],
        },
        "sources": {"type": "array", "items": _SOURCE},
        "facts": {"type": "array", "items": {"type": "string"}},
        "end_code": {"type": ["string", "null"], "description": "Why the run did not succeed."},
        "error": {"type": ["string", "null"]},
        "output": {
            "type": ["object", "null"],
            "description": "With a schema: the answer as JSON of it (value), and each leaf's "
            "status and sources (fields); answer is then that JSON as text.",
            "properties": {"value": {}, "fields": {"type": "array", "items": {"type": "object"}}},
            "required": ["value", "fields"],
        },
    },
    "required": ["status", "answer", "verdict", "sources", "end_code"],
}

SOURCES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "line": {"type": "integer"},
        "first_line": {"type": "integer"},
        "last_line": {"type": "integer"},
        "total_lines": {"type": "integer"},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"line": {"type": "integer"}, "text": {"type": "string"}},
                "required": ["line", "text"],
            },
        },
    },
    "required": ["path", "line", "first_line", "last_line", "total_lines", "lines"],
}

_ASK_INPUT = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "minLength": 1,
            "description": "What to find out from the project's files, in English or Chinese.",
        },
        "schema": {
            "type": "object",
            "description": "A JSON Schema: the answer then comes as JSON of it (output.value "
            "of the result), each field traced to the files like a figure.",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}

_READ_INPUT = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A path relative to the project root."},
        "line": {"type": "integer", "minimum": 1, "description": "The line a source names."},
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_CONTEXT,
            "default": DEFAULT_CONTEXT,
            "description": "Lines to show on each side.",
        },
    },
    "required": ["path", "line"],
    "additionalProperties": False,
}


def _tools(read_only: bool) -> list[types.Tool]:
    ask = types.Tool(
        name=ASK_TOOL,
        title="Ask about the project (backed answer)",
        description=(
            "Answer a question about this project's files with minipi, which reads them "
            "with its own tools and checks every figure of the answer against what it read. "
            "Returns the answer, a verdict (backed: every figure was found in the files; "
            "weak or unbacked: do not rely on it without checking) and each figure's "
            "sources (path and line; read them with read_sources)."
        ),
        input_schema=_ASK_INPUT,
        output_schema=ANSWER_SCHEMA,
        annotations=types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=False,
            idempotent_hint=read_only,
            open_world_hint=False,
        ),
    )
    read = types.Tool(
        name=READ_TOOL,
        title="Read the lines around a source",
        description=(
            "The lines of a project file around a line that a source of ask_project names "
            "(paths relative to the project root; nothing outside it)."
        ),
        input_schema=_READ_INPUT,
        output_schema=SOURCES_SCHEMA,
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    return [ask, read]


class _Refused(Exception):
    """A call that is answered as a tool error, saying ``said``."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


def build_server(project: ServedProject) -> Server[Any]:
    """The SDK server of ``project``'s two tools."""
    lock = anyio.Lock()  # one run at a time: one model, one session record
    tools = _tools(project.read_only)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            if params.name == ASK_TOOL:
                async with lock:
                    return await _ask(project, arguments, ctx)
            if params.name == READ_TOOL:
                return _read(project.read, arguments)
        except _Refused as refused:
            return _error(refused.said)
        names = ", ".join(t.name for t in tools)
        raise MCPError(
            types.INVALID_PARAMS,
            Said.of("serve_unknown_tool", name=params.name, names=names).text(),
        )

    return Server(
        "minipi",
        version=__version__,
        instructions=(
            f"Ask questions about one project's files with {ASK_TOOL}: each answer comes with "
            f"a verdict and the sources of its figures; {READ_TOOL} shows a source's lines."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _ask(
    project: ServedProject, arguments: dict[str, Any], ctx: ServerRequestContext[Any]
) -> types.CallToolResult:
    question = _question(arguments)
    chinese = written_in_chinese(question)
    _no_other(arguments, {"question", "schema"}, chinese)
    schema = arguments.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise _Refused(Said.of("serve_schema_object", value=type(schema).__name__).text(chinese))
    result = await _run(project, question, schema, ctx)
    if isinstance(result, MiniPiError):  # a run that could not start (a bad schema, the session)
        raise _Refused(str(result))
    text = project.text(question, result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured_answer(result),
        is_error=not result.succeeded,
    )


async def _run(
    project: ServedProject,
    question: str,
    schema: dict[str, Any] | None,
    ctx: ServerRequestContext[Any],
) -> RunResult | MiniPiError:
    """The run, in a worker thread; the error that kept it from starting is returned (the
    portal's task group would raise it wrapped)."""
    outcome: RunResult | MiniPiError
    async with anyio.from_thread.BlockingPortal() as portal:
        report = _reporter(ctx, portal)
        try:
            outcome = await anyio.to_thread.run_sync(project.ask, question, report, schema)
        except MiniPiError as error:
            outcome = error
    return outcome


def _reporter(ctx: ServerRequestContext[Any], portal: anyio.from_thread.BlockingPortal) -> Report:
    """Progress notifications through ``portal`` (into the event loop) from whatever thread
    the run is in, counting up; none unless the client asked for progress."""
    sent = [0]

    def report(message: str) -> None:
        sent[0] += 1
        try:
            portal.call(ctx.session.report_progress, sent[0], None, message)
        except Exception:  # a client gone or refusing progress: the run goes on
            return

    return report


def _question(arguments: Mapping[str, Any]) -> str:
    question = arguments.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _Refused(Said.of("serve_question_empty").text())
    return question.strip()


def _no_other(arguments: Mapping[str, Any], known: set[str], chinese: bool = False) -> None:
    other = sorted(set(arguments) - known)
    if other:
        said = Said.of(
            "serve_unknown_arguments", names=", ".join(other), known=", ".join(sorted(known))
        )
        raise _Refused(said.text(chinese))


def structured_answer(result: RunResult) -> dict[str, Any]:
    """``ask_project``'s structured content (``ANSWER_SCHEMA``) for ``result``."""
    return {
        "status": result.status,
        "answer": result.answer,
        "verdict": result.verdict.to_json() if result.verdict is not None else None,
        "sources": _sources(result.evidence),
        "facts": list(result.facts),
        "end_code": result.code,
        "error": result.error,
        "output": result.output.to_json() if result.output is not None else None,
    }


def _sources(evidence: Evidence | None) -> list[dict[str, Any]]:
    """One row for each source of each figure (one with no path for a figure with none),
    in answer order, each row once."""
    if evidence is None:
        return []
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for claim in evidence.claims:
        for source in claim.sources or (None,):
            row = _row(claim, source)
            rows.setdefault(tuple(row.values()), row)
    return list(rows.values())


def _row(claim: CheckedClaim, source: Source | None) -> dict[str, Any]:
    return {
        "figure": claim.claim.text,
        "kind": claim.claim.kind,
        "status": claim.status,
        "path": source.path if source else None,
        "line": source.line if source else None,
        "column": source.column if source else None,
        "pointer": source.pointer if source else None,
        "tool": source.tool if source else None,
        "origin": source.origin if source else None,
    }


def _read(
    read: Callable[[object], tuple[str, list[str]]], arguments: dict[str, Any]
) -> types.CallToolResult:
    """``read_sources``: the lines around ``line``, numbered."""
    _no_other(arguments, {"path", "line", "context"})
    line = _whole(arguments.get("line"), "serve_line", 1, None)
    context = _whole(arguments.get("context", DEFAULT_CONTEXT), "serve_context", 0, MAX_CONTEXT)
    try:
        path, lines = read(arguments.get("path"))
    except MiniPiError as error:  # outside the project, sensitive, missing, too large...
        raise _Refused(str(error)) from None
    if line > len(lines):
        said = Said.of("serve_past_end", line=line, path=path, total=len(lines))
        raise _Refused(said.text())
    first, last = max(1, line - context), min(len(lines), line + context)
    shown = [{"line": n, "text": lines[n - 1]} for n in range(first, last + 1)]
    width = len(str(last))
    text = "\n".join(
        f"{'>' if row['line'] == line else ' '} {row['line']:>{width}}  {row['text']}"
        for row in shown
    )
    body = {
        "path": path,
        "line": line,
        "first_line": first,
        "last_line": last,
        "total_lines": len(lines),
        "lines": shown,
    }
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{path}:{line}\n{text}")],
        structured_content=body,
    )


def _whole(value: object, key: str, least: int, most: int | None) -> int:
    """``value`` as a whole number from ``least`` to ``most``, else a tool error (``key``)."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and least <= value
        and (most is None or value <= most)
    ):
        return value
    raise _Refused(Said.of(key, value=repr(value), most=most or 0).text())


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve over this process's stdin and stdout until stdin closes (stdout carries only
    the protocol: the SDK points fd 1 at stderr meanwhile)."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def bearer_only(app: Any, token: str) -> Any:
    """``app`` (ASGI) behind a static bearer token: an HTTP request whose ``Authorization``
    is not ``Bearer TOKEN`` gets 401 and never reaches it (compared in constant time);
    lifespan events pass. The 127.0.0.1 socket keeps other machines out; the token keeps out
    the other users and processes of this one."""
    expected = f"Bearer {token}".encode()
    refusal = json.dumps({"error": "unauthorized: send Authorization: Bearer TOKEN"}).encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(refusal)).encode()),
                    (b"www-authenticate", b'Bearer realm="minipi"'),
                ]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": refusal})
                return
        await app(scope, receive, send)

    return guarded


def listening_socket(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (0: a free port), made before the server
    starts so that the address can be said first."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_http(server: Server[Any], sock: socket.socket, token: str | None = None) -> None:
    """Serve streamable HTTP at ``/mcp`` on ``sock`` (127.0.0.1: the SDK refuses requests
    whose Host or Origin is not local) until Ctrl-C (then ``KeyboardInterrupt``) or SIGTERM
    (then it returns: the caller closes what it opened and exits 0). With ``token``, a
    request without ``Authorization: Bearer TOKEN`` is answered 401 (``bearer_only``)."""
    import uvicorn

    class Uvicorn(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:  # uvicorn raises each signal again once shut down: not SIGTERM
                    caught: list[int] = getattr(self, "_captured_signals", [])
                    caught[:] = [number for number in caught if number != signal.SIGTERM]

    app: Any = server.streamable_http_app(host="127.0.0.1")
    if token is not None:
        app = bearer_only(app, token)
    # an event stream a client keeps open delays the stop by this much at most
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    await Uvicorn(config).serve(sockets=[sock])
