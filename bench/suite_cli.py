#!/usr/bin/env python3
"""The generated suite (``bench/task_suite.py``) through ``minipi ask``, as a user runs it.

    python bench/suite_cli.py [--split heldout] [--only TEMPLATE,...] [--limit N] [--show]
        [--json-out FILE] [--label NAME]
        [-- EXTRA MINIPI ASK ARGS, e.g. --model-file X.gguf --no-guided]

Each task is a fresh copy of its project; ``minipi ask QUESTION --project DIR --json`` runs
with ``--approve all`` for the move tasks (deny otherwise) and the extra arguments, and its
``run_end`` is read. Printed per template and in total:

- right: every expected value is in the answer (``task_suite.task_right`` where the suite has
  it, a scorer that knows the task, e.g. that an absent value is right when the answer says
  so; else ``task_suite.answer_right``: with guided mode's cited facts, ``run_end.facts``, what
  the user is shown), and a move really happened; own: the same for the model's own sentence
  (the answer without the facts);
- succeeded: the run ended ``succeeded`` (exit 0); **wrong ok**: succeeded but not right;
- backed, or green: the run succeeded and its verdict is ``backed`` (``run_end.verdict``: the
  plain green success);
- **false green**: backed but not right (the figure that must be 0: a wrong answer shown as
  a plain success);
- seconds per run (engine start included: each ``minipi ask`` starts its own).

Then, per run (one model, one split): right and green, the **precision of green** (right
among green: how far a green answer can be trusted), the **coverage** (green among right: how
many right answers minipi dares to show green), and every wrong green with its answer.
``--json-out FILE`` appends one JSON line a task (task id, template, split, model label,
right, own, verdict, green, seconds, answer, ...), the keys ``bench/oracle.py`` writes too, so
runs of several models, splits or versions can be set side by side. The model label is
``--label``, else the name minipi's model resolution gives the ``--model-file`` in the extra
arguments (or the default model), else ``default``.
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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import task_suite
from task_suite import SPLITS, SuiteTask, answer_right, generate, write_suite

FACTS_HEADINGS = {"zh": "摘自工具结果：", "en": "From the tool results:"}
"""The heading under which minipi before a77f346's successor composed cited facts into the
answer text (to judge an older version's own sentence)."""

_TASK_RIGHT: Callable[[SuiteTask, str], bool] | None = getattr(task_suite, "task_right", None)


# --- shared with bench/oracle.py ----------------------------------------------------------


def score(task: SuiteTask, text: str) -> bool:
    """Whether ``text`` answers ``task`` rightly: the suite's task-aware scorer
    (``task_right``) when it has one, else every expected value stated (``answer_right``)."""
    if _TASK_RIGHT is not None:
        return bool(_TASK_RIGHT(task, text))
    return answer_right(text, task.expect)


def scorer_name() -> str:
    return "task_right" if _TASK_RIGHT is not None else "answer_right"


def add_filters(parser: argparse.ArgumentParser, default_split: str = "heldout") -> None:
    """``--split``, ``--only``, ``--limit``, ``--label``: the options both scripts share."""
    names = ", ".join([*SPLITS, "all", *getattr(task_suite, "TEMPLATE_SPLITS", {})])
    parser.add_argument("--split", default=default_split, help=f"{names} (default: %(default)s)")
    parser.add_argument("--only", help="templates to run (comma-separated)")
    parser.add_argument("--limit", type=int, help="run only the first N tasks (after --only)")
    parser.add_argument("--label", help="the model's name in the report and the rows")


def select(split: str, only: str | None, limit: int | None) -> list[SuiteTask]:
    """The tasks of ``split``, those of the ``only`` templates, the first ``limit`` of them."""
    try:
        tasks = generate(split)
    except (KeyError, ValueError) as exc:
        known = ", ".join([*SPLITS, "all", *getattr(task_suite, "TEMPLATE_SPLITS", {})])
        raise SystemExit(f"unknown split {split!r} ({exc}); try {known}") from None
    if only:
        names = {name.strip() for name in only.split(",")}
        unknown = names - {task.template for task in tasks}
        if unknown:
            print(f"no task of template {', '.join(sorted(unknown))} in {split}", file=sys.stderr)
        tasks = [task for task in tasks if task.template in names]
    return tasks[:limit] if limit is not None else tasks


def split_of(task: SuiteTask, split: str) -> str:
    """The split ``task`` belongs to (``split`` unless it is ``all``)."""
    own = getattr(task, "split", None)
    if isinstance(own, str) and own:
        return own
    if split != "all":
        return split
    return next((name for name, seeds in SPLITS.items() if task.seed in seeds), "?")


def base_row(task: SuiteTask, split: str, model: str, runner: str, started: str) -> dict[str, Any]:
    """The keys every row of both scripts carries."""
    return {
        "runner": runner,
        "started": started,
        "id": task.id,
        "template": task.template,
        "split": split_of(task, split),
        "language": task.language,
        "absent": bool(getattr(task, "absent", False)),
        "model": model,
        "scorer": scorer_name(),
    }


def append_rows(path: Path | None, rows: Iterable[dict[str, Any]]) -> None:
    """Append ``rows`` to the JSONL file ``path`` (nothing when None)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def short(text: str, width: int = 160) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def ratio(part: int, whole: int) -> str:
    """``part/whole (p %)``, or ``part/0 (-)``."""
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else f"{part}/0 (-)"


def right_per_split(rows: Sequence[dict[str, Any]]) -> str:
    """``split right n/N`` for each split among ``rows``."""
    tally: dict[str, Counter[str]] = {}
    for row in rows:
        counts = tally.setdefault(str(row["split"]), Counter())
        counts["runs"] += 1
        counts["right"] += bool(row["right"])
    return "; ".join(f"{name}: right {ratio(c['right'], c['runs'])}" for name, c in tally.items())


# --- minipi ask ---------------------------------------------------------------------------


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


def is_green(result: dict[str, Any]) -> bool:
    """The plain backed success: the run succeeded and its verdict is ``backed``."""
    return bool(result["status"] == "succeeded" and result["verdict"] == "backed")


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
                "code": None,
                "answer": "",
                "seconds": timeout,
                "right": False,
                "own": False,
                "verdict": None,
                "stderr": "",
            }
        seconds = time.perf_counter() - started
        keep = os.environ.get("MINIPI_SUITE_KEEP")  # a folder: each task's --json events
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / f"{task.id}.jsonl").write_text(proc.stdout, encoding="utf-8")
        end: dict[str, Any] = {}
        for line in proc.stdout.splitlines():
            if line.startswith('{"type": "run_end"') or '"type": "run_end"' in line[:40]:
                end = json.loads(line)
        answer = str(end.get("answer", ""))
        shown = "\n".join([answer, *map(str, end.get("facts") or ())])
        moved = task.check(root)
        return {
            "status": end.get("status", f"exit {proc.returncode}"),
            "code": end.get("code"),
            "answer": shown,
            "verdict": verdict_of(end),
            "seconds": seconds,
            "right": score(task, shown) and moved,
            "own": score(task, own_text(answer)) and moved,
            "stderr": proc.stderr[-2000:] if not end else "",
        }


def model_label(extra: Sequence[str]) -> str:
    """The model a ``minipi ask`` with ``extra`` serves, as minipi names it (best effort)."""
    model_file: str | None = None
    for n, arg in enumerate(extra):
        if arg == "--base-url" and n + 1 < len(extra):
            return extra[n + 1]
        if arg == "--model-file" and n + 1 < len(extra):
            model_file = extra[n + 1]
        elif arg.startswith("--model-file="):
            model_file = arg.split("=", 1)[1]
    try:
        from minipi.local.models import resolve_model

        return resolve_model(model_file, os.environ, download=False).name
    except Exception:  # a label only: minipi ask reports the real error
        return Path(model_file).stem if model_file else "default"


def tally(counts: Counter[str], result: dict[str, Any]) -> None:
    ok = result["status"] == "succeeded"
    green = is_green(result)
    counts["runs"] += 1
    counts["right"] += result["right"]
    counts["own"] += result["own"]
    counts["succeeded"] += ok
    counts["wrong_ok"] += ok and not result["right"]
    counts["backed"] += green
    counts["false_green"] += green and not result["right"]
    counts["verdict_known"] += result["verdict"] is not None


def show(task: SuiteTask, result: dict[str, Any], verbose: bool) -> None:
    if not verbose:
        print(".", end="", file=sys.stderr, flush=True)
        return
    mark = "ok " if result["right"] else "BAD" if result["status"] == "succeeded" else "---"
    green = " GREEN" if is_green(result) else ""
    print(
        f"{mark}{green} {task.id} {result['status']}/{result.get('code')}/{result['verdict']} "
        f"{result['seconds']:.0f}s {result['answer'][:160]!r} {result['stderr'][-300:]}",
        file=sys.stderr,
    )


def print_table(per: dict[str, Counter[str]], total: Counter[str]) -> None:
    print("template | runs | right | own | succeeded | wrong ok | backed | false green")
    print("---|---|---|---|---|---|---|---")
    for name, c in [*per.items(), ("total", total)]:
        known = c["verdict_known"] or not c["succeeded"]
        backed, green = (c["backed"], c["false_green"]) if known else ("-", "-")
        print(
            f"{name} | {c['runs']} | {c['right']} | {c['own']} | {c['succeeded']} "
            f"| {c['wrong_ok']} | {backed} | {green}"
        )


def print_green(rows: Sequence[dict[str, Any]]) -> None:
    """Right, green, precision and coverage of green, and every wrong green."""
    runs = len(rows)
    right = sum(bool(r["right"]) for r in rows)
    green = sum(bool(r["green"]) for r in rows)
    both = sum(bool(r["right"] and r["green"]) for r in rows)
    print(f"\nright {ratio(right, runs)}; own {ratio(sum(bool(r['own']) for r in rows), runs)}")
    print(f"green {ratio(green, runs)}")
    print(f"precision of green (right among green): {ratio(both, green)}")
    print(f"coverage (green among right): {ratio(both, right)}")
    if len({r["split"] for r in rows}) > 1:
        print(right_per_split(rows))
    wrong = [r for r in rows if r["green"] and not r["right"]]
    print(f"wrong green: {len(wrong)}")
    for row in wrong:
        print(f"  {row['id']}: {short(row['answer'])!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    add_filters(parser)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--show", action="store_true", help="print each run's answer")
    parser.add_argument("--json-out", type=Path, help="append one JSON line a task to FILE")
    parser.add_argument("extra", nargs="*", help="arguments for minipi ask (after --)")
    args = parser.parse_args()
    tasks = select(args.split, args.only, args.limit)
    label = args.label or model_label(args.extra)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    per: dict[str, Counter[str]] = {}
    total: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    for task in tasks:
        result = run_one(task, args.extra, args.timeout)
        for counts in (per.setdefault(task.template, Counter()), total):
            tally(counts, result)
        show(task, result, args.show)
        row = base_row(task, args.split, label, "minipi ask", started)
        row.update(
            {
                key: result[key]
                for key in ("right", "own", "status", "code", "verdict", "seconds", "answer")
            }
        )
        row.update(green=is_green(result), seconds=round(result["seconds"], 2))
        row["args"] = list(args.extra)
        rows.append(row)
        append_rows(args.json_out, [row])
    print(f"\nsplit: {args.split}; model: {label}; scorer: {scorer_name()}; ", end="")
    print(f"minipi ask {' '.join(args.extra)}")
    print_table(per, total)
    print_green(rows)
    seconds = [float(r["seconds"]) for r in rows]
    mean = sum(seconds) / len(seconds) if seconds else 0.0
    print(f"\nmean {mean:.1f} s a run")
    if args.json_out:
        print(f"rows appended to {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
