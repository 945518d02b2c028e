#!/usr/bin/env python3
"""The peers harness's fake server, Responses API only, with stored responses (stdlib only).

A copy of ``shared/bench/peers/fake_openai_server.py``'s chain script (its README describes
the chain task), extended with what chaining needs:

    a request whose history holds k tool results answers with the next tool call
    read_file({"path": "step{k+1}.txt"}) while k < N, and with the final text "done"
    once k == N (N from a "[[chain:N]]" marker, else --n).

``POST /v1/responses`` stores every response whose request did not say ``"store": false``
under its id, with the full input it answered plus its output. A request with
``"previous_response_id"`` is answered from that stored chain followed by its own ``input``,
so the chain logic (k = tool results, or distinct STEPTOKEN-<i>- markers) sees the same
history as when the client sends it whole. An unknown (or not stored) id is a 400
``previous_response_not_found``, worded as OpenAI words it.

Response ids carry a per-server sequence number of fixed width (``resp_0003_00000007``), so
runs never chain into one another's responses and request sizes stay deterministic; item ids
are per turn, as in the harness's server.

Endpoints: POST /v1/responses, GET /v1/models, GET /stats (``?full=1`` adds the records),
POST /reset (clears the records and the count of 400s), POST /forget (drops every stored
response: the next chained request gets the 400), GET /health.
``/stats`` counts request bytes as the harness's server does, plus ``chained`` (requests
that carried ``previous_response_id`` and were answered) and ``lost`` (400s for unknown ids).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN_RE = re.compile(r"STEPTOKEN-(\d+)-")
CHAIN_RE = re.compile(r"\[\[chain:(\d+)\]\]")
CREATED = 1700000000  # fixed, so replies are byte-for-byte deterministic

Json = dict[str, Any]

_lock = threading.Lock()
_records: list[Json] = []
_stored: dict[str, list[Json]] = {}  # response id -> the input it answered + its output
_sequence = itertools.count(1)
_lost: list[float] = []  # when each 400 previous_response_not_found was sent
DEFAULT_N = 3
LATENCY_S = 0.0


def _text_of(content: Any) -> str:
    """Flatten any OpenAI content shape (str, list of parts, dict) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        keys = ("text", "content", "output", "input_text", "output_text")
        return "\n".join(_text_of(content[key]) for key in keys if key in content)
    return str(content)


def _tool_names(body: Json) -> list[str]:
    tools = body.get("tools") or []
    return [t["name"] for t in tools if isinstance(t, dict) and "name" in t]


def analyse(items: list[Json], instructions: str | None) -> Json:
    """k_tool (function_call_output items), k_tok (distinct STEPTOKEN markers outside the
    model's own items) and the [[chain:N]] target, as the harness's server counts them."""
    scan = ([{"role": "system", "content": instructions}] if instructions else []) + items
    k_tool = 0
    tokens: set[int] = set()
    n_target = None
    for item in scan:
        if item.get("type") == "function_call_output":
            k_tool += 1
            text = _text_of(item.get("output"))
        elif item.get("type") == "function_call" or item.get("role") == "assistant":
            continue
        else:
            text = _text_of(item.get("content"))
        tokens.update(int(x) for x in TOKEN_RE.findall(text))
        found = CHAIN_RE.search(text)
        if found and n_target is None:
            n_target = int(found.group(1))
    return {"n_items": len(items), "k_tool": k_tool, "k_tok": len(tokens), "n_target": n_target}


def decide(info: Json, tool_names: list[str]) -> tuple[str, Json]:
    """``("tool", {"name", "arguments", "step"})`` or ``("text", {"text", "step"})``."""
    n = info["n_target"] if info["n_target"] is not None else DEFAULT_N
    k = max(info["k_tool"], info["k_tok"])
    info.update(k=k, n=n)
    if k < n:
        arguments = json.dumps({"path": f"step{k + 1}.txt"})
        return "tool", {"name": "read_file", "arguments": arguments, "step": k + 1}
    if "final_answer" in tool_names:
        arguments = json.dumps({"answer": "done"})
        return "tool", {"name": "final_answer", "arguments": arguments, "step": k + 1}
    return "text", {"text": "done", "step": k + 1}


def _output(kind: str, payload: Json) -> list[Json]:
    rid = f"{payload['step']:04d}"
    if kind == "tool":
        return [
            {
                "type": "function_call",
                "id": f"fc_{rid}",
                "call_id": f"call_{rid}",
                "name": payload["name"],
                "arguments": payload["arguments"],
                "status": "completed",
            }
        ]
    text = {"type": "output_text", "text": payload["text"], "annotations": []}
    return [
        {
            "type": "message",
            "id": f"msg_{rid}",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
    ]


def reply(body: Json, output: list[Json], response_id: str, req_bytes: int) -> Json:
    produced = "".join(o.get("arguments", "") or _text_of(o.get("content")) for o in output)
    prompt, completion = max(1, req_bytes // 4), max(1, len(produced) // 4)
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": body.get("model") or "fake-model",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store", True) is not False,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def full_input(body: Json) -> list[Json] | None:
    """The stored chain of ``previous_response_id`` (if any) then this request's input;
    None when that id is not stored."""
    given = body.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    previous = body.get("previous_response_id")
    if previous is None:
        return items
    with _lock:
        chain = _stored.get(previous) if isinstance(previous, str) else None
    return None if chain is None else chain + items


def not_found(previous: object) -> Json:
    message = f"Previous response with id '{previous}' not found."
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real API
    disable_nagle_algorithm = True
    server_version = "fake-responses/1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: ``/stats`` tells what happened."""

    def _send(self, code: int, data: bytes) -> None:
        head = (
            f"HTTP/1.1 {code} {'OK' if code == 200 else 'ERR'}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n"
            "Connection: keep-alive\r\n\r\n"
        ).encode()
        self.wfile.write(head + data)  # one write: no Nagle/delayed-ACK stalls

    def _json(self, code: int, obj: object) -> None:
        self._send(code, json.dumps(obj).encode())

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path == "/stats":
            self._json(200, stats("full=1" in self.path))
        elif path in ("/health", ""):
            self._json(200, {"ok": True})
        elif path == "/v1/models":
            model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_POST(self) -> None:
        t_start = time.time()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/reset", "/forget"):
            with _lock:
                if path == "/reset":
                    _records.clear()
                    _lost.clear()
                else:
                    _stored.clear()
            self._json(200, {"ok": True})
        elif path not in ("/v1/responses", "/responses"):
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
        else:
            self._respond(raw, t_start)

    def _respond(self, raw: bytes, t_start: float) -> None:
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            error = {"message": f"bad json: {exc}", "type": "invalid_request_error"}
            self._json(400, {"error": error})
            return
        if body.get("stream"):
            error = {"message": "streaming is not supported", "type": "invalid_request_error"}
            self._json(400, {"error": error})
            return
        items = full_input(body)
        if items is None:
            with _lock:
                _lost.append(t_start)
            self._json(400, not_found(body.get("previous_response_id")))
            return
        info = analyse(items, body.get("instructions"))
        kind, payload = decide(info, _tool_names(body))
        if LATENCY_S:
            time.sleep(LATENCY_S)
        output = _output(kind, payload)
        response_id = f"resp_{payload['step']:04d}_{next(_sequence):08d}"
        data = json.dumps(reply(body, output, response_id, len(raw))).encode()
        if body.get("store", True) is not False:
            with _lock:
                _stored[response_id] = items + output
        # Recorded before the answer leaves: a client that asks /stats right after its last
        # answer must find that request counted (it raced under load).
        self._record(body, raw, info, payload if kind == "tool" else None, len(data), t_start)
        self._send(200, data)

    def _record(
        self, body: Json, raw: bytes, info: Json, call: Json | None, size: int, t_start: float
    ) -> None:
        header_bytes = sum(len(k) + len(v) + 4 for k, v in self.headers.items())
        record = {
            "api": "responses",
            "stream": False,
            "bytes": len(raw),
            "header_bytes": header_bytes,
            "resp_bytes": size,
            "chained": body.get("previous_response_id") is not None,
            "n_input": len(body.get("input") or []),
            **{key: info[key] for key in ("n_items", "k", "k_tool", "k_tok", "n")},
            "reply": f"{call['name']}:{call['step']}" if call else "text",
            "n_tools": len(body.get("tools") or []),
            "t_start": t_start,
            "t_end": time.time(),
        }
        with _lock:
            _records.append(record)


def stats(full: bool = False) -> Json:
    with _lock:
        records, lost, stored = list(_records), len(_lost), len(_stored)
    out: Json = {
        "requests": len(records),
        "total_bytes": sum(r["bytes"] for r in records),
        "total_header_bytes": sum(r["header_bytes"] for r in records),
        "total_resp_bytes": sum(r["resp_bytes"] for r in records),
        "first_bytes": records[0]["bytes"] if records else 0,
        "last_bytes": records[-1]["bytes"] if records else 0,
        "last_n_items": records[-1]["n_items"] if records else 0,
        "max_bytes": max((r["bytes"] for r in records), default=0),
        "first_t_start": records[0]["t_start"] if records else None,
        "last_t_end": records[-1]["t_end"] if records else None,
        "max_k": max((r["k"] for r in records), default=0),
        "max_k_tok": max((r["k_tok"] for r in records), default=0),
        "apis": sorted({r["api"] for r in records}),
        "replies_text": sum(1 for r in records if r["reply"] == "text"),
        "chained": sum(1 for r in records if r["chained"]),
        "lost": lost,
        "stored": stored,
    }
    if full:
        out["records"] = records
    return out


def main(argv: list[str] | None = None) -> int:
    global DEFAULT_N, LATENCY_S
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = any free port")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--n", type=int, default=3, help="chain length without a marker")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay per request")
    args = parser.parse_args(argv)
    if not args.host.startswith("127.") and args.host not in ("localhost", "::1"):
        parser.error("loopback addresses only")
    DEFAULT_N = args.n
    LATENCY_S = args.latency_ms / 1000.0
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"PORT {port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
