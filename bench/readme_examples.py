#!/usr/bin/env python3
"""The README's examples through ``minipi ask`` as a user types them, with a real model file.

    python bench/readme_examples.py --model-file GGUF [--only daily,adopt,...] [--out DIR]
    python bench/readme_examples.py --qwen 1.5b          # bench/qwen_gguf.py assembles it

Each example runs in a fresh copy of its example project (a move is real), through the real
command in a subprocess (``python -m minipi ask ... --model-file GGUF``), stdout and stderr
kept as the transcript (``--out DIR``: one ``NAME.txt`` each). Judged by what a user checks:
the answer holds the facts (dates in any form), a move really moved the named file and no
other, the exit code; printed per example with the verdict minipi gave and the seconds, then
the total. Not a test: a model's answers are measured here, never asserted in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DAILY = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"


@dataclass(frozen=True)
class Example:
    name: str
    project: str
    question: str
    right: Callable[[str, Path], bool]
    """Whether the run is right: its stdout and the project after it."""
    flags: tuple[str, ...] = ()
    notes: str = ""


def _holds(*wanted: str) -> Callable[[str, Path], bool]:
    return lambda out, _: all(any(w in out for w in alts.split("|")) for alts in wanted)


def _moved(name: str, to: str) -> Callable[[str, Path], bool]:
    def right(out: str, root: Path) -> bool:
        inbox = sorted(p.name for p in (root / "inbox").iterdir())
        return (root / to / name).is_file() and name not in inbox and len(inbox) == 2

    return right


def _json_is(expected: dict[str, object]) -> Callable[[str, Path], bool]:
    def right(out: str, _: Path) -> bool:
        try:
            return bool(json.loads(out) == expected)
        except ValueError:
            return False

    return right


EXAMPLES_RUN = (
    Example(
        "daily",
        "sample_project",
        DAILY,
        _holds("2026-09-06|2026年9月6日|9月6日|September 6", "128", "9600|9,600"),
    ),
    Example(
        "daily-schema",
        "sample_project",
        DAILY,
        _json_is({"date": "2026-09-06", "orders": 128, "revenue": 9600}),
        ("--schema", '{"date": "string", "orders": "integer", "revenue": "number"}'),
    ),
    Example(
        "adopt",
        "shelter",
        "请领养猫咪小花：把它的档案移到 archive/。",
        _moved("猫咪小花.txt", "archive"),
        ("--approve", "all"),
        "README's shelter example (approve all: no person to answer the prompt)",
    ),
    Example(
        "dog-en",
        "shelter",
        "Which dog is waiting in the shelter's inbox, and how old is it?",
        _holds("旺财", "3"),
    ),
    Example(
        "age-zh",
        "shelter",
        "仓鼠球球几岁了？是什么品种？",
        _holds("1", "金丝熊"),
    ),
    Example(
        "treasure",
        "treasure_hunt",
        "从 step1.txt 开始按线索一步步找，告诉我最终的完整密码。",
        _holds("AgentLoop"),
    ),
)


@dataclass
class Outcome:
    example: Example
    code: int
    right: bool
    verdict: str
    seconds: float
    transcript: str = field(repr=False, default="")


def run(example: Example, model_file: str, python: str) -> Outcome:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / example.project
        shutil.copytree(EXAMPLES / example.project, root)
        command = [python, "-m", "minipi", "ask", example.question, "--project", str(root)]
        command += ["--model-file", model_file, *example.flags]
        env = {**os.environ, "MINIPI_OFFLINE": "1", "NO_COLOR": "1"}
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        seconds = time.perf_counter() - started
        right = done.returncode in (0, 4) and example.right(done.stdout, root)
    summary = next((line for line in done.stderr.splitlines() if line.startswith("[")), "")
    verdict = _verdict(done.stderr)
    transcript = f"$ {' '.join(command)}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    del summary
    return Outcome(example, done.returncode, right, verdict, seconds, transcript)


def _verdict(stderr: str) -> str:
    """The summary line's lead word (``[成功]``, ``[成功·依据不足：…]``, ``[unbacked: …]``)."""
    for line in stderr.splitlines():
        bare = line.lstrip("▌ ")
        if bare.startswith("[") and ("次模型请求" in bare or "model request" in bare):
            return bare.split("]", 1)[0] + "]"
    return "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model-file")
    which.add_argument("--qwen", choices=("0.5b", "1.5b"))
    parser.add_argument("--only", default="")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    model_file = args.model_file or _qwen(args.qwen)
    only = {n for n in args.only.split(",") if n}
    chosen = [e for e in EXAMPLES_RUN if not only or e.name in only]
    outcomes = []
    for example in chosen:
        outcome = run(example, model_file, sys.executable)
        outcomes.append(outcome)
        mark = "right" if outcome.right else "WRONG"
        print(
            f"{example.name:14} {mark:6} exit {outcome.code:<3} {outcome.verdict:40} "
            f"{outcome.seconds:6.1f} s",
            flush=True,
        )
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{example.name}.txt").write_text(outcome.transcript, encoding="utf-8")
    right = sum(o.right for o in outcomes)
    print(f"right {right}/{len(outcomes)}  ({Path(model_file).name})")


def _qwen(size: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "qwen_gguf.py"), size],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


if __name__ == "__main__":
    main()
