"""Shared by the step examples: flags and env -> client + config, the round-by-round log, and
the seed's evidence record (``--trace FILE``).

Connection settings follow the CLI: --base-url/--model flags, else QWEN_BASE_URL / QWEN_MODEL /
QWEN_REASONING / QWEN_MAX_OUTPUT_TOKENS, else OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY,
else the local engine (guided), exactly as `minipi ask` does. ``--trace FILE`` writes what
``minipi ask --trace`` writes: the endpoint, the model file and its sha256 when the embedded
engine served it, the tools, and every request and response of the stage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minipi.agent import AgentConfig, AgentEvent, AgentTool
from minipi.agent.events import ModelResponded, TurnStart
from minipi.ai.types import ModelRequest, ModelResponse
from minipi.assemble import ModelHandle, Settings, agent_config, open_model
from minipi.cli.render import HumanLog
from minipi.cli.settings import RunOptions, resolve_settings
from minipi.cli.trace import TraceRecorder, trace_header
from minipi.cli.words import words_for
from minipi.errors import MiniPiError

HERE = Path(__file__).resolve().parent
QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"


def options(description: str = "") -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--project", type=Path, default=HERE / "sample_project")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--api-key")
    parser.add_argument("--wire", choices=["chat", "responses"])
    parser.add_argument("--trace", type=Path, help="write the stage's evidence record here")
    return parser.parse_args()


@dataclass
class Stage:
    """One example's model, loop config, log and (with ``--trace``) evidence record."""

    model: ModelHandle
    settings: Settings
    config: AgentConfig
    args: argparse.Namespace
    trace: TraceRecorder | None = None

    def report(self, event: AgentEvent) -> None:
        """Print each round the way the seed's log does; record it in the trace."""
        _log(event)
        if self.trace is not None:
            self.trace(event)

    def start_trace(self, tools: Sequence[AgentTool]) -> None:
        """Open the trace (when asked for) with the tools this stage declares."""
        if self.args.trace is not None:
            header = trace_header(self.settings, self.model, tools, self.args.project)
            self.trace = TraceRecorder(self.args.trace, header)

    def ask(self, turn: int, request: ModelRequest) -> ModelResponse:
        """One request outside the loop, recorded like the loop's."""
        self.report(TurnStart(turn, request.tool_choice, request.items))
        started = time.perf_counter()
        response = self.model.client.create(request)
        self.report(ModelResponded(turn, response, time.perf_counter() - started))
        return response

    def close(self) -> None:
        if self.trace is not None:
            self.trace.flush()
        self.model.close()


def connect(args: argparse.Namespace, required: tuple[str, ...] = ()) -> Stage:
    """The stage's model (close the stage when done) and the loop configuration that flags
    and environment give."""
    given = {
        "base_url": args.base_url,
        "model": args.model,
        "api_key": args.api_key,
        "wire": args.wire,
        "max_turns": args.max_turns,
        "required_tools": required or None,
    }
    flags = RunOptions(args.project, flags={k: v for k, v in given.items() if v is not None})
    try:
        settings = resolve_settings(flags)
        model = open_model(settings, os.environ)
    except MiniPiError as error:
        sys.exit(f"error: {error}")
    # No opening call: each stage declares its own tools (step04 passes its own).
    return Stage(model, settings, agent_config(settings, model, ()), args)


_log = HumanLog(words_for(QUESTION), sys.stdout)
