"""The table ``perf.py`` prints: one row per figure, its target, the stdlib reference, PASS/MISS.

``ratio`` is always figure ÷ reference; the per-turn ratio is the median over reps of the
ratio paired within each rep (runs alternated), as the peers harness computes it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perf_runs import RSS_EXACT, ChainRun

TURN_RATIO = 1.5  # per-turn overhead vs the stdlib loop
HELP_S = 0.25
IMPORT_S = 0.10
RSS_MB = 35.0
TOOLS_S = 0.30


@dataclass(frozen=True)
class Row:
    figure: str
    value: str
    target: str
    reference: str
    ratio: str
    verdict: str


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def med(values: Iterable[float]) -> float:
    data = list(values)
    return float(statistics.median(data)) if data else float("nan")


def by_rep(runs: Sequence[ChainRun], runner: str, n: int) -> dict[int, ChainRun]:
    return {r.rep: r for r in runs if r.runner == runner and r.n == n and r.ok}


def growth(run: ChainRun) -> float:
    last, first = int(run.stats["last_bytes"]), int(run.stats["first_bytes"])
    return (last - first) / run.n


def build_rows(
    runs: Sequence[ChainRun],
    compact: Sequence[ChainRun],
    startup: dict[str, list[float]],
    tools: dict[int, list[dict[str, Any]]],
    ns: Sequence[int],
) -> list[Row]:
    return [
        *loop_rows(runs, ns),
        *startup_rows(startup),
        *rss_rows(runs, max(ns)),
        *byte_rows(runs, compact),
        *tool_rows(tools),
    ]


# ---------------------------------------------------------------- 1. per-turn overhead
RUNNERS = (
    ("library", "library API"),
    ("cli", "`minipi ask --no-stream`"),
    ("cli-stream", "`minipi ask` streamed (SSE)"),
)
"""``cli`` is judged like for like (the stdlib loop does not stream); ``cli-stream`` is the
default CLI, whose replies arrive as server-sent events: shown, not judged."""


def wall_s(run: ChainRun) -> float:
    """The whole process, by our clock (the harness's definition)."""
    return run.wall


def loop_s(run: ChainRun) -> float:
    """The server's clock from the first request's arrival to the last reply: no start-up
    or exit, so much less noise from the host."""
    return float(run.stats["last_t_end"]) - float(run.stats["first_t_start"])


def cpu_s(run: ChainRun) -> float:
    """The client's user + system CPU (the server's work is not in it)."""
    return run.cpu


CLOCKS: dict[str, Callable[[ChainRun], float]] = {
    "whole process": wall_s,
    "server clock": loop_s,
    "client CPU": cpu_s,
}


def per_turn_ms(
    runs: Sequence[ChainRun], runner: str, lo: int, hi: int, clock: Callable[[ChainRun], float]
) -> dict[int, float]:
    low, high = by_rep(runs, runner, lo), by_rep(runs, runner, hi)
    return {
        rep: 1000 * (clock(high[rep]) - clock(low[rep])) / (hi - lo) for rep in high if rep in low
    }


def spread(values: Iterable[float]) -> str:
    data = list(values)
    return f"{min(data):.2f}-{max(data):.2f}" if data else "n/a"


def per_turn_row(
    runs: Sequence[ChainRun], runner: str, label: str, ns: Sequence[int], name: str
) -> Row:
    lo, hi = min(ns), max(ns)
    clock, judged = CLOCKS[name], name == "whole process" and runner != "cli-stream"
    base = per_turn_ms(runs, "stdlib", lo, hi, clock)
    ours = per_turn_ms(runs, runner, lo, hi, clock)
    ratios = [ours[rep] / base[rep] for rep in ours if base.get(rep, 0) > 0]
    ratio = med(ratios)
    return Row(
        f"per-turn overhead N={hi}, {label} ({name})",
        f"{med(ours.values()):.2f} ms (reps {spread(ours.values())})",
        f"≤ {TURN_RATIO}× stdlib" if judged else "-",
        f"{med(base.values()):.2f} ms (reps {spread(base.values())})",
        f"{ratio:.2f}× ({spread(ratios)})",
        verdict(ratio <= TURN_RATIO) if judged else "info",
    )


def loop_rows(runs: Sequence[ChainRun], ns: Sequence[int]) -> list[Row]:
    hi = max(ns)
    rows = [
        per_turn_row(runs, runner, label, ns, name) for name in CLOCKS for runner, label in RUNNERS
    ]
    base_wall = med(r.wall for r in by_rep(runs, "stdlib", hi).values())
    for runner, label in RUNNERS:
        wall = med(r.wall for r in by_rep(runs, runner, hi).values())
        rows.append(
            Row(
                f"whole run N={hi} wall, {label}",
                f"{wall:.3f} s",
                "-",
                f"{base_wall:.3f} s",
                f"{wall / base_wall:.2f}×",
                "info",
            )
        )
    return rows


# ---------------------------------------------------------------- 2. start-up
def startup_rows(s: dict[str, list[float]]) -> list[Row]:
    ref_help = med(s["stdlib_help"])
    rows = []
    for name in ("help", "version"):
        value = med(s[name])
        rows.append(
            Row(
                f"`minipi --{name}` wall (median of {len(s[name])})",
                f"{value:.3f} s",
                f"≤ {HELP_S} s",
                f"{ref_help:.3f} s (stdlib loop --help)",
                f"{value / ref_help:.2f}×",
                verdict(value <= HELP_S),
            )
        )
    inside, ref_inside = med(s["import"]), med(s["stdlib_import"])
    rows.append(
        Row(
            "`import minipi`, in-process perf_counter",
            f"{inside:.3f} s",
            f"≤ {IMPORT_S} s",
            f"{ref_inside:.3f} s (import http.client, json)",
            f"{inside / ref_inside:.1f}×",
            verdict(inside <= IMPORT_S),
        )
    )
    extra = med(a - b for a, b in zip(s["import_wall"], s["pass_wall"], strict=True))
    wall, bare = med(s["import_wall"]), med(s["pass_wall"])
    rows.append(
        Row(
            "`python -c 'import minipi'` wall − `-c pass`",
            f"{extra:.3f} s ({wall:.3f} − {bare:.3f})",
            f"≤ {IMPORT_S} s",
            f"{bare:.3f} s (python -c pass)",
            f"{wall / bare:.1f}×",
            verdict(extra <= IMPORT_S),
        )
    )
    return rows


# ---------------------------------------------------------------- 3. memory
def rss_rows(runs: Sequence[ChainRun], n: int) -> list[Row]:
    base = med(r.rss_mb for r in by_rep(runs, "stdlib", n).values())
    rows = []
    for runner, label, target in (
        ("library", "library API", True),
        ("cli", "`minipi ask --no-stream`", False),
    ):
        rss = med(r.rss_mb for r in by_rep(runs, runner, n).values())
        bound = "" if RSS_EXACT else " (upper bound: no GNU time)"
        rows.append(
            Row(
                f"peak RSS N={n}, {label}",
                f"{rss:.1f} MB{bound}",
                f"≤ {RSS_MB:g} MB" if target else "-",
                f"{base:.1f} MB",
                f"{rss / base:.2f}×",
                verdict(rss <= RSS_MB) if target else "info",
            )
        )
    return rows


# ---------------------------------------------------------------- 4. bytes on the wire
def byte_rows(runs: Sequence[ChainRun], compact: Sequence[ChainRun]) -> list[Row]:
    rows = []
    for packed in compact:
        n = packed.n
        ours = next(iter(by_rep(runs, "library", n).values()))
        base = next(iter(by_rep(runs, "stdlib", n).values()))
        o, b, c = ours.stats, base.stats, packed.stats
        rows.append(
            Row(
                f"request bytes N={n}, library: total / last",
                f"{o['total_bytes']:,} / {o['last_bytes']:,} B",
                "-",
                f"{b['total_bytes']:,} / {b['last_bytes']:,} B (compact "
                f"{c['total_bytes']:,} / {c['last_bytes']:,})",
                f"{o['total_bytes'] / b['total_bytes']:.3f}×",
                "info",
            )
        )
        mine, floor = growth(ours), growth(packed)
        rows.append(
            Row(
                f"request growth/turn N={n}, library",
                f"{mine:.1f} B",
                "≤ stdlib (compact JSON)",
                f"{floor:.1f} B (as is {growth(base):.1f})",
                f"{mine / floor:.3f}×",
                verdict(mine <= floor + 0.01),
            )
        )
    if compact:
        n = compact[0].n
        o = next(iter(by_rep(runs, "library", n).values())).stats
        c = compact[0].stats
        rows.append(
            Row(
                "first request, library",
                f"{o['first_bytes']:,} B",
                "-",
                f"{c['first_bytes']:,} B (compact)",
                f"{o['first_bytes'] / c['first_bytes']:.2f}×",
                "info",
            )
        )
    return rows


# ---------------------------------------------------------------- 5. parallel tools
def tool_rows(tools: dict[int, list[dict[str, Any]]]) -> list[Row]:
    rows = []
    for workers, results in tools.items():
        cold, warm = med(r["cold_s"] for r in results), med(r["warm_s"] for r in results)
        floor = med(r["stdlib_s"] for r in results)
        ordered = all(r["ordered"] for r in results)
        used = results[0]["workers"] if results else workers
        label = f"max_parallel_tools={used}" + (" (default)" if workers == 0 else "")
        rows.append(
            Row(
                f"8 × 200 ms tools, {label}",
                f"{cold:.3f} s (warm {warm:.3f}), order {'ok' if ordered else 'WRONG'}",
                f"≤ {TOOLS_S} s, model's order",
                f"{floor:.3f} s (ThreadPoolExecutor(8))",
                f"{cold / floor:.2f}×",
                verdict(cold <= TOOLS_S and ordered),
            )
        )
    return rows


# ---------------------------------------------------------------- table and notes
def render(rows: Sequence[Row]) -> str:
    head = Row("figure", "measured", "target", "reference (same run)", "ratio", "verdict")
    table = [head, *rows]
    widths = [max(len(getattr(r, f)) for r in table) for f in Row.__dataclass_fields__]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(list(vars(head).values())), line(["-" * w for w in widths])]
    out += [line(list(vars(r).values())) for r in rows]
    return "\n".join(out)


def notes(
    runs: Sequence[ChainRun],
    compact: Sequence[ChainRun],
    first: dict[str, Any],
    peers_dir: Path,
) -> list[str]:
    lines = [""]
    if compact:
        n = compact[-1].n
        base = next(iter(by_rep(runs, "stdlib", n).values()))
        lines.append(
            f"- bytes: the stdlib loop sends json.dumps' default separators (', ' ': '),"
            f" minipi compact ones: {growth(base) - growth(compact[-1]):.1f} B/turn. "
            "'compact' = the same stdlib loop run with compact separators; its growth "
            "per turn is the figure minipi must not exceed (no padding, no duplicated "
            'items). minipi replays an assistant tool-call message\'s `"content": null` as '
            '`""` (llama-cpp-python answers HTTP 500 to null): 2 B/turn less than the '
            "stdlib loop, which echoes null."
        )
    lines.append("- " + first_request_note(runs, first))
    lines.append("- " + peers_note(peers_dir))
    lines.append(
        "- ratio = measured ÷ reference; per-turn ratio = median over reps of the "
        "ratio paired within a rep (its range over reps in brackets); 'server clock' = "
        "the same difference of the fake server's first-request-to-last-reply time (no "
        "interpreter start or exit, less host noise); 'client CPU' = the same difference of "
        "the runner's user+system CPU seconds (no server time, least noise); tools: "
        "'cold' = first run in a fresh process (judged), 'warm' = second run."
    )
    return lines


def first_request_note(runs: Sequence[ChainRun], first: dict[str, Any]) -> str:
    ours, floor = first["minipi"], first["stdlib_compact"]
    deltas = []
    for key in [k for k in ours if k != "_total"]:
        delta = ours[key] - floor[key] if key in floor else ours[key] + 1  # + its comma
        deltas.append(f"{key} {delta:+d}")
    measured = [r.stats["first_bytes"] for r in by_rep(runs, "library", 50).values()]
    check = (
        "= the library's first request as the server measured it"
        if measured and measured[0] == ours["_total"]
        else f"server measured {measured[:1]}"
    )
    return (
        f"first request: library {ours['_total']} B ({check}) vs stdlib compact "
        f"{floor['_total']} B: {', '.join(deltas)} B. The tool declarations differ (minipi "
        f"{_declared(first['minipi_tool'])}; stdlib {_declared(first['stdlib_tool'])}); "
        "minipi always sends tool_choice and parallel_tool_calls. The history itself "
        "(messages) is byte-identical."
    )


def _declared(tools: list[dict[str, Any]]) -> str:
    """``name(param, …)`` of each declared tool, plus its schema's other keywords."""
    out = []
    for tool in tools:
        function = tool.get("function", tool)
        schema = function.get("parameters", {})
        params = ", ".join(schema.get("properties", {}))
        extra = sorted(set(schema) - {"type", "properties", "required"})
        out.append(
            f"{function.get('name')}({params})" + (f" + {', '.join(extra)}" if extra else "")
        )
    return "; ".join(out)


def peers_note(peers_dir: Path) -> str:
    path = peers_dir / "results.json"
    try:
        agg = json.loads(path.read_text())["agg"]
    except (OSError, ValueError, KeyError):
        return f"peers: no {path} (run the harness for the peers' figures)"
    figures = sorted(
        (row["per_turn_ms"], name)
        for name, row in agg.items()
        if row.get("per_turn_ms") is not None
    )
    listed = ", ".join(f"{name} {ms:.1f}" for ms, name in figures)
    return f"peers, per-turn ms from the harness's last run ({path}, not this run): {listed}"
