"""How fast the pages of ``minipi sessions export`` and ``minipi batch report`` open.

    python bench/perf_report_page.py [--turns 200] [--tasks 1000] [--shots DIR]

Makes a 200-turn session page (each turn a read_file of a 40-line JSON file, every figure of
the answer traced) and a 1,000-task batch report from synthetic saved events, through the
same code the commands use, then opens each in headless Chromium (``tests/support/browser``)
and prints the seconds from navigation to the load event (target: under 2 s), the page's size
and the time to make it. ``--shots DIR`` also saves a screenshot of each page there.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "src"))

from minipi.cli.batch_report import report_batch  # noqa: E402
from minipi.cli.export import session_page  # noqa: E402
from minipi.cli.transcript import transcript_of  # noqa: E402
from support.browser import Browser  # noqa: E402

TARGET_S = 2.0


def _file(n: int) -> str:
    rows = {f"field_{k}": n * 100 + k for k in range(38)}
    return json.dumps({"day": n, **rows}, indent=2) + "\n"


def session_events(turns: int) -> list[dict[str, Any]]:
    """A run of ``turns`` reads and an answer citing the last file's first figure."""
    events: list[dict[str, Any]] = []
    for n in range(1, turns + 1):
        call = {
            "type": "function_call",
            "call_id": f"c{n}",
            "name": "read_file",
            "arguments": json.dumps({"path": f"data/day-{n}.json"}),
        }
        output = {"type": "function_call_output", "call_id": f"c{n}", "output": _file(n)}
        events += [
            {"type": "items", "turn": n, "items": [call]},
            {"type": "tool_result", "turn": n, "call_id": f"c{n}", "seconds": 0.001},
            {"type": "items", "turn": n, "items": [output]},
        ]
    text = _file(turns)
    value = str(turns * 100)
    start = text.index(value)
    answer = f"field_0 of day {turns} is {value}."
    claim = {
        "text": value,
        "status": "exact",
        "span": [answer.index(value), answer.index(value) + len(value)],
        "sources": [
            {
                "call_id": f"c{turns}",
                "path": f"data/day-{turns}.json",
                "pointer": "/field_0",
                "line": 3,
                "range": [start, start + len(value)],
            }
        ],
    }
    evidence = {"claims": [claim], "supported": 1, "unsupported": 0, "tool_results": turns}
    events.append(
        {"type": "run_end", "status": "succeeded", "answer": answer, "evidence": evidence}
    )
    return events


def batch_dir(root: Path, tasks: int) -> Path:
    out = root / "batch"
    (out / "traces").mkdir(parents=True)
    with (out / "results.jsonl").open("w", encoding="utf-8") as results:
        for n in range(tasks):
            task = f"t{n:04d}"
            ok = n % 10 != 3
            record = {
                "id": task,
                "status": "succeeded" if ok else "failed",
                "code": None if ok else "bad_request",
                "answer": "日报日期 2026-09-06，订单数 128。",
                "error": None,
                "evidence": {"supported": 2, "unsupported": 0, "tool_results": 2},
                "turns": 3,
                "tool_calls": 2,
                "tokens": {"input": 1700, "output": 24, "cached": 0},
                "seconds": 0.1 + n % 7 / 10,
                "task": "x",
                "trace": f"traces/{task}.json",
                "correct": ok,
            }
            results.write(json.dumps(record, ensure_ascii=False) + "\n")
            trace = {"events": session_events(3)}
            (out / "traces" / f"{task}.json").write_text(json.dumps(trace), encoding="utf-8")
    summary = {
        "tasks": tasks,
        "finished": tasks,
        "succeeded": tasks - tasks // 10,
        "judged": tasks,
        "correct": tasks - tasks // 10,
        "traced": tasks,
        "with_figures": tasks,
        "seconds_per_task": {"p50": 0.4, "p95": 0.7},
    }
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--shots", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        began = time.perf_counter()
        run = transcript_of("Which value has field_0?", session_events(args.turns))
        session = root / "session.html"
        session.write_text(session_page("bench", ["synthetic"], [(1, run)]), encoding="utf-8")
        made_session = time.perf_counter() - began
        out = batch_dir(root, args.tasks)
        began = time.perf_counter()
        report = root / "report.html"
        report_batch(out, report)
        made_batch = time.perf_counter() - began
        with Browser.start(root / "profile") as browser:
            browser.open("about:blank")  # the browser's own start is not the page's
            for name, page, made in (
                ("session", session, made_session),
                ("batch", report, made_batch),
            ):
                seconds = min(browser.open(page) for _ in range(3))
                size = page.stat().st_size / 1e6
                verdict = "PASS" if seconds < TARGET_S else "MISS"
                print(
                    f"{name:8} load {seconds:.3f} s (target < {TARGET_S} s) {verdict}   "
                    f"{size:.2f} MB, made in {made:.2f} s"
                )
                if args.shots is not None:
                    browser.screenshot(args.shots / f"{name}.png")


if __name__ == "__main__":
    main()
