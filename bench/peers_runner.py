#!/usr/bin/env python3
"""minipi as one more runner of the peers harness (../shared/bench/peers/README.md).

    peers_runner.py --base-url http://127.0.0.1:PORT/v1 --workdir DIR --n N [--cli]

Runs the harness's chain task (read step1.txt … stepN.txt, then answer) through the library
API (`run_agent` with minipi's sandboxed `read_file`), or with ``--cli`` through the real
``minipi ask`` command; prints the final answer as the last line and exits 0 on success.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--cli", action="store_true", help="go through `minipi ask`")
    parser.add_argument(
        "--stream",
        action="store_true",
        help="with --cli: let replies stream (the CLI's default; without it --no-stream, like "
        "the other runners)",
    )
    args = parser.parse_args()
    question = f"Follow the tool-call chain [[chain:{args.n}]] and then give the final answer."
    if args.cli:
        return _cli(args, question)
    return _library(args, question)


def _library(args: argparse.Namespace, question: str) -> int:
    from minipi import AgentConfig, Endpoint, ProjectFiles, connect, run_agent
    from minipi.files import make_read_file_tool

    client = connect(Endpoint(args.base_url, args.model))
    config = AgentConfig(
        instructions="You are a careful agent. Use the read_file tool when asked.",
        max_turns=args.n + 10,
    )
    with ProjectFiles(args.workdir) as files:
        result = run_agent(client, [make_read_file_tool(files)], config, question)
    client.close()
    if not result.succeeded:
        print(f"error: {result.status}: {result.error}", file=sys.stderr)
        return 1
    print(result.answer)
    return 0


def _cli(args: argparse.Namespace, question: str) -> int:
    command = [
        sys.executable,
        "-m",
        "minipi",
        "ask",
        question,
        "--project",
        args.workdir,
        "--base-url",
        args.base_url,
        "--model",
        args.model,
        "--max-turns",
        str(args.n + 10),
        *([] if args.stream else ["--no-stream"]),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QWEN_", "OPENAI_"))}
    done = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, check=False
    )
    sys.stdout.buffer.write(done.stdout)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
