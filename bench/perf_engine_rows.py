"""The local engine's rows of ``perf.py``'s table and its per-turn lines (``perf_engine.py``)."""

from __future__ import annotations

from typing import Any

from perf_report import Row, med, verdict

CACHE_SHARE = 0.90
TTFT_SLACK = 1.5  # TTFT may grow 1.5x the new tokens' growth (attention over a longer context)


def engine_turns(engine: dict[str, Any]) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Per turn, the median over conversations of each figure; and the cold re-run's."""
    reps = engine["reps"]
    keys = ("prompt", "cached", "evaluated", "request_s", "decode_s", "ttft_s")
    count = min(len(rep["turns"]) for rep in reps)
    turns = [
        {"turn": k + 1, **{key: med(rep["turns"][k][key] for rep in reps) for key in keys}}
        for k in range(count)
    ]
    cold = {key: med(rep["cold"][key] for rep in reps) for key in keys}
    return turns, cold


def engine_modes(engine: dict[str, Any] | str) -> dict[str, dict[str, Any] | str]:
    """Per mode (native, guided), the probe's figures or why there are none."""
    if isinstance(engine, str):
        return {"native": engine}
    modes: dict[str, dict[str, Any] | str] = engine["modes"]
    return modes


def engine_rows(engine: dict[str, Any] | str) -> list[Row]:
    rows = []
    for mode, data in engine_modes(engine).items():
        if isinstance(data, str) or len(data["reps"][0]["turns"]) < 3:
            why = data if isinstance(data, str) else "too few turns"
            rows.append(Row(f"engine cache share ({mode})", why, "-", "-", "-", "n/a"))
        else:
            rows += mode_rows(mode, data)
    return rows


def mode_rows(mode: str, data: dict[str, Any]) -> list[Row]:
    turns, cold = engine_turns(data)
    later = turns[1:]
    share = [t["cached"] / t["prompt"] for t in later]
    ideal = [prev["prompt"] / t["prompt"] for prev, t in zip(turns, later, strict=False)]
    worst = min(range(len(later)), key=share.__getitem__)
    rows = [
        Row(
            f"engine cache share ({mode}), turns 2-{len(turns)}: min (turn {worst + 2})",
            f"{share[worst]:.1%} (last turn {share[-1]:.1%})",
            f"≥ {CACHE_SHARE:.0%}",
            f"{ideal[worst]:.1%} = turn {worst + 1}'s whole prompt",
            f"{share[worst] / ideal[worst]:.2f}×",
            verdict(share[worst] >= CACHE_SHARE),
        )
    ]
    window = max(1, len(later) // 3)  # medians of the first and last turns: the host is noisy
    early, late = later[:window], later[-window:]
    ttft_early, ttft_late = med(t["ttft_s"] for t in early), med(t["ttft_s"] for t in late)
    grew = ttft_late / ttft_early
    new_tokens = max(1.0, med(t["evaluated"] for t in late) / med(t["evaluated"] for t in early))
    cold_grew = cold["ttft_s"] / ttft_early
    span = _turns(early) + " → " + _turns(late)
    rows.append(
        Row(
            f"engine TTFT growth ({mode}), turn {span}",
            f"×{grew:.2f} ({ttft_early:.2f} → {ttft_late:.2f} s)",
            f"≤ ×{TTFT_SLACK * new_tokens:.2f} ({TTFT_SLACK}× new tokens ×{new_tokens:.2f})",
            f"×{cold_grew:.2f} cold ({cold['ttft_s']:.2f} s, no cache)",
            f"{grew / cold_grew:.2f}×",
            verdict(grew <= TTFT_SLACK * new_tokens),
        )
    )
    return rows


def _turns(turns: list[dict[str, float]]) -> str:
    first, last = int(turns[0]["turn"]), int(turns[-1]["turn"])
    return str(first) if first == last else f"{first}-{last}"


def engine_lines(engine: dict[str, Any] | str) -> list[str]:
    """The per-turn figures of the engine probe (medians over its conversations)."""
    lines = []
    for mode, data in engine_modes(engine).items():
        if isinstance(data, str):
            lines += [f"local engine ({mode}): {data}", ""]
            continue
        turns, cold = engine_turns(data)
        lines += [
            f"local engine, {mode} mode (llama_cpp.server + SmolLM2-135M, minipi chat client), "
            f"median of {len(data['reps'])} conversation(s):",
            "turn | prompt tok | cached | evaluated | cache % | request s | TTFT s",
            *[_turn_line(f"{t['turn']:.0f}", t) for t in turns],
            _turn_line("cold", cold),
        ]
        if data.get("patched_null_content"):
            lines.append(
                f"(the driver replayed {data['patched_null_content']} assistant tool-call "
                'messages with content "" instead of null: llama-cpp-python\'s server '
                "answers HTTP 500 to its own null content)"
            )
        lines.append("")
    if not isinstance(engine, str):
        lines += [
            "(TTFT = request s − the engine's decode time (llama_perf_context_print eval "
            "time), so it holds the prefill plus HTTP, templating and sampling; 'cold' = the "
            "last turn sent again after another prompt evicted the cache; engine log: "
            f"{engine['log']})",
            "",
        ]
    return lines


def _turn_line(label: str, t: dict[str, float]) -> str:
    share = t["cached"] / t["prompt"] if t["prompt"] else 0.0
    return (
        f"{label:>4} | {t['prompt']:10.0f} | {t['cached']:6.0f} | {t['evaluated']:9.0f} | "
        f"{share:7.1%} | {t['request_s']:9.3f} | {t['ttft_s']:6.3f}"
    )
