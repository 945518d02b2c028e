#!/usr/bin/env python3
"""The generated suite (``bench/task_suite.py``) through ``minipi ask``, as a user runs it.

    python bench/suite_cli.py [--split heldout] [--only TEMPLATE,...] [--show]
        [-- EXTRA MINIPI ASK ARGS, e.g. --model-file X.gguf --no-guided]

Each task is a fresh copy of its project; ``minipi ask QUESTION --project DIR --json`` runs
with ``--approve all`` for the move tasks (deny otherwise) and the extra arguments, and its
``run_end`` is read. Printed per template and in total:

- right: every expected value is in the answer (``task_suite.answer_right``: with guided
  mode's cited facts, ``run_end.facts``, what the user is shown), and a move really happened;
  own: the same for the model's own sentence (the answer without the facts);
- succeeded: the run ended ``succeeded`` (exit 0); **wrong ok**: succeeded but not right;
- backed: the run's verdict is ``backed`` (``run_end.verdict``: the plain green success);
- **false green**: backed but not right (the figure that must be 0: a wrong answer shown as
  a plain success);
- seconds per run (engine start included: each ``minipi ask`` starts its own).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_suite import SuiteTask, answer_right, generate, write_suite

FACTS_HEADINGS = {"zh": "摘自工具结果：", "en": "From the tool results:"}
"""The heading under which minipi before a77f346's successor composed cited facts into the
answer text (to judge an older version's own sentence)."""


def own_text(answer: str) -> str:
    """The model's own sentence: an answer without facts composed into its text (what an
    older minipi printed)."""
    for heading in FACTS_HEADINGS.values():
        answer = answer.split(f"\n\n{heading}\n", 1)[0]
    return answer


def verdict_of(end: dict[str, Any]) -> str | None:
    """``run_end.verdict``'s kind (None: not succeeded, or a CLI without verdicts)."""
    verdict = end.get("verdict")
    return str(verdict.get("kind")) if isinstance(verdict, dict) else None


def run_one(task: SuiteTask, extra: list[str], timeout: float) -> dict[str, Any]:
    """One ``minipi ask`` of ``task`` in a fresh copy of its project: what it ended with."""
    with tempfile.TemporaryDirectory() as temp:
        write_suite([task], Path(temp))
        root = Path(temp) / task.id
        approve = "all" if task.moved else "deny"
        command = [sys.executable, "-m", "minipi", "ask", task.question, "--project", str(root)]
        command += ["--json", "--approve", approve, *extra]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QWEN_", "OPENAI_"))}
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, check=False, env=env
            )
        except subprocess.TimeoutExpired:
            return {
                "status": "timeout",
                "answer": "",
                "seconds": timeout,
                "right": False,
                "own": False,
                "verdict": None,
                "stderr": "",
            }
        seconds = time.perf_counter() - started
        end: dict[str, Any] = {}
        for line in proc.stdout.splitlines():
            if line.startswith('{"type": "run_end"') or '"type": "run_end"' in line[:40]:
                end = json.loads(line)
        answer = str(end.get("answer", ""))
        shown = "\n".join([answer, *map(str, end.get("facts") or ())])
        moved = task.check(root)
        right = answer_right(shown, task.expect) and moved
        own = answer_right(own_text(answer), task.expect) and moved
        return {
            "status": end.get("status", f"exit {proc.returncode}"),
            "code": end.get("code"),
            "answer": shown,
            "verdict": verdict_of(end),
            "seconds": seconds,
            "right": right,
            "own": own,
            "stderr": proc.stderr[-2000:] if not end else "",
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--split", choices=("dev", "heldout", "fresh", "all"), default="heldout")
    parser.add_argument("--only", help="templates to run (comma-separated)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--show", action="store_true", help="print each run's answer")
    parser.add_argument("extra", nargs="*", help="arguments for minipi ask (after --)")
    args = parser.parse_args()
    tasks = generate(args.split)
    if args.only:
        tasks = [t for t in tasks if t.template in args.only.split(",")]
    per: dict[str, Counter[str]] = {}
    total: Counter[str] = Counter()
    seconds: list[float] = []
    for task in tasks:
        result = run_one(task, args.extra, args.timeout)
        ok = result["status"] == "succeeded"
        counts = per.setdefault(task.template, Counter())
        for tally in (counts, total):
            tally["runs"] += 1
            tally["right"] += result["right"]
            tally["own"] += result["own"]
            tally["succeeded"] += ok
            backed = ok and result["verdict"] == "backed"
            tally["wrong_ok"] += ok and not result["right"]
            tally["backed"] += backed
            tally["false_green"] += backed and not result["right"]
            tally["verdict_known"] += result["verdict"] is not None
        seconds.append(result["seconds"])
        if args.show:
            mark = "ok " if result["right"] else "BAD" if ok else "---"
            print(
                f"{mark} {task.id} {result['status']}/{result.get('code')}/{result['verdict']} "
                f"{result['seconds']:.0f}s {result['answer'][:160]!r} {result['stderr'][-300:]}",
                file=sys.stderr,
            )
        else:
            print(".", end="", file=sys.stderr, flush=True)
    print(f"\nsplit: {args.split}; minipi ask {' '.join(args.extra)}")
    print("template | runs | right | own | succeeded | wrong ok | backed | false green")
    print("---|---|---|---|---|---|---|---")
    for name, c in [*per.items(), ("total", total)]:
        known = c["verdict_known"] or not c["succeeded"]
        backed, green = (c["backed"], c["false_green"]) if known else ("-", "-")
        print(
            f"{name} | {c['runs']} | {c['right']} | {c['own']} | {c['succeeded']} "
            f"| {c['wrong_ok']} | {backed} | {green}"
        )
    mean = sum(seconds) / len(seconds) if seconds else 0.0
    print(f"\nmean {mean:.1f} s a run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
