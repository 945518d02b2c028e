"""A real HTTP fake of an OpenAI-compatible server on 127.0.0.1, playing a script.

    with FakeServer([Turn(calls=[Call("read_file", {"path": "a.txt"})]), Turn("done")]) as srv:
        client = connect(Endpoint(srv.base_url, "fake-model"))
        ...
    srv.requests[1].body["messages"]      # what the client sent, parsed

Each ``POST /v1/responses`` or ``POST /v1/chat/completions`` consumes the next reply and renders
a ``Turn`` in the wire format of the path requested; a ``RawReply`` is sent as is (status, body,
headers, after ``delay`` seconds); a callable gets the parsed request body and returns either.
``GET /v1/models`` lists ``models``. A request for another model gets 404
``{"error": {"message": "model 'X' not found"}}`` without consuming a reply. When the script is
exhausted the answer is a 500 saying so, so a test sees a failed run and never a hang.
A request that says ``"stream": true`` gets the same reply as server-sent events (``chat_sse`` /
``responses_sse``: text and arguments split into pieces, a call's id only in its first chunk).
Every request (the ``GET`` too) is recorded in ``requests``. Keep-alive HTTP/1.1;
``stop()`` closes every connection and waits for the handler threads.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self, TypeAlias

__all__ = [
    "Call",
    "FakeServer",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ServerThread",
    "TrackingServer",
    "Turn",
    "chat_sse",
    "pieces",
    "responses_sse",
]

JsonDict: TypeAlias = dict[str, Any]
CREATED = 1_700_000_000  # fixed, so rendered replies are deterministic


@dataclass
class Call:
    """A tool call in a ``Turn``. ``call_id="auto"`` makes a unique id; ``None`` omits it."""

    name: str
    arguments: JsonDict | str
    call_id: str | None = "auto"


@dataclass
class Turn:
    """One model reply. ``finish="auto"`` is ``tool_calls`` with calls, else ``stop``;
    ``"length"`` renders as ``incomplete``/``max_output_tokens`` on the Responses wire."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    finish: str | None = "auto"
    reasoning: str | None = None


@dataclass
class RawReply:
    """An exact HTTP answer (content type defaults to application/json)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def json(
        cls, data: object, status: int = 200, *, delay: float = 0.0, **headers: str
    ) -> RawReply:
        """A reply whose body is ``data`` as JSON (header names with ``_`` get ``-``)."""
        return cls(
            status, _encode(data), {k.replace("_", "-"): v for k, v in headers.items()}, delay
        )


Reply: TypeAlias = Turn | RawReply | Callable[[JsonDict], Turn | RawReply]


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received. ``body`` is the parsed JSON object (None if not one);
    header names are lower-case."""

    path: str
    body: JsonDict | None
    raw: bytes
    headers: dict[str, str]


class ServerThread:
    """A ``TrackingServer`` on 127.0.0.1:0 served by a thread: ``base_url``, ``start``,
    ``stop`` (ends keep-alive connections and joins every handler), context manager."""

    base_url = ""

    def __init__(self) -> None:
        self._stopping = threading.Event()  # wakes replies that wait or stall
        self._httpd: TrackingServer | None = None
        self._thread: threading.Thread | None = None

    def make_server(self) -> TrackingServer:
        raise NotImplementedError

    def start(self) -> Self:
        httpd = self.make_server()
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class FakeServer(ServerThread):
    """A scripted OpenAI-compatible server; use as a context manager or ``start``/``stop``."""

    def __init__(
        self, script: Iterable[Reply] = (), *, models: Sequence[str] = ("fake-model",)
    ) -> None:
        self.models = tuple(models)
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque(script)
        self._served = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__()

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        return 0 if self._httpd is None else self._httpd.accepted

    @property
    def remaining(self) -> int:
        """Replies not yet consumed."""
        return len(self._replies)

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def make_server(self) -> TrackingServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        return httpd

    def answer(self, method: str, path: str, raw: bytes, headers: dict[str, str]) -> RawReply:
        """The reply to one request (called by the handler threads)."""
        body = _parse(raw)
        with self._lock:
            self.requests.append(RecordedRequest(path, body, raw, headers))
        route = path.partition("?")[0]
        if method == "GET" and route == "/v1/models":
            return RawReply.json(
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": CREATED, "owned_by": "fake"}
                        for m in self.models
                    ],
                }
            )
        if method == "POST" and route in ("/v1/responses", "/v1/chat/completions"):
            return self._model_reply(route, body, len(raw))
        return _error(404, f"FakeServer: no route {method} {path}")

    def _model_reply(self, route: str, body: JsonDict | None, size: int) -> RawReply:
        if body is None:
            return _error(400, "FakeServer: the request body is not a JSON object")
        model = body.get("model")
        if model not in self.models:
            return _error(404, f"model '{model}' not found")
        with self._lock:
            if not self._replies:
                return _error(
                    500,
                    f"FakeServer: script exhausted after {self._served} "
                    "replies; the client asked for one more",
                )
            reply = self._replies.popleft()
            self._served += 1
        if callable(reply):
            try:
                reply = reply(body)
            except Exception as exc:  # a bug in the test's reply function: show it, no retry
                return _error(400, f"FakeServer: the reply function raised {exc!r}")
        if isinstance(reply, RawReply):
            return reply
        chat = route.endswith("/chat/completions")
        render = _render_chat if chat else _render_responses
        data = render(reply, str(model), size, self._ids)
        if body.get("stream") is True:
            events = chat_sse(data) if chat else responses_sse(data)
            return RawReply(200, events, {"content-type": "text/event-stream"})
        return RawReply.json(data)

    def wait_delay(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless the server stops first; True if it stopped."""
        return self._stopping.wait(seconds)


class TrackingServer(ThreadingHTTPServer):
    """A threading HTTP server that tracks live connections: it can count them and end them
    all at once (``stop`` ends keep-alive handlers without waiting for their clients)."""

    daemon_threads = False  # so server_close() joins the handler threads

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self.accepted = 0  # connections accepted so far (keep-alive reuse shows here)

    def open_count(self) -> int:
        with self._connections_lock:
            return len(self._connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:  # in the accept thread: no connection escapes tracking
            self._connections.add(request)
            self.accepted += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._connections_lock:
            live = list(self._connections)
        for connection in live:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)  # the handler then closes it

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients that went away (timeouts, resets); loud about the rest."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Server(TrackingServer):
    fake: FakeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``FakeServer.requests`` instead."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.server.fake.answer(method, self.path, raw, headers)
        if reply.delay and self.server.fake.wait_delay(reply.delay):
            self.close_connection = True
            return
        self.send_response(reply.status)
        sent = {k.lower() for k in reply.headers}
        if "content-type" not in sent:
            self.send_header("content-type", "application/json")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)


def _encode(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _parse(raw: bytes) -> JsonDict | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _error(status: int, message: str) -> RawReply:
    return RawReply.json({"error": {"message": message, "type": "fake_server_error"}}, status)


def _arguments(call: Call) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def _call_id(call: Call, ids: itertools.count[int]) -> str | None:
    return f"call_{next(ids):04d}" if call.call_id == "auto" else call.call_id


def _render_chat(turn: Turn, model: str, size: int, ids: itertools.count[int]) -> JsonDict:
    n = next(ids)
    message: JsonDict = {
        "role": "assistant",
        "content": turn.text if turn.text or not turn.calls else None,
    }
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = []
        for call in turn.calls:
            entry: JsonDict = {
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            call_id = _call_id(call, ids)
            if call_id is not None:
                entry = {"id": call_id, **entry}
            message["tool_calls"].append(entry)
    finish = ("tool_calls" if turn.calls else "stop") if turn.finish == "auto" else turn.finish
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(turn, size, "prompt_tokens", "completion_tokens", "prompt_tokens_details"),
    }


def _render_responses(turn: Turn, model: str, size: int, ids: itertools.count[int]) -> JsonDict:
    n = next(ids)
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": CREATED,
        "model": model,
        **_status(turn.finish),
        "output": _output(turn, n, ids),
        "error": None,
        "usage": _usage(turn, size, "input_tokens", "output_tokens", "input_tokens_details"),
    }


def _output(turn: Turn, n: int, ids: itertools.count[int]) -> list[JsonDict]:
    output: list[JsonDict] = []
    if turn.reasoning is not None:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": turn.reasoning}],
            }
        )
    if turn.text or not turn.calls:
        text = {"type": "output_text", "text": turn.text, "annotations": []}
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        )
    for call in turn.calls:
        item: JsonDict = {"type": "function_call", "id": f"fc_{next(ids)}"}
        call_id = _call_id(call, ids)
        if call_id is not None:
            item["call_id"] = call_id
        item.update(name=call.name, arguments=_arguments(call), status="completed")
        output.append(item)
    return output


def _status(finish: str | None) -> JsonDict:
    if finish is None:
        return {}
    if finish in ("auto", "stop", "tool_calls"):
        return {"status": "completed", "incomplete_details": None}
    reason = {"length": "max_output_tokens"}.get(finish, finish)
    return {"status": "incomplete", "incomplete_details": {"reason": reason}}


def _usage(turn: Turn, size: int, inputs: str, outputs: str, details: str) -> JsonDict:
    """Token counts that tests can predict: request bytes // 4 in, output chars // 4 out."""
    produced = turn.text + (turn.reasoning or "") + "".join(_arguments(c) for c in turn.calls)
    prompt, completion = max(1, size // 4), max(1, len(produced) // 4)
    return {
        inputs: prompt,
        outputs: completion,
        "total_tokens": prompt + completion,
        details: {"cached_tokens": 0},
    }


def pieces(text: str, n: int = 3) -> list[str]:
    """``text`` cut into ``n`` pieces (fewer if it is shorter); anywhere, even mid-escape."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: JsonDict, named: bool = False) -> bytes:
    head = f"event: {data['type']}\n" if named else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def chat_sse(completion: JsonDict) -> bytes:
    """A ``chat.completion`` as the ``chat.completion.chunk`` stream servers send (D9 style:
    each call's id and name only in its first chunk, ``"id": null`` afterwards)."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: JsonDict, finish: str | None = None) -> bytes:
        frame = {**head, "object": "chat.completion.chunk"}
        frame["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return _sse(frame)

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in pieces(message.get("reasoning_content") or "")]
    out += [chunk({"content": p}) for p in pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first: JsonDict = {"index": index, "type": "function"}
        if "id" in call:
            first["id"] = call["id"]
        first["function"] = {"name": function["name"], "arguments": ""}
        out.append(chunk({"tool_calls": [first]}))
        for piece in pieces(function["arguments"]):
            delta = {"index": index, "id": None, "function": {"arguments": piece}}
            out.append(chunk({"tool_calls": [delta]}))
    if choice["finish_reason"] is not None:
        out.append(chunk({}, choice["finish_reason"]))
    if "usage" in completion:
        out.append(
            _sse(
                {
                    **head,
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": completion["usage"],
                }
            )
        )
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def responses_sse(response: JsonDict) -> bytes:
    """A Responses API ``response`` as its event stream: created, each output item added,
    its deltas and done, then ``response.completed`` (``response.incomplete`` if so)."""
    started: JsonDict = {**response, "status": "in_progress", "output": []}
    created: JsonDict = {"type": "response.created", "response": started}
    out = [_sse(created, named=True)]
    for index, item in enumerate(response["output"]):
        empty = dict(item)
        if item["type"] == "function_call":
            empty["arguments"] = ""
        elif item["type"] == "message":
            empty["content"] = []
        added = {"type": "response.output_item.added", "output_index": index, "item": empty}
        out.append(_sse(added, named=True))
        if item["type"] == "message":
            for part in item["content"]:
                for piece in pieces(part.get("text", "")):
                    frame = {
                        "type": "response.output_text.delta",
                        "output_index": index,
                        "delta": piece,
                    }
                    out.append(_sse(frame, named=True))
        elif item["type"] == "function_call":
            for piece in pieces(item["arguments"]):
                frame = {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "delta": piece,
                }
                out.append(_sse(frame, named=True))
        done = {"type": "response.output_item.done", "output_index": index, "item": item}
        out.append(_sse(done, named=True))
    status = response.get("status")
    if status is not None:
        kind = "response.completed" if status == "completed" else "response.incomplete"
        out.append(_sse({"type": kind, "response": response}, named=True))
    return b"".join(out)
