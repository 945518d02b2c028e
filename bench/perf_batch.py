#!/usr/bin/env python3
"""``minipi batch`` against the fake server: wall time against the ideal, overhead per task,
Ray's overhead, peak RSS.

    python bench/perf_batch.py [--tasks 200] [--latency 0.2] [--workers 1,8,32]
                               [--ask-tasks 10] [--no-ray] [--ray-workers 8]

Every task is the daily-report run (list_files, read_file, answer: 3 model requests) on
``examples/sample_project``; the fake server (``tests/support/fake.py``, in this process)
waits ``--latency`` seconds before each reply. Each figure is a fresh ``minipi batch``
process (the real command, through ``minipi.cli.batch``), timed around the whole process:

- efficiency = ideal / wall, ideal = tasks x 3 x latency / workers (target >= 0.8 at 8);
- fixed cost = wall of a 1-task batch - 3 x latency (start-up, engine of nothing, exit);
- overhead per task = (wall - fixed - ideal) x workers / tasks: the seconds each task held
  a worker beyond its model latency;
- ``minipi ask`` in a loop: (wall of each process - 3 x latency), the same tasks one by one;
- ``--ray``: the same, on a new local Ray instance (its fixed cost is Ray's start-up);
- peak RSS of the batch process at the most workers (GNU time ``%M``; see perf_runs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from perf_runs import RSS_EXACT, Proc, run_process  # noqa: E402

from batch_tasks.scripted import ENTRY, ByQuestion, task_rows, write_tasks  # noqa: E402
from support.cli import EXAMPLES, QUESTION  # noqa: E402
from support.fake import FakeServer  # noqa: E402

TURNS = 3


@dataclass(frozen=True)
class Row:
    label: str
    tasks: int
    workers: int
    wall: float
    ideal: float
    fixed: float
    cpu: float
    """CPU seconds of the batch process (and its children: not Ray's workers)."""
    rss_mb: float | None = None

    @property
    def efficiency(self) -> float:
        return self.ideal / self.wall

    @property
    def per_task(self) -> float:
        return max(self.wall - self.fixed - self.ideal, 0.0) * self.workers / self.tasks


def _batch(
    server: FakeServer,
    tasks: Path,
    out: Path,
    workers: int,
    *extra: str,
    rss: bool = False,
) -> Proc:
    command = [
        sys.executable,
        *ENTRY,
        str(tasks),
        "--out",
        str(out),
        "--workers",
        str(workers),
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        *extra,
    ]
    proc = run_process(command, str(out.parent), timeout=1800, rss=rss)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    if proc.returncode != 0 or summary["succeeded"] != summary["tasks"]:
        raise SystemExit(f"batch failed ({proc.returncode}): {proc.err[-2000:]}")
    return proc


def _ask_loop(server: FakeServer, count: int, work: Path) -> list[float]:
    """Wall seconds of ``count`` ``minipi ask`` processes, one after the other."""
    walls = []
    for n in range(count):
        command = [
            sys.executable,
            "-m",
            "minipi",
            "ask",
            f"{QUESTION} (#{n})",
            "--project",
            str(EXAMPLES / "sample_project"),
            "--base-url",
            server.base_url,
            "--model",
            "fake-model",
        ]
        proc = run_process(command, str(work), timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"ask failed: {proc.err[-2000:]}")
        walls.append(proc.wall)
    return walls


def _tasks_file(work: Path, count: int) -> Path:
    return write_tasks(work / f"tasks-{count}.jsonl", task_rows(count, EXAMPLES / "sample_project"))


def _fixed(server: FakeServer, work: Path, latency: float, *extra: str, label: str) -> float:
    out = work / f"fixed-{label}"
    proc = _batch(server, _tasks_file(work, 1), out, 1, *extra)
    return max(proc.wall - TURNS * latency, 0.0)


def measure(args: argparse.Namespace, work: Path) -> tuple[list[Row], list[float], float]:
    latency, count = args.latency, args.tasks
    server = FakeServer([ByQuestion(latency)] * (count * TURNS * 8 + 1000)).start()
    try:
        tasks = _tasks_file(work, count)
        fixed = _fixed(server, work, latency, label="threads")
        rows = []
        most = max(args.workers)
        for workers in args.workers:
            proc = _batch(server, tasks, work / f"w{workers}", workers, rss=workers == most)
            ideal = count * TURNS * latency / workers
            rss = proc.rss_mb if workers == most else None
            label = f"threads, {workers} workers"
            rows.append(Row(label, count, workers, proc.wall, ideal, fixed, proc.cpu, rss))
        if args.ray:
            ray_fixed = _fixed(server, work, latency, "--ray", label="ray")
            workers = args.ray_workers
            proc = _batch(server, tasks, work / f"ray{workers}", workers, "--ray")
            ideal = count * TURNS * latency / workers
            label = f"--ray, {workers} workers"
            rows.append(Row(label, count, workers, proc.wall, ideal, ray_fixed, proc.cpu))
        asks = _ask_loop(server, args.ask_tasks, work)
    finally:
        server.stop()
    return rows, asks, fixed


def report(rows: Sequence[Row], asks: Sequence[float], args: argparse.Namespace) -> None:
    latency = args.latency
    load = os.getloadavg()[0]
    print(
        f"# minipi batch: {args.tasks} tasks x {TURNS} requests, {latency * 1000:.0f} ms "
        f"model latency; load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'run':<22} {'wall s':>8} {'ideal s':>8} {'ideal/wall':>10} {'fixed s':>8} "
        f"{'overhead/task ms':>16} {'CPU ms/task':>11} {'peak RSS MB':>11}"
    )
    for row in rows:
        rss = "-" if row.rss_mb is None else f"{row.rss_mb:.1f}{'' if RSS_EXACT else '*'}"
        print(
            f"{row.label:<22} {row.wall:8.2f} {row.ideal:8.2f} {row.efficiency:10.2f} "
            f"{row.fixed:8.2f} {row.per_task * 1000:16.1f} {row.cpu / row.tasks * 1000:11.1f} "
            f"{rss:>11}"
        )
    ask_overhead = sum(w - TURNS * latency for w in asks) / len(asks)
    one = next((r for r in rows if r.workers == 1), None)
    print(
        f"minipi ask in a loop ({len(asks)} tasks): {ask_overhead * 1000:.0f} ms overhead "
        f"per task (process start, imports, exit)"
    )
    if one is not None:
        batch_overhead = (one.wall - one.ideal) / one.tasks  # the fixed cost shared by all
        print(
            f"batch, 1 worker: {batch_overhead * 1000:.1f} ms per task with its fixed cost "
            f"spread ({one.per_task * 1000:.1f} ms without): "
            f"{batch_overhead / ask_overhead:.3f} x the ask loop's"
        )
    eight = next((r for r in rows if r.workers == 8 and r.label.startswith("threads")), None)
    if eight is not None:
        verdict = "PASS" if eight.efficiency >= 0.8 else "MISS"
        print(f"target: ideal/wall >= 0.8 at 8 workers: {eight.efficiency:.3f} {verdict}")
    if not RSS_EXACT:
        print("* peak RSS from wait4: an upper bound (GNU time not found)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--workers", default="1,8,32")
    parser.add_argument("--ask-tasks", type=int, default=10)
    parser.add_argument("--ray-workers", type=int, default=8)
    parser.add_argument("--no-ray", dest="ray", action="store_false")
    args = parser.parse_args()
    args.workers = [int(w) for w in args.workers.split(",")]
    if args.ray:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            print("(Ray is not installed: --ray skipped; pip install 'minipi[ray]')")
            args.ray = False
    work = Path(tempfile.mkdtemp(prefix="perf-batch-"))
    try:
        rows, asks, _ = measure(args, work)
        report(rows, asks, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
