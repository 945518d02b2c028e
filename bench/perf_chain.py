#!/usr/bin/env python3
"""Bytes on the wire with and without Responses chaining (``previous_response_id``).

    /tmp/venv/bin/python bench/perf_chain.py [--ns 50,200] [--reps 3]

Runs the peers harness's chain task (read step1.txt … stepN.txt, then answer "done") through
minipi's library API (``run_agent`` + ``minipi.files.make_read_file_tool``, as
``peers_runner.py`` does) on the ``responses`` wire, against ``fake_responses_server.py`` (the
harness's fake server plus stored responses), with ``ClientConfig(previous_response_id=...)``
off and on, runs alternated. For each it prints the server's ``/stats`` figures: requests,
total request bytes, first and last request bytes, growth per turn ``(last - first) / N``, and
the median wall time of the run in this process (connect to close), then the ratio on/off.
A run counts only if it answers "done" after exactly N+1 requests that saw every step token,
chained N times when on (0 when off) with no 400 for an unknown id.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perf_runs import FakeServer, make_workdir

from minipi import AgentConfig, ClientConfig, Endpoint, ProjectFiles, connect, run_agent
from minipi.files import make_read_file_tool

MODEL = "fake-model"
INSTRUCTIONS = "You are a careful agent. Use the read_file tool when asked."  # peers_runner's
SERVER = Path(__file__).with_name("fake_responses_server.py")


@dataclass(frozen=True)
class Run:
    """One chain run: the server's byte counts and our wall time."""

    n: int
    chained: bool
    wall: float
    stats: dict[str, Any]

    @property
    def growth(self) -> float:
        return float(self.stats["last_bytes"] - self.stats["first_bytes"]) / self.n


def run_chain(server: FakeServer, workdir: str, n: int, chained: bool) -> Run:
    server.call("/reset", "POST")
    question = f"Follow the tool-call chain [[chain:{n}]] and then give the final answer."
    config = AgentConfig(instructions=INSTRUCTIONS, max_turns=n + 10)
    started = time.perf_counter()
    client = connect(
        Endpoint(server.base_url, MODEL, wire="responses"),
        ClientConfig(previous_response_id=chained),
    )
    with ProjectFiles(workdir) as files:
        result = run_agent(client, [make_read_file_tool(files)], config, question)
    client.close()
    wall = time.perf_counter() - started
    stats = server.call("/stats")
    checks = {
        "answer": result.answer == "done",
        "requests": stats["requests"] == n + 1,
        "steps": stats["max_k_tok"] == n,
        "chained": stats["chained"] == (n if chained else 0),
        "lost": stats["lost"] == 0,
    }
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        raise SystemExit(
            f"perf_chain: N={n} chained={chained} failed {failed}: status={result.status} "
            f"error={result.error} stats={stats}"
        )
    return Run(n, chained, wall, stats)


def measure(server: FakeServer, workdir: str, n: int, reps: int) -> dict[bool, list[Run]]:
    """``reps`` runs each way, alternating which goes first."""
    runs: dict[bool, list[Run]] = {False: [], True: []}
    for rep in range(reps):
        for chained in (False, True) if rep % 2 == 0 else (True, False):
            runs[chained].append(run_chain(server, workdir, n, chained))
    for chained, done in runs.items():
        sizes = {r.stats["total_bytes"] for r in done}
        if len(sizes) != 1:
            raise SystemExit(f"perf_chain: N={n} chained={chained}: bytes vary {sizes}")
    return runs


def render(n: int, runs: dict[bool, list[Run]]) -> list[str]:
    rows: dict[str, list[float]] = {}
    for chained in (False, True):
        run, stats = runs[chained][0], runs[chained][0].stats
        rows.setdefault("requests", []).append(stats["requests"])
        rows.setdefault("total request bytes", []).append(stats["total_bytes"])
        rows.setdefault("first request bytes", []).append(stats["first_bytes"])
        rows.setdefault("last request bytes", []).append(stats["last_bytes"])
        rows.setdefault("growth per turn (bytes)", []).append(run.growth)
        rows.setdefault("wall, median (s)", []).append(
            statistics.median(r.wall for r in runs[chained])
        )
    lines = [f"N={n}", f"  {'':<26}{'off':>12}{'on':>12}{'on/off':>9}"]
    for name, (off, on) in rows.items():
        shown = [f"{v:>12.3f}" if isinstance(v, float) else f"{v:>12,}" for v in (off, on)]
        ratio = f"{on / off:>9.3f}" if off else f"{'-':>9}"
        lines.append(f"  {name:<26}{''.join(shown)}{ratio}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--ns", default="50,200", help="chain lengths, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="runs each way per N")
    args = parser.parse_args()
    ns = [int(n) for n in args.ns.split(",")]
    with tempfile.TemporaryDirectory(prefix="minipi-chain-") as tmp:
        workdir = make_workdir(tmp, max(ns))
        server = FakeServer(SERVER, tmp)
        try:
            for n in ns:
                print("\n".join(render(n, measure(server, workdir, n, args.reps))), flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
