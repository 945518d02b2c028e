"""Shared by the step examples: flags and env -> client + config, and the round-by-round log.

Connection settings follow the CLI: --base-url/--model flags, else QWEN_BASE_URL / QWEN_MODEL /
QWEN_REASONING / QWEN_MAX_OUTPUT_TOKENS, else OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY,
else the local engine (guided), exactly as `minipi ask` does.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from minipi.agent import AgentConfig, AgentEvent
from minipi.cli.embedded import ModelHandle, open_model
from minipi.cli.render import HumanLog
from minipi.cli.settings import DEFAULT_INSTRUCTIONS, RunOptions, resolve_settings
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
    return parser.parse_args()


def connect(
    args: argparse.Namespace, required: tuple[str, ...] = ()
) -> tuple[ModelHandle, AgentConfig]:
    """The model (close it when done) and the loop configuration flags and environment give."""
    try:
        flags = RunOptions(
            args.project,
            base_url=args.base_url,
            model=args.model,
            api_key=args.api_key,
            wire=args.wire,
        )
        settings = resolve_settings(flags)
        model = open_model(settings, model_file=None, guided=None, env=os.environ)
    except MiniPiError as error:
        sys.exit(f"error: {error}")
    agent_config = AgentConfig(
        instructions=DEFAULT_INSTRUCTIONS,
        max_turns=args.max_turns,
        required_tool_names=required,
        request_options=settings.request_options,
    )
    return model, agent_config


def report(event: AgentEvent) -> None:
    """Print each round the way the seed's log does."""
    _log(event)


_log = HumanLog(words_for(QUESTION), sys.stdout)
