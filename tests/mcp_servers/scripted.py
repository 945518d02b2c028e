"""A hand-written MCP server (plain JSON-RPC lines on stdio, no SDK): it answers exactly what
its flags say, so tests can reach what a well-behaved SDK server never sends.

    python tests/mcp_servers/scripted.py [--init-error TEXT] [--version V] [--ignore-unknown]
                                         [--tools JSON] [--marker M]

``--init-error TEXT`` answers ``initialize`` with a JSON-RPC error, then exits 0;
``--version V`` answers ``initialize`` with protocol version V; ``--ignore-unknown`` never
answers a method it does not know (``server/discover`` included) instead of -32601;
``--tools JSON`` is the raw ``tools`` list of ``tools/list`` (``@FILE``: read from FILE;
default: one ``echo_args``).
Every tool answers with the JSON of the arguments it was sent.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

ECHO_ARGS = {
    "name": "echo_args",
    "description": "Answer with the arguments received.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
    },
    "annotations": {"readOnlyHint": True},
}


def answer(options: argparse.Namespace, message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to ``message`` (None: no reply)."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        if options.init_error:
            return {"id": ident, "error": {"code": -32603, "message": options.init_error}}
        result = {
            "protocolVersion": options.version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }
        return {"id": ident, "result": result}
    if method == "tools/list":
        tools = _tools(options.tools) if options.tools else [ECHO_ARGS]
        return {"id": ident, "result": {"tools": tools}}
    if method == "tools/call":
        arguments = message.get("params", {}).get("arguments", {})
        text = json.dumps(arguments, sort_keys=True)
        return {"id": ident, "result": {"content": [{"type": "text", "text": text}]}}
    if options.ignore_unknown:
        return None
    return {"id": ident, "error": {"code": -32601, "message": f"no method {method}"}}


def _tools(given: str) -> Any:
    if given.startswith("@"):
        with open(given[1:], encoding="utf-8") as file:
            return json.load(file)
    return json.loads(given)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--init-error")
    parser.add_argument("--version", default="2025-06-18")
    parser.add_argument("--ignore-unknown", action="store_true")
    parser.add_argument("--tools")
    parser.add_argument("--marker")
    options = parser.parse_args()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        reply = answer(options, message)
        if reply is not None:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", **reply}) + "\n")
            sys.stdout.flush()
        if options.init_error and message.get("method") == "initialize":
            return


if __name__ == "__main__":
    main()
