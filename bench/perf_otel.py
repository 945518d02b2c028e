#!/usr/bin/env python3
"""What OpenTelemetry tracing (``minipi.otel``) costs, for ``perf.py``: off and on, same run.

    perf_otel.py [--reps 5] [--turns 200] [--imports 5]

Prints one JSON object:

- ``turn_off_us`` / ``turn_on_us``: the loop's cost per turn, (cpu(N) - cpu(3)) / (N - 3)
  of ``run_agent`` in this process (its CPU seconds, all threads: the export's thread counts,
  the host's other load does not), each turn one tool call, the model a ``ScriptedModel``
  (no HTTP: the figure is the loop's own, so the ratio is the largest tracing can make it);
  on: ``span_sink`` into an SDK provider whose ``BatchSpanProcessor`` encodes each batch as
  OTLP protobuf (what the OTLP/HTTP exporter sends) and drops it, flushed inside the timing;
  ``turn_spans_us``: the sink and the SDK's spans alone (a provider with no processor: the
  rest of "on" is the export's encoding); medians over reps, the modes rotated;
- ``import_off_ms`` / ``import_on_ms``: what ``minipi ask`` imports before a run
  (``minipi.cli.main``, ``minipi.cli.app``) in a fresh interpreter, without and with what
  ``--otel`` adds (``minipi.otel``'s sink and exporter, the SDK, the
  OTLP/HTTP exporter), medians of ``--imports`` processes each, alternated;
- the ratios on / off of both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from perf_runs import IMPORT_TIMER

from minipi import AgentConfig, run_agent, tool_from_function
from minipi.agent import AgentEvent
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.otel import span_sink

OFF = "import minipi.cli.main, minipi.cli.app"
ON = OFF + ", minipi.otel.spans, minipi.otel.export"


class EncodeOnly(SpanExporter):
    """The OTLP/HTTP exporter's work short of the network: each batch encoded, then dropped."""

    def __init__(self) -> None:
        self.sent = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.sent += len(encode_spans(spans).SerializeToString())
        return SpanExportResult.SUCCESS


def step(i: int) -> str:
    """Step ``i`` of the chain."""
    return f"step {i} done"


def run_once(turns: int, mode: str) -> float:
    """CPU seconds of one run of ``turns`` calls then an answer, tracing ``off``, ``on`` (flush
    included) or ``spans`` (made, not exported)."""
    script = [reply_calls(("step", {"i": i})) for i in range(turns)] + [reply_text("done")]
    model = ScriptedModel(script)
    config = AgentConfig(max_turns=turns + 5, max_tool_calls=turns + 5, evidence="off")
    provider = TracerProvider()
    if mode == "on":
        provider.add_span_processor(BatchSpanProcessor(EncodeOnly()))
    traced = mode != "off"
    sink = span_sink(provider, base_url="http://127.0.0.1:8021/v1") if traced else _nothing
    start = time.process_time()
    result = run_agent(model, [tool_from_function(step)], config, "go", sink)
    provider.force_flush()
    seconds = time.process_time() - start
    provider.shutdown()
    if not result.succeeded:
        raise SystemExit(f"perf_otel: run {result.status}: {result.error}")
    return seconds


def _nothing(event: AgentEvent) -> None:
    """The sink of a run without tracing (a call per event, as ``fan_out`` makes)."""


def per_turn(turns: int, reps: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"off": [], "spans": [], "on": []}
    run_once(3, "on")  # warm-up: imports, first spans
    for rep in range(reps):
        for mode in [*samples][rep % 3 :] + [*samples][: rep % 3]:
            long, short = run_once(turns, mode), run_once(3, mode)
            samples[mode].append((long - short) / (turns - 3))
    return samples


def import_times(count: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"off": [], "on": []}
    for i in range(count + 1):
        for mode in ("off", "on") if i % 2 == 0 else ("on", "off"):
            code = IMPORT_TIMER.format(stmt=OFF if mode == "off" else ON)
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
            if i:  # the first round warms the page cache and bytecode
                samples[mode].append(float(out))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--imports", type=int, default=5, help="processes per import figure")
    args = parser.parse_args()
    turns = per_turn(args.turns, args.reps)
    imports = import_times(args.imports)
    off, on = statistics.median(turns["off"]), statistics.median(turns["on"])
    import_off, import_on = statistics.median(imports["off"]), statistics.median(imports["on"])
    report = {
        "turn_off_us": off * 1e6,
        "turn_on_us": on * 1e6,
        "turn_spans_us": statistics.median(turns["spans"]) * 1e6,
        "turn_ratio": on / off,
        "import_off_ms": import_off * 1e3,
        "import_on_ms": import_on * 1e3,
        "import_ratio": import_on / import_off,
        "reps": args.reps,
        "turns": args.turns,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
