#!/usr/bin/env python3
"""First-request probe for ``perf.py``: minipi's first chat request next to the stdlib loop's.

    perf_bytes.py --baseline runners/baseline_raw_http.py --workdir DIR --n N

Builds, without sending, the first request body of ``peers_runner.py``'s library run (the
same ``AgentConfig`` instructions and ``make_read_file_tool``, as minipi's chat client sends
it: ``minipi.ai.chat.encode`` in compact JSON) and of ``baseline_raw_http.py`` (its ``TOOLS``
and messages, encoded with its default and with compact separators), and prints one JSON
object: the bytes each top-level key takes in each body (``"key":value`` plus its comma), so
that the difference between the first requests the server measured can be read key by key.
"""

from __future__ import annotations

import argparse
import json
import runpy
from typing import Any

from minipi.agent import AgentConfig
from minipi.ai import Message, ModelRequest, chat
from minipi.ai.client import dumps
from minipi.files import ProjectFiles, make_read_file_tool

MODEL = "fake-model"
INSTRUCTIONS = "You are a careful agent. Use the read_file tool when asked."  # peers_runner's


def question(n: int) -> str:
    return f"Follow the tool-call chain [[chain:{n}]] and then give the final answer."


def minipi_body(workdir: str, n: int) -> bytes:
    config = AgentConfig(instructions=INSTRUCTIONS, max_turns=n + 10)
    with ProjectFiles(workdir) as files:
        spec = make_read_file_tool(files).spec()
    request = ModelRequest(
        [Message("user", question(n))],
        config.instructions,
        (spec,),
        "auto",
        config.parallel_tool_calls,
        config.request_options,
    )
    return dumps(chat.encode(request, MODEL, stream=False))


def stdlib_body(baseline: str, n: int) -> dict[str, Any]:
    tools = runpy.run_path(baseline)["TOOLS"]  # module globals only: main() is not run
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": question(n)},
    ]
    return {"model": MODEL, "messages": messages, "tools": tools}


def by_key(body: dict[str, Any], compact: bool) -> dict[str, int]:
    """Bytes per top-level key, in the given encoding; ``_total`` is the whole body."""
    separators = (",", ":") if compact else (", ", ": ")
    sizes = {
        key: len(json.dumps({key: value}, separators=separators).encode()) - 2
        for key, value in body.items()
    }
    sizes["_total"] = len(json.dumps(body, separators=separators).encode())
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--n", type=int, required=True)
    args = parser.parse_args()
    ours = minipi_body(args.workdir, args.n)
    stdlib = stdlib_body(args.baseline, args.n)
    report = {
        "minipi": {**by_key(json.loads(ours), compact=True), "_total": len(ours)},
        "stdlib": by_key(stdlib, compact=False),
        "stdlib_compact": by_key(stdlib, compact=True),
        "minipi_tool": json.loads(ours)["tools"],
        "stdlib_tool": stdlib["tools"],
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
