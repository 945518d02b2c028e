#!/usr/bin/env python3
"""The cost of ``check_evidence`` on a big run, next to a one-pass scan of the same text.

    python bench/perf_evidence.py [--reps 21] [--turns 50] [--kb 20]

The run: one question, then ``--turns`` read_file calls whose results are ``--kb`` KB each
of realistic project files (pretty JSON reports with Chinese names, CSV exports, Chinese and
English log/notes text), 1 MB in all by default; the answer has 10 figures found in them
(date, counts, money with separators and units, a percentage, an identifier, a quoted
name, a Chinese numeral, a scaled figure). Printed, each the median of ``--reps`` runs:

- ``check_evidence`` with every figure supported (the common case);
- the same with two figures that no result holds (each costs the slower search for other
  scripts, rounded values and the nearest value);
- the same-run references: one ``re.finditer(r"\\d+")`` pass over the same outputs (what
  extracting every number of the tool output would cost at least) and one ``str.find`` pass
  (what each rendering of a figure looked for costs);
- the check on the README's daily-report run (two small results), for scale;
- the worst cases (``WORST``), each checked once: an answer of 100 unsupported figures of
  one kind (dates, English dates, dates without a year, numbers, identifiers, quotes) over 4 MB
  of results; a 1 MB answer of figures; results of a million digits; deeply nested JSON; a
  quote that pieces quoted in the results could almost make (``derived``). Bound: 1 s each,
  whatever the answer and the results hold (figures past the check's budget are reported
  unexamined: ``Evidence.unchecked_from``);
- the first three again in CPU time of this process (``time.process_time``): on a loaded
  machine the wall-clock medians of the check, which runs for several scheduler slices, grow
  more than that of a single pass;
- the import cost of ``minipi.evidence`` (``python -X importtime``, cumulative µs,
  median of 5 fresh processes with bytecode cached in a temporary ``PYTHONPYCACHEPREFIX``,
  as an installed package has it), its parent ``minipi.agent`` not included.

Bound: a check costs at most 1 s whatever the answer and the results hold (the worst cases);
the common case (10 figures over 1 MB) costs about 10 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from minipi.ai.types import FunctionCall, FunctionCallOutput, Item, Message
from minipi.evidence import Evidence, check_evidence

STORES = ["北京朝阳店", "上海浦东店", "广州天河店", "Shenzhen Nanshan", "杭州西湖店"]
WORDS = ["订单", "营收", "退款", "库存", "客流", "转化率", "环比", "同比", "门店", "复购"]
BOUND_MS = 1000.0


def _report(rng: random.Random, index: int) -> str:
    rows = [
        {
            "date": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "store": rng.choice(STORES),
            "sku": f"SKU-{rng.randint(1, 9999):04d}",
            "orders": rng.randint(0, 900),
            "revenue_yuan": round(rng.uniform(100, 30000), 2),
            "refund_rate": round(rng.uniform(0, 0.2), 4),
            "note": rng.choice(["正常", "促销", "缺货", "ok"]),
        }
        for _ in range(120)
    ]
    return json.dumps({"report": index, "rows": rows}, ensure_ascii=False, indent=2)


def _csv(rng: random.Random) -> str:
    lines = ["date,store,sku,orders,revenue_yuan"]
    for _ in range(500):
        lines.append(
            f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},{rng.choice(STORES)},"
            f"SKU-{rng.randint(1, 9999):04d},{rng.randint(0, 900)},{rng.randint(100, 30000)}"
        )
    return "\n".join(lines)


def _notes(rng: random.Random) -> str:
    lines = []
    for i in range(330):
        word = rng.choice(WORDS)
        lines.append(
            f"{i}. {rng.choice(STORES)} 2026年{rng.randint(1, 12)}月{rng.randint(1, 28)}日 "
            f"{word} {rng.randint(1, 900)} 笔，金额 {rng.randint(1000, 30000):,} 元，"
            f"环比 +{rng.randint(1, 30)}.{rng.randint(0, 9)}%。 Checked at "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} by ops."
        )
    return "\n".join(lines)


def _cut(text: str, size: int) -> str:
    """At most ``size`` bytes of UTF-8, cut at a character."""
    return text.encode()[:size].decode(errors="ignore")


def build_run(turns: int, kb: int) -> tuple[list[Item], int]:
    """The items of one run and its total output size in UTF-8 bytes."""
    rng = random.Random(7)
    makers: list[Callable[[], str]] = [
        lambda: _report(rng, rng.randint(1, 99)),
        lambda: _csv(rng),
        lambda: _notes(rng),
    ]
    items: list[Item] = [Message("user", "汇总一下 reports 里 9 月 6 日朝阳店的订单和营收。")]
    total = 0
    for turn in range(turns - 1):
        text = _cut(makers[turn % 3](), kb * 1000)
        items.append(FunctionCall(f"call_{turn}", "read_file", json.dumps({"path": f"r/{turn}"})))
        items.append(FunctionCallOutput(f"call_{turn}", text))
        total += len(text.encode())
    last = json.dumps(
        {
            "date": "2026-09-06",
            "store": "北京朝阳店",
            "sku": "SKU-7731",
            "orders": 1287,
            "visitors": 20000,
            "revenue_yuan": 96345.5,
            "refund_rate": 0.0425,
            "returns": 63,
            "opened_at": "10:30",
            "note": "促销日",
        },
        ensure_ascii=False,
        indent=2,
    )
    items.append(FunctionCall("call_last", "read_file", '{"path": "r/daily-2026-09-06.json"}'))
    items.append(FunctionCallOutput("call_last", last))
    return items, total + len(last.encode())


ANSWER = (
    "2026年9月6日，「北京朝阳店」（SKU-7731）订单数为 1,287 单，营收 96,345.5 元（约 9.6万），"
    "退款率 4.25%，退货 63 件，客流两万人次，10:30 开门。"
)
WRONG = ANSWER + "另有 7,654,321 单待发货，库存 48,213 件。"  # in no read (1,356 is a CSV cell)


def median_ms(
    function: Callable[[], object], reps: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    times = []
    for _ in range(reps):
        start = clock()
        function()
        times.append(clock() - start)
    return statistics.median(times) * 1000


def _reads(texts: list[str]) -> list[Item]:
    items: list[Item] = [Message("user", "多少？")]
    for index, text in enumerate(texts):
        call = FunctionCall(f"c{index}", "read_file", json.dumps({"path": f"f{index}"}))
        items += [call, FunctionCallOutput(f"c{index}", text)]
    return items


def _big() -> list[Item]:
    return build_run(200, 20)[0]  # 4 MB


def _other_digits(items: list[Item]) -> list[Item]:
    """The same run, its results written in Arabic-Indic digits with zero-width characters
    after every comma: each output is read a second time, in the usual forms."""
    table = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
    return [
        FunctionCallOutput(i.call_id, i.output.translate(table).replace(",", ",\u200b"))
        if isinstance(i, FunctionCallOutput)
        else i
        for i in items
    ]


def _joined(figures: list[str]) -> str:
    return "，".join(figures)


_NUMBERS = [f"{31337 + i * 7919}.{i % 9 + 1} 元" for i in range(100)]
WORST: dict[str, Callable[[], tuple[str, list[Item]]]] = {
    "100 unsupported dates, 4 MB": lambda: (
        _joined([f"{1930 + i}年{i % 12 + 1}月{i % 27 + 1}日" for i in range(100)]),
        _big(),
    ),
    "100 unsupported English dates, 4 MB": lambda: (
        "; ".join(f"March {i % 27 + 1}, {1930 + i}" for i in range(100)),
        _big(),
    ),
    "100 English dates, 4 MB naming months": lambda: (
        "; ".join(f"March {i % 27 + 1}, {1930 + i}" for i in range(100)),
        _reads(
            ["".join(f"In March {1930 + i % 100}: 3 March, mar. 12; " for i in range(30_000))] * 4
        ),
    ),
    "100 times, 4 MB of 点 and 时": lambda: (
        _joined([f"{i % 24}:{i % 60:02d}" for i in range(100)]),
        _reads(["下午3点，到时候 11点半 一点 " * 50_000] * 4),
    ),
    "100 dates without a year, 4 MB": lambda: (
        _joined([f"{i % 12 + 1}月{29 + i % 3}日" for i in range(100)]),
        _big(),
    ),
    "100 unsupported numbers, 4 MB": lambda: (_joined(_NUMBERS), _big()),
    "100 unsupported numbers, 4 MB in Arabic-Indic and zero-width": lambda: (
        _joined(_NUMBERS),
        _other_digits(_big()),
    ),
    "100 unsupported identifiers, 4 MB": lambda: (
        _joined([f"ZQ-{i}X{i}" for i in range(100)]),
        _big(),
    ),
    "100 unsupported quotes, 4 MB": lambda: (
        _joined([f"'Zorblax{i} quux'" for i in range(100)]),
        _big(),
    ),
    "a 1 MB answer of figures, 4 MB": lambda: (
        ("订单 1,356 单，2026年9月7日 SKU-9999 “Foo” 12.5% 约9.6万；" * 20_000)[:1_000_000],
        _big(),
    ),
    "100 numbers, 4 results of 1M digits": lambda: (
        _joined(_NUMBERS),
        _reads(["".join(str(i * 7 % 10) for i in range(1_000_000))] * 4),
    ),
    "100 numbers, 4 results of 1,2,3,...": lambda: (
        _joined(_NUMBERS),
        _reads([",".join(str(i * 7 % 10) for i in range(500_000))] * 4),
    ),
    "a figure in JSON nested 100,000 deep": lambda: (
        "12345 与 12345.0",
        _reads(
            ["[" * 100_000 + "12345" + "]" * 100_000, '{"a":' * 50_000 + "12345" + "}" * 50_000]
        ),
    ),
    "a quote almost derived from 5,000 pieces": lambda: ("'AAAAX'", _reads(["'A' " * 5_000])),
    "100 unsupported paths, 4 MB": lambda: (
        _joined([f"reports/zq{i}/missing-{i}.json" for i in range(100)]),
        _big(),
    ),
    "100 paths glued to Chinese, 4 MB": lambda: (
        _joined([f"档案文件夹里的资料{i}号备份.txt" for i in range(100)]),
        _big(),
    ),
    "50 numbers split by zero-width, 50 in Arabic-Indic digits, 4 MB": lambda: (
        _joined([f"{31337 + i}".replace("3", "3\u200b", 1) + " 元，٩٦٠٠٧" for i in range(50)]),
        _big(),
    ),
    "50 financial and 50 〇 numerals, 4 MB": lambda: (
        _joined(
            [
                "玖仟陆佰零" + "壹贰叁肆伍陆柒捌玖"[i % 9] + "元，九六〇" + str(i % 9)
                for i in range(50)
            ]
        ),
        _big(),
    ),
    "100 claimed changes, 4 MB": lambda: (
        "。".join(f"已把 f{i}.txt 移到 archive/ 并删除了 g{i}.txt" for i in range(100)),
        _big(),
    ),
    "an MCP-like result echoing its argument 1M times": lambda: (
        "营收 9600 元",
        [
            Message("user", "q"),
            FunctionCall("c", "lookup", json.dumps({"q": "96", "r": "9600"})),
            FunctionCallOutput("c", "96 9600 " * 500_000),
        ],
    ),
}
"""The worst cases we could build: what each costs must stay within ``BOUND_MS``."""


def worst_cases(only: str | None = None) -> None:
    for name, build in WORST.items():
        if only and only not in name:
            continue
        answer, items = build()
        started = time.perf_counter()
        evidence: Evidence = check_evidence(answer, items)
        spent = (time.perf_counter() - started) * 1000
        note = f"{len(evidence.claims)} claims, {evidence.unsupported} unsupported"
        if evidence.unchecked_from is not None:
            note += f", unexamined from {evidence.unchecked_from}"
        _row(name, spent, note=note + ("" if spent <= BOUND_MS else "  OVER THE BOUND"))


def import_cost_us() -> int:
    """Median cumulative microseconds of ``import minipi.evidence`` in fresh processes."""
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        code = "import minipi.agent; import minipi.evidence"  # the parent's cost apart
        command = [sys.executable, "-X", "importtime", "-c", code]
        subprocess.run(command, capture_output=True, check=True, env=env)  # fills the cache
        costs = [
            _evidence_line(
                subprocess.run(command, capture_output=True, text=True, check=True, env=env).stderr
            )
            for _ in range(5)
        ]
    return int(statistics.median(costs))


def _evidence_line(stderr: str) -> int:
    for line in stderr.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) == 3 and fields[2] == "minipi.evidence":
            return int(fields[1])
    raise RuntimeError("minipi.evidence not in the -X importtime output")


def _row(label: str, value: float, unit: str = "ms", note: str = "") -> None:
    print(f"{label:<46} {value:9.2f} {unit}  {note}".rstrip())


def _daily_run() -> list[Item]:
    """The README's daily-report run, as small as runs usually are."""
    report = '{\n  "date": "2026-09-06",\n  "orders": 128,\n  "revenue_yuan": 9600\n}\n'
    return [
        Message("user", "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"),
        FunctionCall("call_1", "list_files", '{"path": "reports"}'),
        FunctionCallOutput("call_1", "reports/daily-2026-09-06.json"),
        FunctionCall("call_2", "read_file", '{"path": "reports/daily-2026-09-06.json"}'),
        FunctionCallOutput("call_2", report),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--kb", type=int, default=20)
    parser.add_argument("--worst", default=None, help="only the worst cases whose name has this")
    args = parser.parse_args()
    if args.worst is not None:
        worst_cases(args.worst)
        return
    items, size = build_run(args.turns, args.kb)
    outputs = [i.output for i in items if isinstance(i, FunctionCallOutput)]
    digits = re.compile(r"\d+")
    evidence = check_evidence(ANSWER, items)
    wrong = check_evidence(WRONG, items)
    daily = _daily_run()
    daily_answer = "这份日报的日期是2026年9月6日，订单数为128，营收为9600元。"
    ok_ms = median_ms(lambda: check_evidence(ANSWER, items), args.reps)
    wrong_ms = median_ms(lambda: check_evidence(WRONG, items), args.reps)
    cpu = time.process_time  # not counting time other processes took the CPU from this one
    ok_cpu = median_ms(lambda: check_evidence(ANSWER, items), args.reps, cpu)
    wrong_cpu = median_ms(lambda: check_evidence(WRONG, items), args.reps, cpu)
    find_cpu = median_ms(lambda: [t.find("SKU-7731") for t in outputs], args.reps, cpu)
    scan_ms = median_ms(lambda: [sum(1 for _ in digits.finditer(t)) for t in outputs], args.reps)
    find_ms = median_ms(lambda: [t.find("SKU-7731") for t in outputs], args.reps)
    daily_ms = median_ms(lambda: check_evidence(daily_answer, daily), args.reps)
    chars = sum(len(t) for t in outputs)
    print(f"run: {len(outputs)} tool results, {size / 1e6:.2f} MB ({chars / 1e6:.2f} M characters)")
    print(
        f"reps {args.reps} (medians), load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs"
    )
    print(f"claims: {[(c.claim.text, c.status) for c in evidence.claims]}")
    _row("check_evidence, 10 figures, all supported", ok_ms, note="the common case")
    _row("check_evidence, the same and 2 unsupported", wrong_ms)
    _row('reference: one re.finditer(r"\\d+") pass', scan_ms)
    _row("reference: one str.find pass", find_ms)
    _row("all supported / finditer pass", ok_ms / scan_ms, "x")
    _row("all supported / str.find pass", ok_ms / find_ms, "x")
    _row("CPU time: all supported", ok_cpu, note="process time, for a loaded machine")
    _row("CPU time: the same and 2 unsupported", wrong_cpu)
    _row("CPU time: one str.find pass", find_cpu)
    _row("CPU time: all supported / str.find pass", ok_cpu / find_cpu, "x")
    _row("check_evidence, the daily report (2 results)", daily_ms * 1000, "us")
    counts = f"{evidence.supported}/{len(evidence.claims)} supported"
    print(f"answer: {counts}; with the 2 wrong figures: {wrong.unsupported} unsupported")
    _row("import minipi.evidence (cumulative)", import_cost_us() / 1000)
    print(f"worst cases (each once; bound {BOUND_MS:.0f} ms):")
    worst_cases()


if __name__ == "__main__":
    main()
