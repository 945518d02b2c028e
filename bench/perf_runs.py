"""Process-level measurements for ``perf.py`` (stdlib only): the fake server, chain runs, start-up.

Every measured process is started fresh; its wall time is our clock around the whole process.
Peak RSS comes from GNU time (``/usr/bin/time -f %M``, as the peers harness does), not from
``os.wait4`` / ``RUSAGE_CHILDREN`` of this process: Linux starts a child's ``ru_maxrss`` at
its parent's RSS (the fork/vfork copy of our memory is still counted at ``exec``), so any
child of this ~20 MB Python process would report at least ~20 MB. Without GNU time the
``wait4`` figure is used and flagged as an upper bound.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

IMPORT_TIMER = (
    "import time as _t\n_t0 = _t.perf_counter()\n{stmt}\n"
    "import sys as _s\n_s.stdout.write(repr(_t.perf_counter() - _t0))\n"
)
"""The peers harness's import timing: perf_counter around the import, in a fresh interpreter."""

COMPACT_SHIM = (
    "import functools, json, runpy, sys\n"
    "json.dumps = functools.partial(json.dumps, separators=(',', ':'))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
"""Runs the stdlib loop unchanged except for compact JSON separators (minipi's encoding), so
its request bytes are comparable byte for byte."""


GNU_TIME = shutil.which("time", path="/usr/bin:/bin")
RSS_EXACT = GNU_TIME is not None
"""False: peak RSS figures are wait4's upper bound (see the module docstring)."""


@dataclass(frozen=True)
class Proc:
    wall: float
    rss_mb: float
    cpu: float
    """User + system CPU seconds of the process and its children (``wait4``)."""
    returncode: int
    out: str
    err: str


def run_process(
    command: Sequence[str], cwd: str, timeout: float = 600.0, rss: bool = False
) -> Proc:
    """Run ``command`` to completion; its wall time, peak RSS, exit code and output.

    With ``rss`` (and GNU time installed) the command runs under ``time -f %M``: one more
    small process, so only chain runs use it, never start-up timings.
    """
    rss_file = os.path.join(cwd, "peak-rss.txt")
    if rss and GNU_TIME is not None:
        command = [GNU_TIME, "-f", "%M", "-o", rss_file, *command]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(command), stdout=out, stderr=err, cwd=cwd, start_new_session=True
        )  # a group of its own: kill all on timeout
        timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        peak_kb = float(usage.ru_maxrss)
        if rss and GNU_TIME is not None:
            with open(rss_file) as f:
                peak_kb = float(f.read().split()[-1])
        return Proc(
            wall,
            peak_kb / 1024,
            usage.ru_utime + usage.ru_stime,
            proc.returncode,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )


def rotate(values: Sequence[T], k: int) -> list[T]:
    k %= max(1, len(values))
    return [*values[k:], *values[:k]]


class FakeServer:
    """The peers harness's ``fake_openai_server.py``, on a free 127.0.0.1 port."""

    def __init__(self, script: Path, tmp: str) -> None:
        port_file = os.path.join(tmp, "fake-server.port")
        command = [sys.executable, str(script), "--port", "0", "--port-file", port_file, "--n", "3"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"perf: the fake server ({script}) did not start")
            time.sleep(0.02)
        with open(port_file) as f:
            self.root = f"http://127.0.0.1:{int(f.read())}"
        self.base_url = self.root + "/v1"

    def call(self, path: str, method: str = "GET") -> dict[str, Any]:
        data = b"" if method == "POST" else None
        request = urllib.request.Request(self.root + path, method=method, data=data)
        with urllib.request.urlopen(request, timeout=30) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def make_workdir(tmp: str, n: int) -> str:
    """The harness's step files (``run_bench.make_workdir``), step1.txt … stepN.txt."""
    workdir = os.path.join(tmp, "work")
    os.makedirs(workdir, exist_ok=True)
    for i in range(1, n + 1):
        with open(os.path.join(workdir, f"step{i}.txt"), "w") as f:
            f.write(
                f"STEPTOKEN-{i}- contents of step {i}: the quick brown fox jumps over "
                "the lazy dog.\n"
            )
    return workdir


@dataclass(frozen=True)
class ChainRun:
    """One run of the harness's chain task by one runner: process figures and server stats."""

    runner: str
    n: int
    rep: int
    wall: float
    rss_mb: float
    cpu: float
    ok: bool
    why: str
    stats: dict[str, Any]


class Chains:
    """Runs runners (command prefixes) on the chain task against one fake server."""

    def __init__(self, server: FakeServer, workdir: str, cwd: str) -> None:
        self.server = server
        self.workdir = workdir
        self.cwd = cwd

    def run(self, name: str, command: Sequence[str], n: int, rep: int) -> ChainRun:
        self.server.call("/reset", "POST")
        args = ["--base-url", self.server.base_url, "--workdir", self.workdir, "--n", str(n)]
        proc = run_process([*command, *args], self.cwd, rss=True)
        stats = self.server.call("/stats")
        lines = [line.strip() for line in proc.out.splitlines() if line.strip()]
        answer = lines[-1] if lines else ""
        ok = (
            proc.returncode == 0
            and answer == "done"
            and stats["max_k_tok"] == n
            and stats["requests"] >= n + 1
        )
        why = (
            ""
            if ok
            else (
                f"rc={proc.returncode} answer={answer[:60]!r} requests="
                f"{stats['requests']} max_k_tok={stats['max_k_tok']} "
                f"stderr={proc.err[-400:]!r}"
            )
        )
        return ChainRun(name, n, rep, proc.wall, proc.rss_mb, proc.cpu, ok, why, stats)


def chain_section(
    chains: Chains,
    runners: dict[str, list[str]],
    ns: Sequence[int],
    reps: int,
    say: Callable[[str], None],
) -> list[ChainRun]:
    """A warm-up run per runner, then ``reps`` rounds of every (N, runner), order rotated."""
    for name, command in runners.items():
        warm = chains.run(name, command, min(ns), -1)
        if not warm.ok:
            raise SystemExit(f"perf: runner {name} failed its warm-up run: {warm.why}")
    runs: list[ChainRun] = []
    for rep in range(reps):
        for i, n in enumerate(rotate(ns, rep)):
            for name in rotate(list(runners), rep + i):
                run = chains.run(name, runners[name], n, rep)
                runs.append(run)
                flag = "" if run.ok else f"  FAILED {run.why}"
                say(
                    f"rep {rep} N={n:<4} {name:<8} wall {run.wall:6.3f} s  rss "
                    f"{run.rss_mb:5.1f} MB  bytes {run.stats['total_bytes']}{flag}"
                )
    return runs


def startup_section(
    walls: dict[str, list[str]], imports: dict[str, list[str]], count: int, cwd: str
) -> dict[str, list[float]]:
    """``count`` fresh processes per probe, probes rotated each round, after one untimed round:
    wall time of each ``walls`` command; the in-process figure each ``imports`` command prints."""
    samples: dict[str, list[float]] = {name: [] for name in [*walls, *imports]}
    for command in [*walls.values(), *imports.values()]:
        run_process(command, cwd)  # warm-up: page cache, bytecode
    for i in range(count):
        for name in rotate(list(samples), i):
            proc = run_process(walls.get(name) or imports[name], cwd)
            if proc.returncode != 0:
                raise SystemExit(f"perf: start-up probe {name} failed: {proc.err[-400:]}")
            samples[name].append(proc.wall if name in walls else float(proc.out))
    return samples


def probe_json(command: Sequence[str], cwd: str, timeout: float = 1800.0) -> dict[str, Any]:
    """Run a probe script that prints one JSON object as its last stdout line."""
    proc = run_process(command, cwd, timeout)
    lines = proc.out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"{Path(command[1]).name} failed (rc={proc.returncode}): {proc.err[-600:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result
