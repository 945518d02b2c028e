#!/usr/bin/env python3
"""What one model request costs the client, by HTTP layer (figures and ratios).

    python bench/perf_http.py [--reps 5] [--requests 300] [--kb 60]

The per-turn overhead of ``bench/perf.py`` compares minipi with a stdlib loop over
``http.client``. This splits the client's CPU per request (``time.process_time``, in-process,
against the peers harness's fake server, one keep-alive connection each) by layer, for one
POST of a chat body of ``--kb`` KB (the N=200 chain's last request is about 60 KB):

- ``http.client``: the stdlib loop's client;
- ``httpcore``: the connection pool httpx is built on, called directly;
- ``httpx transport``: ``httpx.HTTPTransport.handle_request`` (httpx's request and response
  models on top of httpcore);
- ``httpx.Client.post``: the whole httpx client (URL and header merging, auth, redirects,
  cookies);
- ``minipi HttpCore``: minipi's ``post_json`` (an httpx client, plus the wall-clock budget
  of every socket operation, the bounded body read and the JSON depth check).

Each figure includes reading the answer and ``json.loads`` of it. Runs are rotated per rep;
medians over reps.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpcore
import httpx

from minipi.ai.endpoint import ClientConfig, Endpoint
from minipi.ai.http import HttpCore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_runs import FakeServer

PEERS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "peers"
HEADERS: dict[str, str] = {"Content-Type": "application/json"}
RAW_HEADERS: list[tuple[bytes, bytes]] = [(b"Content-Type", b"application/json")]


def body_of(kb: int) -> bytes:
    """A chat body of about ``kb`` KB: the question, then tool results."""
    messages: list[dict[str, object]] = [
        {"role": "user", "content": "Follow the tool-call chain [[chain:1]] and then answer."}
    ]
    while len(json.dumps(messages)) < kb * 1000:
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": "x" * 100})
    return json.dumps({"model": "m", "messages": messages}, separators=(",", ":")).encode()


def clients(base_url: str, body: bytes) -> dict[str, Callable[[], object]]:
    url = base_url + "/chat/completions"
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    stdlib = http.client.HTTPConnection(host, int(port))
    pool = httpcore.ConnectionPool()
    transport = httpx.HTTPTransport(verify=False)
    client = httpx.Client(trust_env=False, transport=httpx.HTTPTransport(verify=False))
    core = HttpCore(Endpoint(base_url, "m"), ClientConfig())

    def with_stdlib() -> object:
        stdlib.request("POST", "/v1/chat/completions", body, HEADERS)
        return json.loads(stdlib.getresponse().read())

    def with_httpcore() -> object:
        return json.loads(pool.request("POST", url, content=body, headers=RAW_HEADERS).content)

    def with_transport() -> object:
        response = transport.handle_request(
            httpx.Request("POST", url, content=body, headers=HEADERS)
        )
        try:
            return json.loads(response.read())
        finally:
            response.close()

    def with_httpx() -> object:
        return json.loads(client.post(url, content=body, headers=HEADERS).content)

    def with_minipi() -> object:
        return core.post_json("/chat/completions", body)

    return {
        "http.client": with_stdlib,
        "httpcore": with_httpcore,
        "httpx transport": with_transport,
        "httpx.Client.post": with_httpx,
        "minipi HttpCore": with_minipi,
    }


def cpu_ms(call: Callable[[], object], requests: int) -> float:
    call()  # the connection is open before timing
    started = time.process_time()
    for _ in range(requests):
        call()
    return (time.process_time() - started) / requests * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--kb", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = FakeServer(PEERS / "fake_openai_server.py", tmp)
        try:
            layers = clients(server.base_url, body_of(args.kb))
            figures: dict[str, list[float]] = {name: [] for name in layers}
            names = list(layers)
            for rep in range(args.reps):
                for name in names[rep % len(names) :] + names[: rep % len(names)]:
                    figures[name].append(cpu_ms(layers[name], args.requests))
        finally:
            server.stop()
    floor = statistics.median(figures["http.client"])
    print(f"client CPU per request, {args.kb} KB body, median of {args.reps} reps:")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name:18s} {median:6.3f} ms   {median / floor:4.2f}x http.client")
    return 0


if __name__ == "__main__":
    sys.exit(main())
