#!/usr/bin/env python3
"""What MCP support costs: start-up, per call, memory (figures and ratios).

    python bench/perf_mcp.py [--reps 5] [--calls 200] [--quick]

1. start-up: time from process start to the first model request of a run (a ScriptedModel
   behind the file tools, as ``minipi ask`` assembles them), without MCP and with one stdio
   server (target: <= 1 s added), fresh processes, alternated, medians. The server is either
   a stdlib MCP server (``FAST``, below: starts in ~20 ms, so the figure is minipi's and the
   SDK's) or the SDK toolbox of the tests (``tests/mcp_servers/toolbox.py``: a realistic
   Python server). Next to it: ``import mcp`` alone, and open-and-list with the SDK already
   imported, which shows how much of the server's boot the early spawn hides.
2. per call: ``AgentTool.execute`` round trips against the stdlib server, next to the floor
   (the same JSON-RPC lines over the same kind of pipes, with no SDK) and to the SDK's own
   async client (``mcp.Client`` over its ``stdio_client``, no minipi); overhead = minipi's
   round trip - the floor (target <= 5 ms), and minipi's share = minipi - SDK.
3. peak RSS (GNU ``time -f %M``) of the start-up processes, and the VmHWM of the launcher and
   of the server (read from /proc while the run holds them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TOOLBOX = REPO / "tests" / "mcp_servers" / "toolbox.py"

FAST = r"""
import json, sys, time
TOOLS = [{"name": "work", "description": "Take ms milliseconds.", "annotations":
          {"readOnlyHint": True}, "inputSchema": {"type": "object", "properties":
          {"ms": {"type": "number"}}, "required": ["ms"]}}]
def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fast", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        end = time.perf_counter() + params["arguments"]["ms"] / 1000
        while time.perf_counter() < end:
            pass
        return {"content": [{"type": "text", "text": "done"}], "isError": False}
    raise KeyError(method)
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    try:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
    except KeyError:
        reply = {"jsonrpc": "2.0", "id": request["id"],
                 "error": {"code": -32601, "message": "Method not found"}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""

# A run as `minipi ask` assembles it. Prints when the model got its first request, then the
# VmHWM (KiB) of the server's launcher and of the server, read while the run holds them.
RUN = r"""
import sys, time
from pathlib import Path
from minipi import AgentConfig, ProjectFiles, create_project_tools, run_agent
from minipi.ai.testing import ScriptedModel, reply_text

def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as status:
        return status.read().split("VmHWM:")[1].split()[0]

def held(mcp):
    launcher = next(iter(mcp._hub.links.values())).process.pid
    with open(f"/proc/{launcher}/task/{launcher}/children") as children:
        return [vm_hwm(launcher), *(vm_hwm(int(c)) for c in children.read().split())]

seen, memory = [], []
def first(request):
    seen.append(time.time())
    return reply_text("done")

mode, root = sys.argv[1], sys.argv[2]
with ProjectFiles(root) as files:
    tools = create_project_tools(files, lambda request: False)
    model = ScriptedModel([first])
    if mode == "none":
        run_agent(model, tools, AgentConfig(), "q")
    else:
        from minipi.mcp import McpConfig, McpServer, open_mcp_tools
        server = McpServer("s", command=sys.executable, args=tuple(sys.argv[3:]))
        with open_mcp_tools([server], McpConfig(log_dir=Path(root) / "logs")) as mcp:
            run_agent(model, [*tools, *mcp.tools], AgentConfig(), "q")
            memory = held(mcp)
print(seen[0], *memory)
"""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def median(values: list[float] | list[int]) -> float:
    return float(statistics.median(values))


def startup(reps: int, work: Path) -> list[tuple[str, float]]:
    """Seconds from process start to the first model request, peak RSS, and the launcher's
    and server's memory, per variant (medians over fresh processes, order rotated)."""
    variants = {
        "no MCP": ["none"],
        "stdlib server": ["mcp", str(work / "fast.py")],
        "SDK toolbox": ["mcp", str(TOOLBOX)],
    }
    runs: dict[str, list[tuple[float, int, list[int]]]] = {name: [] for name in variants}
    for rep in range(reps):
        for name, args in _rotated(list(variants.items()), rep):
            runs[name].append(_timed_run(args, work))
    rows = []
    for name, measured in runs.items():
        rows.append((f"start to first request, {name}", median([m[0] for m in measured])))
        rows.append((f"peak RSS KiB, minipi process, {name}", median([m[1] for m in measured])))
        if measured[0][2]:
            launcher, server = zip(*(m[2] for m in measured), strict=True)
            rows.append((f"VmHWM KiB, launcher, {name}", median(list(launcher))))
            rows.append((f"VmHWM KiB, server, {name}", median(list(server))))
    return rows


def _rotated(items: list[tuple[str, list[str]]], rep: int) -> list[tuple[str, list[str]]]:
    shift = rep % len(items)
    return items[shift:] + items[:shift]


def _timed_run(args: list[str], work: Path) -> tuple[float, int, list[int]]:
    timer = shutil.which("time") or "/usr/bin/time"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    started = time.time()
    done = subprocess.run(
        [timer, "-f", "%M", sys.executable, "-c", RUN, args[0], str(work), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    first, *memory = done.stdout.split()
    return float(first) - started, int(done.stderr.split()[-1]), [int(m) for m in memory]


# The client side alone: ``mcp.client.client`` without the package's ``__init__`` (which
# imports the server side too). It gains nothing today: the client imports
# ``mcp.server.runner``, and nearly all of the time is ``mcp_types`` (two protocol revisions
# of pydantic models), which both sides need.
CLIENT_ONLY = """
import importlib.util, sys, time, types
t = time.perf_counter()
spec = importlib.util.find_spec("mcp")
package = types.ModuleType("mcp")
package.__path__, package.__spec__ = list(spec.submodule_search_locations), spec
sys.modules["mcp"] = package
import mcp.client.client
print(time.perf_counter() - t)
"""


def imports(reps: int) -> list[tuple[str, float]]:
    """``import mcp`` in a fresh process, the client side alone, and ``import pydantic`` to
    calibrate the machine."""
    rows = []
    for name, module in (("mcp", "mcp"), ("mcp.client alone", None), ("pydantic", "pydantic")):
        code = CLIENT_ONLY
        if module is not None:
            code = f"import time; t = time.perf_counter(); import {module}; "
            code += "print(time.perf_counter() - t)"
        values = [
            float(subprocess.check_output([sys.executable, "-c", code], text=True))
            for _ in range(reps)
        ]
        rows.append((f"import {name}, fresh process", median(values)))
    return rows


def warm_open(reps: int) -> list[tuple[str, float]]:
    """Open-and-list with the SDK imported already: the server's own boot and handshake."""
    sys.path.insert(0, str(REPO / "src"))
    import mcp  # noqa: F401 - imported first on purpose

    from minipi.mcp import McpConfig, McpServer, open_mcp_tools

    rows = []
    with tempfile.TemporaryDirectory() as logs:
        config = McpConfig(log_dir=Path(logs))
        for name, script in (("SDK toolbox", TOOLBOX),):
            server = McpServer("s", command=sys.executable, args=(str(script),))
            values = []
            for _ in range(reps):
                started = time.perf_counter()
                with open_mcp_tools([server], config):
                    values.append(time.perf_counter() - started)
            rows.append((f"open and list, SDK already imported, {name}", median(values)))
    return rows


def per_call(calls: int, work: Path) -> list[tuple[str, float]]:
    fast = work / "fast.py"
    floor = _floor_round_trip(fast, calls)
    sdk = asyncio.run(_sdk_round_trip(fast, calls))
    ours = _minipi_round_trip(fast, calls)
    return [
        ("per call, floor (stdlib pipes, no SDK)", floor),
        ("per call, SDK async client", sdk),
        ("per call, minipi AgentTool.execute", ours),
        ("per-call overhead, minipi - floor", ours - floor),
        ("per-call share of minipi, minipi - SDK", ours - sdk),
    ]


def _floor_round_trip(fast: Path, calls: int) -> float:
    process = subprocess.Popen(
        [sys.executable, str(fast)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdin is not None
    assert process.stdout is not None
    params = {"name": "work", "arguments": {"ms": 0}}
    started = 0.0
    for n in range(calls + 10):
        if n == 10:
            started = time.perf_counter()
        request = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        json.loads(process.stdout.readline())
    seconds = (time.perf_counter() - started) / calls
    process.stdin.close()
    process.wait()
    return seconds


async def _sdk_round_trip(fast: Path, calls: int) -> float:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(fast)])
    async with Client(params, mode="legacy", cache=None) as client:
        for _ in range(10):
            await client.call_tool("work", {"ms": 0})
        started = time.perf_counter()
        for _ in range(calls):
            await client.call_tool("work", {"ms": 0})
        return (time.perf_counter() - started) / calls


def _minipi_round_trip(fast: Path, calls: int) -> float:
    from minipi.mcp import McpConfig, McpServer, open_mcp_tools

    server = McpServer("fast", command=sys.executable, args=(str(fast),), trust=True)
    with open_mcp_tools([server], McpConfig(log_dir=fast.parent / "logs")) as mcp:
        (tool,) = mcp.tools
        for _ in range(10):
            tool.execute({"ms": 0})
        started = time.perf_counter()
        for _ in range(calls):
            result = tool.execute({"ms": 0})
        assert result.content == "done", result
        return (time.perf_counter() - started) / calls


def render(rows: list[tuple[str, float]]) -> None:
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        if "KiB" in name:
            shown = f"{value:,.0f}"
        elif value < 0.1:
            shown = f"{value * 1000:.2f} ms"
        else:
            shown = f"{value:.3f} s"
        print(f"{name.ljust(width)}  {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="2 reps, 50 calls")
    options = parser.parse_args()
    reps, calls = (2, 50) if options.quick else (options.reps, options.calls)
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        (work / "fast.py").write_text(FAST, encoding="utf-8")
        say(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {reps} reps, {calls} calls")
        rows = imports(reps)
        say("start-up ...")
        rows += startup(reps, work)
        say("warm open ...")
        rows += warm_open(reps)
        say("per call ...")
        rows += per_call(calls, work)
    render(rows)
    summarize(dict(rows))


def summarize(added: dict[str, float]) -> None:
    """The targets: start-up added, per-call overhead, memory ratio."""
    base = added["start to first request, no MCP"]
    for name in ("stdlib server", "SDK toolbox"):
        extra = added[f"start to first request, {name}"] - base
        print(f"start-up added, {name}: {extra:.3f} s (target <= 1 s: {_verdict(extra <= 1)})")
    sdk = added["import mcp, fresh process"]
    own = added["start to first request, stdlib server"] - base - sdk
    print(f"  of which not the SDK's import (stdlib server): {own:.3f} s")
    serial = sdk + added["open and list, SDK already imported, SDK toolbox"]
    hidden = serial - (added["start to first request, SDK toolbox"] - base)
    print(f"  server boot hidden behind the SDK import (SDK toolbox): {hidden:.3f} s")
    overhead = added["per-call overhead, minipi - floor"]
    verdict = _verdict(overhead <= 0.005)
    print(f"per-call overhead: {overhead * 1000:.2f} ms (target <= 5 ms: {verdict})")
    for name in ("stdlib server", "SDK toolbox"):
        ratio = (
            added[f"peak RSS KiB, minipi process, {name}"]
            / added["peak RSS KiB, minipi process, no MCP"]
        )
        print(f"peak RSS of minipi with MCP ({name}) / without: {ratio:.2f}")


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


if __name__ == "__main__":
    main()
