#!/usr/bin/env python3
"""The verdict of saved runs judged again, by this checkout's minipi or another's.

    MINIPI_SUITE_KEEP=DIR python bench/suite_cli.py --split templates --json-out rows.jsonl -- …
    python bench/rejudge.py DIR --rows rows.jsonl [--label q15] [--minipi-src OTHER/src]

``suite_cli.py`` keeps each task's ``minipi ask --json`` events in ``DIR/<task id>.jsonl``
when ``MINIPI_SUITE_KEEP`` is set. This script rebuilds each run's conversation from its
``items`` events, checks the answer again (``check_evidence``) and judges it again
(``judge``) with the minipi it imports: this checkout's, or with ``--minipi-src`` another
version's source tree (a ``git worktree`` of an earlier commit), so that two verdicts are
compared on the very same answers. Rightness comes from the rows ``suite_cli.py`` wrote
(``--rows``, the row of the same task id and label). Prints, per verdict version: green,
right, precision of green (right among green), coverage (green among right), and each wrong
green; ``--out`` writes one JSON line a task with both verdicts.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _judge_all(folder: Path) -> dict[str, dict[str, Any]]:
    """Task id -> the verdict the imported minipi gives each saved run (in this process)."""
    from minipi.ai.serialize import items_from_json

    try:  # the layout since stop 36; before it the check and verdict were in minipi.agent
        from minipi.evidence import check_evidence
        from minipi.evidence.verdict import judge
    except ImportError:
        from minipi.agent.evidence import check_evidence  # type: ignore[no-redef,import-not-found]
        from minipi.agent.verdict import judge  # type: ignore[no-redef,import-not-found]

    takes_question = "question" in inspect.signature(judge).parameters
    verdicts: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        records = []
        end: dict[str, Any] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "run_start":
                records.append({"type": "message", "role": "user", "text": event["question"]})
            elif event.get("type") == "items":
                records.extend(event["items"])
            elif event.get("type") == "run_end":
                end = event
        if end.get("status") != "succeeded":
            verdicts[path.stem] = {"kind": None, "reason": end.get("code")}
            continue
        items = items_from_json(records)
        answer = str(end.get("answer", ""))
        facts = tuple(end.get("facts") or ())
        evidence = check_evidence(answer, items)
        kwargs: dict[str, Any] = {"facts": facts, "items": items, "answer": answer}
        if takes_question:
            from minipi.ai.types import last_question
            from minipi.reading import Question

            kwargs["question"] = Question.of(last_question(items))
        verdict = judge(evidence, **kwargs)
        verdicts[path.stem] = {"kind": verdict.kind, "reason": verdict.reason}
    return verdicts


def _judged_by(src: Path | None, folder: Path) -> dict[str, dict[str, Any]]:
    if src is None:
        return _judge_all(folder)
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import rejudge; "
        "print(json.dumps(rejudge._judge_all(__import__('pathlib').Path(sys.argv[2]))))"
    )
    here = str(Path(__file__).resolve().parent)
    proc = subprocess.run(
        [sys.executable, "-c", code, here, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, dict[str, Any]] = json.loads(proc.stdout)
    return result


def _rows(path: Path, label: str | None) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if label is None or row.get("model") == label:
            rows[str(row["id"])] = row
    return rows


def _report(name: str, verdicts: dict[str, dict[str, Any]], rows: dict[str, Any]) -> None:
    tasks = [t for t in verdicts if t in rows]
    right = {t for t in tasks if rows[t].get("right")}
    green = {t for t in tasks if verdicts[t]["kind"] == "backed"}
    good = green & right
    precision = f"{len(good)}/{len(green)}" + (f" ({len(good) / len(green):.0%})" if green else "")
    coverage = f"{len(good)}/{len(right)}" + (f" ({len(good) / len(right):.0%})" if right else "")
    print(
        f"{name}: tasks {len(tasks)}, right {len(right)}, green {len(green)}, "
        f"precision of green {precision}, coverage {coverage}"
    )
    for task in sorted(green - right):
        print(f"  wrong green {task}: {str(rows[task].get('answer', ''))[:140]!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the MINIPI_SUITE_KEEP folder of a run")
    parser.add_argument("--rows", type=Path, required=True, help="suite_cli.py --json-out FILE")
    parser.add_argument("--label", help="the rows' model label (default: any)")
    parser.add_argument("--minipi-src", type=Path, help="another minipi's src/ to compare")
    parser.add_argument("--out", type=Path, help="one JSON line a task with both verdicts")
    args = parser.parse_args()
    rows = _rows(args.rows, args.label)
    now = _judged_by(None, args.folder)
    _report("this checkout", now, rows)
    other = _judged_by(args.minipi_src, args.folder) if args.minipi_src else {}
    if other:
        _report(str(args.minipi_src), other, rows)
        for task in sorted(now):
            if other.get(task) != now[task]:
                right = rows.get(task, {}).get("right")
                print(f"  {task}: {other.get(task)} -> {now[task]} right={right}")
    if args.out:
        with args.out.open("a", encoding="utf-8") as out:
            for task in sorted(now):
                row = {"task": task, "now": now[task], "other": other.get(task)}
                row["right"] = rows.get(task, {}).get("right")
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
