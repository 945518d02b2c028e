"""A real MCP server (the SDK's ``MCPServer``) for minipi's tests, over stdio or streamable HTTP.

    python tests/mcp_servers/toolbox.py [--http PORT [--token T]] [--many N] [--name-clash NAME]
                                        [--garbage] [--bad-schema] [--linger S]

Tools: ``echo`` (read-only hint), ``add`` (counted), ``calls`` (the counts), ``fail`` (an
``isError`` result), ``media`` (text, image, audio, embedded resources and a link in one
result), ``big`` (a result of N MB), ``sleep`` (async; for call timeouts), ``nap`` (the same,
read-only), ``block`` (blocks the server's event loop, so only a signal stops it), ``crash``
(writes to stderr, then exits mid-call), ``quit_later`` (exits after answering), ``whoami``
(pid and process group), ``spawn`` (starts a grandchild ``sleep`` in the server's process
group), ``work`` (takes a given number of milliseconds: the bench's server time).

``--garbage`` writes lines that are not JSON-RPC on stdout before serving; ``--many N`` adds N
tools ``t0000``…; ``--name-clash NAME`` adds a read-only tool named NAME; ``--bad-schema`` adds a
tool whose input schema is not a valid JSON Schema; ``--token T`` (HTTP) refuses requests
without ``Authorization: Bearer T``; ``--linger S`` ignores SIGTERM and stays S seconds after
its stdin closes (a server slow to stop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Audio, Image
from mcp.server.mcpserver.exceptions import ToolError

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
PNG = bytes.fromhex("89504e470d0a1a0a") + b"\0" * 92  # 100 bytes; only the size matters
CHILDREN: list[subprocess.Popen[bytes]] = []
CALLS: Counter[str] = Counter()


def build(options: argparse.Namespace) -> MCPServer:
    server: MCPServer = MCPServer("toolbox", log_level="WARNING")
    _core_tools(server)
    _fault_tools(server)
    for index in range(options.many):
        _add_numbered(server, index)
    if options.name_clash:
        server.add_tool(_echo_copy, name=options.name_clash, annotations=READ_ONLY)
    if options.bad_schema:
        _add_bad_schema(server)
    return server


def _core_tools(server: MCPServer) -> None:
    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers."""
        CALLS["add"] += 1
        return str(a + b)

    @server.tool(annotations=READ_ONLY)
    def calls() -> str:
        """How many times each counted tool ran."""
        return json.dumps(CALLS)

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the reason given (an isError result)."""
        raise ToolError(f"refused: {reason}")

    @server.tool(structured_output=False)
    def media() -> list[Any]:
        """One result with every kind of content block."""
        return [
            "caption",
            Image(data=PNG, format="png"),
            Audio(data=b"\0" * 300, format="wav"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///notes.txt", text="inline note")
            ),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///blob.bin", mime_type="application/octet-stream", blob="AAAA"
                )
            ),
            types.ResourceLink(uri="file:///elsewhere.txt", name="elsewhere", size=42),
        ]

    @server.tool()
    def big(megabytes: float) -> str:
        """A text result of the given size."""
        return "x" * int(megabytes * 1_000_000)

    @server.tool()
    def work(ms: float) -> str:
        """Take ``ms`` milliseconds (busy-waiting), then answer."""
        end = time.perf_counter() + ms / 1000
        while time.perf_counter() < end:
            pass
        return "done"


def _fault_tools(server: MCPServer) -> None:
    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep without blocking the server."""
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool(annotations=READ_ONLY)
    async def nap(seconds: float) -> str:
        """Sleep without blocking the server; marked read-only (runs in parallel batches)."""
        await asyncio.sleep(seconds)
        return "rested"

    @server.tool()
    async def block(seconds: float) -> str:
        """Block the whole server (its event loop: the SDK runs sync tools in threads)."""
        time.sleep(seconds)
        return "unblocked"

    @server.tool()
    def crash() -> str:
        """Exit in the middle of the call."""
        sys.stderr.write("toolbox: about to crash\nTraceback: simulated failure\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    def quit_later(seconds: float, code: int) -> str:
        """Answer, then exit with ``code`` after ``seconds`` (a server that dies while idle)."""
        threading.Timer(seconds, os._exit, (code,)).start()
        return "bye"

    @server.tool(annotations=READ_ONLY)
    def whoami() -> str:
        """The server's pid and process group."""
        return f"{os.getpid()} {os.getpgid(0)}"

    @server.tool()
    def spawn() -> str:
        """Start a grandchild process (in this server's process group); return its pid."""
        child = subprocess.Popen(["sleep", "300"])
        CHILDREN.append(child)
        return str(child.pid)


def _echo_copy(text: str) -> str:
    """The same as echo."""
    return text


def _add_numbered(server: MCPServer, index: int) -> None:
    def numbered(value: int) -> str:
        return str(value + index)

    server.add_tool(
        numbered, name=f"t{index:04d}", description=f"Numbered tool {index}: adds {index}."
    )


def _add_bad_schema(server: MCPServer) -> None:
    def handler(text: str) -> str:
        return text

    server.add_tool(handler, name="bad_schema", description="Its schema is broken.")
    tool = server._tool_manager.get_tool("bad_schema")  # test-only: corrupt the declaration
    assert tool is not None
    tool.parameters = {"type": "object", "properties": {"text": {"type": "strin"}}}


def _serve_http(server: MCPServer, port: int, token: str | None) -> None:
    import uvicorn
    from starlette.responses import PlainTextResponse
    from starlette.types import ASGIApp, Receive, Scope, Send

    app: ASGIApp = server.streamable_http_app(host="127.0.0.1")
    inner = app

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if token is not None and scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await PlainTextResponse("missing or wrong token", 401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--token")
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--name-clash")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--bad-schema", action="store_true")
    parser.add_argument("--linger", type=float, default=0.0)
    options = parser.parse_args()
    if options.linger:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    server = build(options)
    if options.http:
        _serve_http(server, options.http, options.token)
        return
    if options.garbage:
        sys.stdout.write("starting toolbox...\n{not json\n[1, 2, 3]\n")
        sys.stdout.flush()
    server.run("stdio")
    time.sleep(options.linger)


if __name__ == "__main__":
    main()
