#!/usr/bin/env python3
"""Parallel tools probe for ``perf.py``: 8 independent 200 ms calls in one model response.

    perf_tools.py [--workers N] [--calls 8] [--sleep 0.2]

Drives the real ``run_agent`` with ``ScriptedModel`` (one response asking for ``--calls``
calls of a tool that sleeps ``--sleep`` s, then a text answer) and prints one JSON object:

- ``cold_s``: tool time of the first run in this fresh process (first ``tool_call`` event to
  last ``tool_result`` event), so it includes what a first call costs (the lazy jsonschema
  import of argument validation);
- ``warm_s``: the same, second run in the same process;
- ``ordered``: the ``function_call_output`` items of the second request carry the calls'
  ids in the model's order (both runs);
- ``stdlib_s``: the floor, ``ThreadPoolExecutor(max_workers=calls).map`` of the same sleeps.

``--workers 0`` keeps ``AgentConfig``'s default ``max_parallel_tools``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from minipi.agent import (
    AgentConfig,
    AgentEvent,
    AgentTool,
    ToolCallStarted,
    ToolResultReady,
    run_agent,
)
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.ai.types import FunctionCallOutput


def measure(calls: int, sleep: float, workers: int) -> tuple[float, bool, int]:
    """(tool seconds, results in the model's order, max_parallel_tools used) of one run."""

    def nap(arguments: Mapping[str, Any]) -> str:
        time.sleep(sleep)
        return f"slept {arguments['i']}"

    tool = AgentTool(
        "nap",
        "Sleep a moment.",
        {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]},
        nap,
    )
    ids = [f"call_{i}" for i in range(calls)]
    model = ScriptedModel(
        [reply_calls(*[("nap", {"i": i}, ids[i]) for i in range(calls)]), reply_text("done")]
    )
    config = AgentConfig(max_turns=3)
    if workers:
        config = AgentConfig(max_turns=3, max_parallel_tools=workers)
    marks: dict[str, float] = {}

    def sink(event: AgentEvent) -> None:
        if isinstance(event, ToolCallStarted):
            marks.setdefault("first_call", time.perf_counter())
        elif isinstance(event, ToolResultReady):
            marks["last_result"] = time.perf_counter()

    result = run_agent(model, [tool], config, "nap", on_event=sink)
    if not result.succeeded or len(model.requests) != 2:
        raise SystemExit(f"perf_tools: run {result.status}: {result.error}")
    outputs = [i.call_id for i in model.requests[1].items if isinstance(i, FunctionCallOutput)]
    return marks["last_result"] - marks["first_call"], outputs == ids, config.max_parallel_tools


def stdlib_floor(calls: int, sleep: float) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=calls) as pool:
        list(pool.map(time.sleep, [sleep] * calls))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=0, help="max_parallel_tools (0: default)")
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=0.2)
    args = parser.parse_args()
    cold, cold_ordered, workers = measure(args.calls, args.sleep, args.workers)
    warm, warm_ordered, _ = measure(args.calls, args.sleep, args.workers)
    report = {
        "workers": workers,
        "cold_s": cold,
        "warm_s": warm,
        "ordered": cold_ordered and warm_ordered,
        "stdlib_s": stdlib_floor(args.calls, args.sleep),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
