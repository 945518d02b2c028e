#!/usr/bin/env python3
"""The example tasks with the embedded local model: guided answer forms, unguided, evidence.

    python bench/local_tasks.py [--reps 1] [--model-file GGUF | --qwen 0.5b|1.5b]
        [--modes facts,digits,facts_digits,plain,unguided] [--evidence warn,require]
        [--tasks daily,treasure,...] [--threads N] [--max-turns 8] [--show]
    python bench/local_tasks.py --suite dev|heldout|fresh [--only TEMPLATE,...] [--model-file ...]

One engine (``--model-file``; ``--qwen`` assembles a Qwen2.5-Coder-Instruct GGUF with
``bench/qwen_gguf.py``; else the model ``minipi ask`` would pick) serves every run; each task
runs ``--reps`` times in each mode (a guided answer form of ``GuidedClient``, or ``unguided``)
under each evidence policy, alternated; as ``minipi ask`` does, a guided run opens with the
project's top-level listing and the paths the question names (``guided_opening``). Printed
per model, mode and policy:

- success: the run ended ``succeeded``;
- answer-correct: succeeded, and every expected figure is in the answer (as the loop has it:
  in guided modes with facts, the text and then the chosen facts) and, for the shelter, the
  cat's file really moved; text-correct: the same for the model's own text (the answer
  before the facts);
- shown-correct: succeeded, and every expected figure is in the answer or in the text of a
  content source of its evidence (what the sources block shows: ``2026年9月6日`` in the
  answer shows ``2026-09-06``);
- traced: the run's last answer has no unsupported figure (runs that never answered are not);
  ``bad``: runs that succeeded with an unsupported figure (must be 0 under ``require``);
- model requests and wall seconds per run, and how the runs ended (``status/code`` counts).

``--suite`` runs the generated suite's tasks (``bench/task_suite.py``, its ``dev`` or
``heldout`` half) instead, through the same one engine: each task's files in a fresh temp
folder, ``move_file`` offered (approval auto-granted) only to the move tasks. Judged with
``task_suite.answer_right`` (values by value, dates in any form) plus the move check, and
printed per template and in total: succeeded, right (the answer as shown, cited facts
included), own (the model's own sentence alone), wrong ok (succeeded but not right), backed
(the verdict of the plain green success) and **false green** (backed but not right).
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from minipi.agent import AgentConfig, ApprovalRequest, RunResult, run_agent
from minipi.agent.config import EvidenceMode
from minipi.ai import ClientConfig, Endpoint, connect
from minipi.ai.types import FunctionCall, ModelClient
from minipi.assemble import DEFAULT_INSTRUCTIONS, guided_opening
from minipi.files import ProjectFiles, create_project_tools
from minipi.guided import ANSWER_FORMS, AnswerForm, GuidedClient
from minipi.local.client import EngineClient
from minipi.local.engine import Engine, require_local_extra
from minipi.local.models import ModelChoice, resolve_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qwen_gguf import DEFAULT_CACHE, MODELS, assemble
from task_suite import SuiteTask, answer_right, generate, write_suite

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
        writes=True,
    ),
    Task(
        "revenue_en",
        "sample_project",
        "What revenue does the daily report in reports/ show?",
        ("9600",),
    ),
    Task("sunny_pet", "shelter", "inbox 里哪只宠物爱晒太阳？", ("猫咪小花",)),
)
MODES = (*ANSWER_FORMS, "unguided")


@dataclass
class Tally:
    runs: int = 0
    succeeded: int = 0
    answer_correct: int = 0
    text_correct: int = 0
    shown_correct: int = 0
    traced: int = 0
    bad: int = 0  # succeeded with an unsupported figure
    requests: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    ends: Counter[str] = field(default_factory=Counter)  # "status/code" -> runs

    def add(self, other: Tally) -> None:
        for name in ("runs", "succeeded", "answer_correct", "text_correct", "shown_correct"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.traced, self.bad = self.traced + other.traced, self.bad + other.bad
        self.requests += other.requests
        self.seconds += other.seconds
        self.ends += other.ends


def _yes(request: ApprovalRequest) -> bool:
    return True


def run_in(
    client: ModelClient,
    root: Path,
    question: str,
    writes: bool,
    evidence: EvidenceMode,
    max_turns: int,
) -> tuple[RunResult, float]:
    """One run on ``root`` as ``minipi ask`` assembles it (a guided run opens with the
    listing and the named paths; move_file, auto-approved, only when ``writes``): its result
    and seconds."""
    started = time.perf_counter()
    with ProjectFiles(root) as files:
        tools = create_project_tools(files, _yes if writes else None)
        offered = {tool.name for tool in tools}
        config = AgentConfig(
            instructions=DEFAULT_INSTRUCTIONS,
            max_turns=max_turns,
            request_options={"temperature": 0, "max_output_tokens": 256},
            evidence=evidence,
            opening_calls=(
                guided_opening(offered, question, files) if isinstance(client, GuidedClient) else ()
            ),
            answer_on_last_turn=isinstance(client, GuidedClient),
        )
        result = run_agent(client, tools, config, question)
    return result, time.perf_counter() - started


def shown_texts(result: RunResult) -> list[str]:
    """The answer and the texts of its evidence's content sources (the sources block)."""
    texts = [result.answer, *result.facts]
    if result.evidence is not None:
        texts.extend(
            source.text
            for claim in result.evidence.claims
            for source in claim.sources
            if source.origin == "content"
        )
    return texts


def run_task(
    client: ModelClient,
    task: Task,
    evidence: EvidenceMode,
    tally: Tally,
    show: bool = False,
    max_turns: int = 8,
) -> None:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / task.project
        shutil.copytree(EXAMPLES / task.project, root)
        result, seconds = run_in(client, root, task.question, task.writes, evidence, max_turns)
        tally.seconds.append(seconds)
        done = result.status == "succeeded" and task.check(root)
    if show:
        calls = [f"{i.name}{i.arguments}" for i in result.items if isinstance(i, FunctionCall)]
        missing = result.evidence.unsupported_figures() if result.evidence else ()
        print(
            f"\n[{task.name} {evidence}] {result.status}/{result.code} calls={calls}\n"
            f"  answer={result.answer!r} unsupported={missing}",
            file=sys.stderr,
        )
    tally.runs += 1
    tally.requests.append(result.turns)
    ok = result.status == "succeeded"
    tally.ends[result.status if ok else f"{result.status}/{result.code}"] += 1
    tally.succeeded += ok
    shown = shown_texts(result)
    tally.answer_correct += done and all(
        e in "\n".join([result.answer, *result.facts]) for e in task.expected
    )
    tally.text_correct += done and all(e in result.answer for e in task.expected)
    tally.shown_correct += done and all(any(e in t for t in shown) for e in task.expected)
    unsupported = result.evidence.unsupported if result.evidence is not None else None
    tally.traced += unsupported == 0
    tally.bad += ok and bool(unsupported)


@dataclass
class SuiteTally:
    runs: int = 0
    succeeded: int = 0
    right: int = 0
    own: int = 0
    wrong_ok: int = 0  # succeeded, not right
    backed: int = 0  # the plain green success (verdict backed)
    false_green: int = 0  # backed, not right: must be 0
    seconds: list[float] = field(default_factory=list)

    def add(self, ok: bool, right: bool, own: bool, backed: bool, seconds: float) -> None:
        self.runs += 1
        self.succeeded += ok
        self.right += right
        self.own += own
        self.wrong_ok += ok and not right
        self.backed += backed
        self.false_green += backed and not right
        self.seconds.append(seconds)


def run_suite_task(
    client: ModelClient, task: SuiteTask, evidence: EvidenceMode, show: bool, max_turns: int
) -> tuple[bool, bool, bool, bool, float]:
    """One suite task in a fresh folder: (succeeded, right as shown, own sentence right,
    backed, seconds)."""
    with tempfile.TemporaryDirectory() as temp:
        write_suite([task], Path(temp))
        root = Path(temp) / task.id
        writes = task.moved is not None
        result, seconds = run_in(client, root, task.question, writes, evidence, max_turns)
        moved = task.check(root)
    ok = result.status == "succeeded"
    shown = "\n".join([result.answer, *result.facts])  # the answer and the facts it cites
    right = ok and moved and answer_right(shown, task.expect)
    own = ok and moved and answer_right(result.answer, task.expect)
    verdict = result.verdict
    backed = ok and verdict is not None and verdict.backed
    if show:
        calls = [f"{i.name}{i.arguments}" for i in result.items if isinstance(i, FunctionCall)]
        mark = "ok " if right else "BAD" if ok else "---"
        said = f"{verdict.kind}/{verdict.reason}" if verdict is not None else "-"
        print(
            f"\n{mark} {task.id} {result.status}/{result.code} {said} {seconds:.0f}s "
            f"calls={calls}\n  answer={result.answer[:300]!r}\n  facts={list(result.facts)[:5]!r}",
            file=sys.stderr,
        )
    return ok, right, own, backed, seconds


def run_suite(client: ModelClient, args: argparse.Namespace, label: str) -> None:
    """The suite's ``args.suite`` half through ``client``, printed per template and total."""
    tasks = generate(args.suite)
    if args.only:
        tasks = [t for t in tasks if t.template in args.only.split(",")]
    evidence: EvidenceMode = "require" if args.evidence == "require" else "warn"
    per: dict[str, SuiteTally] = {}
    total = SuiteTally()
    for task in tasks:
        outcome = run_suite_task(client, task, evidence, args.show, args.max_turns)
        for tally in (per.setdefault(task.template, SuiteTally()), total):
            tally.add(*outcome)
        print(".", end="", file=sys.stderr, flush=True)
    print(f"\nsuite: {args.suite}; {label}; evidence {evidence}")
    print(
        "template | runs | succeeded | right (shown) | own sentence | wrong ok | backed "
        "| false green | s/run"
    )
    print("---|---|---|---|---|---|---|---|---")
    for name, t in [*per.items(), ("total", total)]:
        print(
            f"{name} | {t.runs} | {t.succeeded} | {t.right} | {t.own} | {t.wrong_ok} "
            f"| {t.backed} | {t.false_green} | {_mean(t.seconds)}"
        )


def _mean(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):.1f}" if values else "-"


HEADER = (
    "mode | evidence | success | answer-correct | text-correct | shown-correct | traced | bad "
    "| requests/run | s/run"
)


def _row(t: Tally) -> str:
    return (
        f"{t.succeeded}/{t.runs} | {t.answer_correct}/{t.runs} | {t.text_correct}/{t.runs} | "
        f"{t.shown_correct}/{t.runs} | {t.traced}/{t.runs} | {t.bad} | "
        f"{_mean(t.requests)} | {_mean(t.seconds)}"
    )


def report(results: dict[tuple[str, str, str], Tally], model: str, wall: float) -> None:
    print(f"\nmodel: {model} (wall {wall:.0f} s)\n\ntask | {HEADER} | ends")
    print(" | ".join("---" for _ in range(12)))
    totals: dict[tuple[str, str], Tally] = {}
    for (task, mode, evidence), t in results.items():
        totals.setdefault((mode, evidence), Tally()).add(t)
        ends = ", ".join(f"{end} x{n}" for end, n in t.ends.most_common())
        print(f"{task} | {mode} | {evidence} | {_row(t)} | {ends}")
    print(f"\n{HEADER}\n" + " | ".join("---" for _ in range(10)))
    for (mode, evidence), t in totals.items():
        print(f"{mode} | {evidence} | {_row(t)}")


def _model(args: argparse.Namespace) -> ModelChoice:
    if args.qwen:
        path = assemble(MODELS[args.qwen], args.cache)
        return ModelChoice(path, path.stem, "bench/qwen_gguf.py")
    return resolve_model(args.model_file, os.environ, download=False)


def _clients(plain: ModelClient, modes: Sequence[str]) -> dict[str, ModelClient]:
    forms: dict[str, AnswerForm] = {form: form for form in ANSWER_FORMS}
    return {m: plain if m == "unguided" else GuidedClient(plain, answer=forms[m]) for m in modes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--model-file")
    parser.add_argument("--qwen", choices=sorted(MODELS), help="assemble and use this Qwen")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--evidence", default="warn,require")
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS))
    parser.add_argument("--threads", type=int, help="engine threads (default: its own)")
    parser.add_argument("--show", action="store_true", help="print each run's calls and answer")
    parser.add_argument("--max-turns", type=int, default=8, help="per run (8: the CLI's)")
    parser.add_argument(
        "--suite", choices=("dev", "heldout", "fresh"), help="run the generated suite"
    )
    parser.add_argument("--only", help="with --suite: templates to run (comma-separated)")
    args = parser.parse_args()
    require_local_extra()
    if args.suite:
        return _main_suite(args)
    chosen = [t for t in TASKS if t.name in args.tasks.split(",")]
    modes = [m for m in MODES if m in args.modes.split(",")]
    policies: list[EvidenceMode] = [p for p in ("warn", "require") if p in args.evidence]
    choice = _model(args)
    print(
        f"engine: {choice.path} ({choice.source}); {len(chosen)} tasks x {args.reps} reps "
        f"x {','.join(modes)} x {','.join(policies)}",
        file=sys.stderr,
    )
    results: dict[tuple[str, str, str], Tally] = {}
    started = time.perf_counter()
    with Engine.start(choice, threads=args.threads) as engine:
        plain = EngineClient(
            connect(Endpoint(engine.base_url, engine.model_name), ClientConfig(stream=False)),
            engine,
        )
        clients = _clients(plain, modes)
        for rep in range(args.reps):
            for mode in modes if rep % 2 == 0 else modes[::-1]:
                for evidence in policies:
                    for task in chosen:
                        tally = results.setdefault((task.name, mode, evidence), Tally())
                        run_task(clients[mode], task, evidence, tally, args.show, args.max_turns)
                        print(".", end="", file=sys.stderr, flush=True)
        plain.close()
    ordered = {k: results[k] for k in sorted(results, key=lambda k: (k[1], k[2], k[0]))}
    report(ordered, f"{choice.name} ({choice.path.name})", time.perf_counter() - started)
    return 0


def _main_suite(args: argparse.Namespace) -> int:
    """``--suite``: one mode (the first of ``--modes``) over the suite's half."""
    mode = next(m for m in MODES if m in args.modes.split(","))
    choice = _model(args)
    print(f"engine: {choice.path} ({choice.source}); suite {args.suite}, {mode}", file=sys.stderr)
    started = time.perf_counter()
    with Engine.start(choice, threads=args.threads) as engine:
        plain = EngineClient(
            connect(Endpoint(engine.base_url, engine.model_name), ClientConfig(stream=False)),
            engine,
        )
        run_suite(_clients(plain, [mode])[mode], args, f"{choice.name} {mode}")
        plain.close()
    print(f"wall {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
