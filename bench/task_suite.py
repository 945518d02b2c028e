#!/usr/bin/env python3
"""A generated task suite: templates with randomized values, names and layouts, split by seed.

    python bench/task_suite.py --out DIR [--split dev|heldout|fresh|all]

writes one project folder per task under DIR and ``DIR/tasks.jsonl`` (the shape ``minipi
batch`` reads: id, question, project, expect), so the same tasks run through ``minipi ask``,
``minipi batch`` or ``bench/local_tasks.py --suite``. Each template (a format and a skill) is
drawn with seeds 0-3: seeds 0 and 1 are the **dev** half (tune on these), 2 and 3 the
**held-out** half (report only these). A seed fixes every value, name, decoy and the question's
language, so a task is the same on every machine and a held-out task was never seen while
tuning. Seeds 4 and 5 are ``fresh``: a second held-out half, for a report untouched by the
reading of earlier held-out runs. ``templates`` is another held-out set: the 22 templates of
``bench/task_templates.py`` (written without reading minipi's verdict rules: YAML, TOML, INI,
Markdown tables and pages, CSV with renamed columns, logs with decoy fields, source constants,
a Chinese meeting note; sums, averages, counts, differences, chains, decoy siblings, absent
data and absent files) at seeds 0 and 1. ``blind`` is a third held-out set: the templates of
``bench/task_templates_blind.py`` (written without reading how minipi reads files or judges its
answers: .env layers, docker-compose, a GitHub Actions matrix, pyproject.toml, package.json,
nginx, crontab, SQL migrations, a Makefile, JSON Lines, Keep a Changelog, Chinese CSV and
Markdown tables, a Chinese README, pom.xml, .csproj, CODEOWNERS) at seeds 0 and 1. ``blind2``
is a fourth (``bench/task_templates_blind2.py``, written in stop 37 the same way, after the
``blind`` answers had been read: Kubernetes, Terraform, go.mod, Dockerfiles, systemd,
Prometheus rules, OpenAPI, logrotate, meeting notes, requirements and constraints, iCalendar,
sitemaps, TSV, semicolon CSV, access logs, budgets, a Chinese roster and claims, vCards).

An answer is right (``answer_right``) when every expected value is in it: a number by value
(``9,600``, ``９６００`` and ``9600元`` are 9600; never inside ``19600``), a date in any common
form (``2026-09-06``, ``2026年9月6日``, ``September 6, 2026``), a decimal by value (``376.00``
is ``376`` and ``376.0``), text case-insensitively. ``task_right`` also scores an ``absent``
task (the asked data or file is not there): right when the answer says so (``says_absent``)
and states none of ``expect``, which then holds the decoys a wrong answer would state.

    python bench/task_suite.py --check [--split templates]

checks every task of a split: each expected value is in the files a person needs
(``needed``), an absent task's decoys are in the project, a perfect answer is right and one
missing a value is not, and a project stays small.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from task_templates import MONTHS_EN, NEW_TEMPLATES, Files
from task_templates_blind import BLIND_TEMPLATES
from task_templates_blind2 import BLIND2_TEMPLATES

__all__ = [
    "SPLITS",
    "SPLIT_TEMPLATES",
    "TEMPLATE_SPLITS",
    "SuiteTask",
    "answer_right",
    "check_tasks",
    "generate",
    "says_absent",
    "task_right",
    "write_suite",
]

SPLITS = {"dev": (0, 1), "heldout": (2, 3), "fresh": (4, 5)}
"""``fresh`` is a second held-out half, added in stop 28 after ``heldout``'s runs had been
read by earlier sessions: it is run only to report, never read while tuning."""

TEMPLATE_SPLITS = {
    "templates": (0, 1),
    "templates_fresh": (2,),
    "blind": (0, 1),
    "blind2": (0, 1),
}
"""The held-out templates of ``bench/task_templates.py`` (not part of ``all``).
``templates_fresh`` (seed 2) was added in stop 35 after the verdict's rules had been
changed for wrong greens seen on ``templates``' answers: the same templates with values and
layouts never run, to report the verdict on answers nobody read. ``blind`` draws the templates
of ``bench/task_templates_blind.py`` instead (``SPLIT_TEMPLATES``), written without reading
the verdict's rules: a split nobody tuned on (until its answers were read, in stop 36);
``blind2``, those of ``bench/task_templates_blind2.py``, written the same way in stop 37."""

SPLIT_TEMPLATES = {"blind": BLIND_TEMPLATES, "blind2": BLIND2_TEMPLATES}
"""The templates of a ``TEMPLATE_SPLITS`` split other than ``NEW_TEMPLATES``."""

_SMALL_TEMPLATES = {**NEW_TEMPLATES, **BLIND_TEMPLATES, **BLIND2_TEMPLATES}
"""The templates whose projects must stay small and name their ``needed`` paths."""


@dataclass(frozen=True)
class SuiteTask:
    """One task: its files, the question, the values a right answer states, and for a change
    the file that must have moved (``moved``: source -> target folder). ``needed``: the
    project paths a person would paste to answer; ``absent``: the asked data (or the named
    file) is not in the project, and ``expect`` holds the decoys a wrong answer would state
    (score with ``task_right``)."""

    id: str
    template: str
    seed: int
    language: str
    question: str
    files: dict[str, str]
    expect: tuple[str, ...]
    moved: tuple[str, str] | None = None
    tags: tuple[str, ...] = field(default=())
    needed: tuple[str, ...] = ()
    absent: bool = False

    def check(self, root: Path) -> bool:
        """For a change: the file is where it was asked to go and no longer where it was."""
        if self.moved is None:
            return True
        source, folder = self.moved
        return (root / folder / Path(source).name).exists() and not (root / source).exists()


Make = Callable[[random.Random, str], tuple[str, dict[str, str], tuple[str, ...]]]
"""A template: (rng, language) -> (question, files, expected values)."""

_CITIES = ("Hangzhou", "Chengdu", "Wuhan", "Xiamen", "Suzhou", "Qingdao", "Harbin", "Kunming")
_REGIONS = ("North", "South", "East", "West", "Central", "Northeast", "Southwest")
_SURNAMES = "王李张刘陈杨赵黄周吴徐孙马朱胡郭何林罗高"
_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂"
_DEPTS = {
    "zh": ("研发部", "市场部", "财务部", "人事部"),
    "en": ("R&D", "Marketing", "Finance", "HR"),
}
_PETS = (("猫咪", "cat"), ("狗狗", "dog"), ("兔子", "rabbit"), ("仓鼠", "hamster"))
_PET_NAMES = ("小花", "豆豆", "团子", "阿黄", "雪球", "可乐", "布丁")


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _nested_json(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    day, orders, revenue = _date(rng), rng.randint(40, 900), rng.randint(10, 999) * 100
    city = rng.choice(_CITIES)
    report = {
        "meta": {"date": day, "store": city},
        "summary": {"orders": orders, "revenue_yuan": revenue, "refunds": rng.randint(0, 9)},
    }
    decoy = {"meta": {"date": _date(rng), "store": city}, "summary": {"orders": orders + 17}}
    name = f"{city.lower()}-{day}.json"
    files = {f"reports/{name}": _json(report), f"drafts/{city.lower()}-draft.json": _json(decoy)}
    q = {
        "zh": f"reports 目录里 {city} 门店的日报是哪一天的？订单数和营收各是多少？",
        "en": f"In reports/, which date is the {city} store's daily report for, and what are "
        "its orders and revenue?",
    }[lang]
    return q, files, (day, str(orders), str(revenue))


def _csv_largest(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    regions = rng.sample(_REGIONS, 5)
    revenues = rng.sample(range(120, 990), 5)
    rows = [f"{r},{v * 100},{rng.randint(10, 99)}" for r, v in zip(regions, revenues, strict=True)]
    top = max(range(5), key=lambda i: revenues[i])
    files = {"data/q3_sales.csv": "region,q3_revenue_yuan,orders\n" + "\n".join(rows) + "\n"}
    q = {
        "zh": "data/q3_sales.csv 里第三季度营收最高的是哪个地区？营收是多少？",
        "en": "Which region had the highest Q3 revenue in data/q3_sales.csv, and how much?",
    }[lang]
    return q, files, (regions[top], str(revenues[top] * 100))


def _csv_smallest(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    items = [f"SKU-{rng.randint(1000, 9999)}" for _ in range(6)]
    stock = rng.sample(range(3, 400), 6)
    rows = [f"{s},{n}" for s, n in zip(items, stock, strict=True)]
    low = min(range(6), key=lambda i: stock[i])
    files = {"inventory/stock.csv": "sku,units\n" + "\n".join(rows) + "\n"}
    q = {
        "zh": "库存表 inventory/stock.csv 中哪个 SKU 的库存最少？还剩多少件？",
        "en": "Which SKU in inventory/stock.csv has the fewest units left, and how many?",
    }[lang]
    return q, files, (items[low], str(stock[low]))


def _toml_decoy(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    port, workers = rng.randint(2000, 9999), rng.randint(2, 32)
    db = rng.choice(("orders", "billing", "catalog", "ledger")) + f"_{rng.randint(1, 9)}"
    real = f'[server]\nport = {port}\nworkers = {workers}\n\n[database]\nname = "{db}"\n'
    example = '[server]\nport = 8080\nworkers = 4\n\n[database]\nname = "example_db"\n'
    files = {"config/app.toml": real, "config/app.example.toml": example}
    q = {
        "zh": "项目实际使用的配置 config/app.toml 里，服务端口和数据库名是什么？",
        "en": "In the config the app really uses (config/app.toml), what are the server port "
        "and the database name?",
    }[lang]
    return q, files, (str(port), db)


def _ini_lookup(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    timeout, retries = rng.randint(5, 120), rng.randint(1, 9)
    host = f"mail{rng.randint(2, 99)}.example.org"
    text = (
        f"[general]\nname = notifier\n\n[smtp]\nhost = {host}\ntimeout_s = {timeout}\n"
        f"retries = {retries}\n"
    )
    files = {"settings.ini": text, "notes.txt": "Remember to rotate the SMTP password.\n"}
    q = {
        "zh": "settings.ini 里 smtp 的主机名和超时秒数分别是多少？",
        "en": "What SMTP host and timeout (seconds) does settings.ini set?",
    }[lang]
    return q, files, (host, str(timeout))


def _log_first_error(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    day = _date(rng)
    lines, first = [], None
    for n in range(14):
        level = rng.choice(("INFO", "INFO", "WARN", "ERROR")) if n > 3 else "INFO"
        minute = 8 * 60 + n * 7 + rng.randint(0, 5)  # in order, as a log is
        stamp = f"{day} {minute // 60:02d}:{minute % 60:02d}:{rng.randint(10, 59):02d}"
        code = f"E{rng.randint(100, 999)}"
        text = {"ERROR": f"job failed code={code}", "WARN": "slow response", "INFO": "ok"}[level]
        lines.append(f"{stamp} {level} {text}")
        if level == "ERROR" and first is None:
            first = (stamp.split()[1], code)
    if first is None:
        stamp = f"{day} 10:{rng.randint(10, 59):02d}:07"
        first = (stamp.split()[1], f"E{rng.randint(100, 999)}")
        lines.append(f"{stamp} ERROR job failed code={first[1]}")
    files = {"logs/worker.log": "\n".join(lines) + "\n"}
    q = {
        "zh": "logs/worker.log 里第一条 ERROR 是几点发生的？错误码是什么？",
        "en": "When did the first ERROR in logs/worker.log happen, and what was its error code?",
    }[lang]
    return q, files, first


def _log_count(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    count = rng.randint(2, 9)
    levels = ["ERROR"] * count + ["INFO"] * rng.randint(6, 15) + ["WARN"] * rng.randint(1, 5)
    rng.shuffle(levels)
    lines = [
        f"2026-11-0{rng.randint(1, 9)} 10:{i:02d}:00 {lv} step {i}" for i, lv in enumerate(levels)
    ]
    files = {"logs/build.log": "\n".join(lines) + "\n"}
    q = {
        "zh": "logs/build.log 里一共有多少条 ERROR？",
        "en": "How many ERROR lines are there in logs/build.log?",
    }[lang]
    return q, files, (str(count),)


def _changelog(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    major, minor = rng.randint(1, 5), rng.randint(0, 9)
    versions = [f"{major}.{minor}.{p}" for p in range(rng.randint(3, 5), -1, -1)]
    dates = sorted((_date(rng) for _ in versions), reverse=True)
    body = "".join(
        f"## {v} - {d}\n\n- change {i}\n\n"
        for i, (v, d) in enumerate(zip(versions, dates, strict=True))
    )
    files = {
        "CHANGELOG.md": "# Changelog\n\n" + body,
        "README.md": "A small web application. See CHANGELOG.md for releases.\n",
    }
    q = {
        "zh": "根据 CHANGELOG.md，最新发布的版本号是多少？是哪天发布的？",
        "en": "According to CHANGELOG.md, what is the latest released version and its date?",
    }[lang]
    return q, files, (versions[0], dates[0])


def _staff(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    names = rng.sample([s + g + g2 for s in _SURNAMES for g in _GIVEN for g2 in "一二三"], 6)
    depts = [rng.choice(_DEPTS["zh"]) for _ in names]
    phones = [f"{rng.randint(1000, 9999)}" for _ in names]
    who = rng.randrange(6)
    rows = [f"{n}  {d}  分机 {p}" for n, d, p in zip(names, depts, phones, strict=True)]
    files = {"人事/员工名单.txt": "姓名  部门  分机\n" + "\n".join(rows) + "\n"}
    q = {
        "zh": f"员工名单里 {names[who]} 在哪个部门？分机号是多少？",
        "en": f"In the staff list, which department is {names[who]} in, and what is the extension?",
    }[lang]
    return q, files, (depts[who], phones[who])


def _compare(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    a, b = rng.sample(range(100, 990), 2)
    months = rng.sample(("2026-03", "2026-04", "2026-05", "2026-06", "2026-07"), 2)
    files = {
        f"monthly/{months[0]}.json": _json({"month": months[0], "orders": a}),
        f"monthly/{months[1]}.json": _json({"month": months[1], "orders": b}),
    }
    more = months[0] if a > b else months[1]
    q = {
        "zh": "monthly 目录里两个月的订单，哪个月更多？多多少单？",
        "en": "Of the two months in monthly/, which had more orders, and by how many?",
    }[lang]
    return q, files, (more, str(abs(a - b)))


def _clues(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    word = rng.choice(("Harbor", "Falcon", "Cedar", "Nimbus", "Quartz")) + str(rng.randint(10, 99))
    hops = rng.sample(("alpha", "beta", "gamma", "delta", "omega"), 3)
    files = {
        f"clues/{hops[0]}.txt": f"The next clue is in clues/{hops[1]}.txt\n",
        f"clues/{hops[1]}.txt": f"Almost there: open clues/{hops[2]}.txt\n",
        f"clues/{hops[2]}.txt": f"The password is {word}\n",
        "clues/readme.txt": "Decoy: the password is not here.\n",
    }
    q = {
        "zh": f"从 clues/{hops[0]}.txt 开始按线索一步步找，最后的密码是什么？",
        "en": f"Start at clues/{hops[0]}.txt and follow the clues: what is the final password?",
    }[lang]
    return q, files, (word,)


def _find_by_name(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    number, total = rng.randint(1000, 9999), rng.randint(100, 99_999)
    files: dict[str, str] = {}
    for n in range(240):
        folder = f"archive/{2020 + n % 6}/{n % 12 + 1:02d}"
        files[f"{folder}/invoice-{rng.randint(1000, 9999)}-{n}.json"] = _json(
            {"total_yuan": rng.randint(100, 99_999)}
        )
    folder = f"archive/{rng.randint(2020, 2025)}/{rng.randint(1, 12):02d}"
    files[f"{folder}/invoice-{number}.json"] = _json({"total_yuan": total, "number": number})
    q = {
        "zh": f"找到发票 invoice-{number}.json，它的总金额是多少？",
        "en": f"Find the invoice file invoice-{number}.json: what is its total?",
    }[lang]
    return q, files, (str(total),)


def _move(rng: random.Random, lang: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    pets = rng.sample(_PETS, 2)
    names = rng.sample(_PET_NAMES, 2)
    files = {
        f"inbox/{pets[0][0]}{names[0]}.txt": f"{pets[0][1]}, {rng.randint(1, 9)} years old\n",
        f"inbox/{pets[1][0]}{names[1]}.txt": f"{pets[1][1]}, {rng.randint(1, 9)} years old\n",
        "archive/.keep": "",
    }
    q = {
        "zh": f"请把 inbox 里{pets[0][0]}{names[0]}的档案移到 archive 目录。",
        "en": f"Please move the file of {pets[0][0]}{names[0]} from inbox/ to archive/.",
    }[lang]
    return q, files, (f"{pets[0][0]}{names[0]}",)


TEMPLATES: dict[str, Make] = {
    "nested_json": _nested_json,
    "csv_largest": _csv_largest,
    "csv_smallest": _csv_smallest,
    "toml_decoy": _toml_decoy,
    "ini_lookup": _ini_lookup,
    "log_first_error": _log_first_error,
    "log_count": _log_count,
    "changelog": _changelog,
    "staff_zh": _staff,
    "compare_two": _compare,
    "clue_hunt": _clues,
    "find_by_name": _find_by_name,
    "move": _move,
}


def generate(split: str = "all") -> list[SuiteTask]:
    """Every task of ``split`` (``dev``, ``heldout``, ``fresh``, ``all`` of those three,
    ``templates``, ``templates_fresh`` or ``blind``), in a fixed order."""
    makes: dict[str, Make]
    seeds: tuple[int, ...]
    if split in TEMPLATE_SPLITS:
        makes, seeds = SPLIT_TEMPLATES.get(split, NEW_TEMPLATES), TEMPLATE_SPLITS[split]
    else:
        makes = TEMPLATES
        seeds = SPLITS[split] if split != "all" else tuple(s for p in SPLITS.values() for s in p)
    return [_task(name, make, seed) for name, make in makes.items() for seed in seeds]


def _task(name: str, make: Make, seed: int) -> SuiteTask:
    rng = random.Random(f"{name}:{seed}")
    language = "zh" if (seed + len(name)) % 2 == 0 else "en"
    question, files, expect = make(rng, language)
    moved = None
    if name == "move":
        source = next(p for p in files if p.startswith("inbox/") and expect[0] in p)
        moved = (source, "archive")
    extra = files if isinstance(files, Files) else Files(files, ())
    return SuiteTask(
        f"{name}-{seed}",
        name,
        seed,
        language,
        question,
        dict(files),
        expect,
        moved,
        tags=extra.tags,
        needed=extra.needed,
        absent=extra.absent,
    )


def write_suite(tasks: list[SuiteTask], out: Path) -> Path:
    """Each task's project under ``out/<id>/``; ``out/tasks.jsonl`` lists them (an absent
    task without ``expect``: ``minipi batch`` would count its decoys as required), and
    ``out/key.jsonl`` holds what ``task_right`` scores with (expect, absent, needed)."""
    lines, keys = [], []
    for task in tasks:
        root = out / task.id
        for rel, text in task.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        entry: dict[str, object] = {"id": task.id, "question": task.question, "project": task.id}
        if not task.absent:
            entry["expect"] = list(task.expect)
        lines.append(json.dumps(entry, ensure_ascii=False))
        key = {"id": task.id, "expect": list(task.expect), "absent": task.absent}
        keys.append(json.dumps({**key, "needed": list(task.needed)}, ensure_ascii=False))
    (out / "key.jsonl").write_text("\n".join(keys) + "\n", encoding="utf-8")
    listing = out / "tasks.jsonl"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def _date_forms(value: str) -> list[str]:
    year, month, day = (int(part) for part in value.split("-"))
    name = MONTHS_EN[month - 1]
    return [
        value,
        f"{year}/{month:02d}/{day:02d}",
        f"{year}/{month}/{day}",
        f"{year}年{month}月{day}日",
        f"{year}年{month:02d}月{day:02d}日",
        f"{name} {day}, {year}",
        f"{name[:3]} {day}, {year}",
        f"{day} {name} {year}",
    ]


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"(?<=\d)[,\s](?=\d{3}\b)", "", text).casefold()


def _states(text: str, value: str) -> bool:
    """Whether the normalized ``text`` states ``value`` (by value for numbers and dates)."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return any(form.casefold() in text for form in _date_forms(value))
    if re.fullmatch(r"\d+", value):
        return re.search(rf"(?<![\d.]){value}(?![\d])", text) is not None
    if re.fullmatch(r"\d+\.\d+", value):
        wanted = Decimal(value)
        text = re.sub(r"(?<=\d),(?=\d{1,2}(?!\d))", ".", text)  # 359,50 is 359.50
        return any(Decimal(n) == wanted for n in re.findall(r"(?<![\d.])\d+(?:\.\d+)?", text))
    return value.casefold() in text


def answer_right(answer: str, expect: tuple[str, ...]) -> bool:
    """Every expected value is stated in ``answer`` (by value for numbers and dates)."""
    text = _normal(answer)
    return all(_states(text, value) for value in expect)


_ABSENT = re.compile(
    r"\b(?:not|no|none|nothing|nowhere|neither|never|without|missing|absent|unset|undefined|"
    r"unavailable|unspecified|cannot)\b|n't\b|"
    r"没有|没|不存在|找不到|未|无|不在|不是|并非|缺少|缺失"
)


def says_absent(answer: str) -> bool:
    """Whether ``answer`` says something is not there (a negation, in English or Chinese)."""
    return _ABSENT.search(_normal(answer).replace("\u2019", "'")) is not None


def task_right(task: SuiteTask, answer: str) -> bool:
    """``answer`` is right for ``task`` (its text only: a move is checked by ``task.check``):
    every expected value stated, or for an ``absent`` task none of its decoys stated and the
    absence said."""
    if not task.absent:
        return answer_right(answer, task.expect)
    text = _normal(answer)
    return says_absent(answer) and not any(_states(text, value) for value in task.expect)


_SMALL = (30, 20_000)  # files, bytes: the most a templates project holds


def check_tasks(tasks: list[SuiteTask]) -> list[str]:
    """What is wrong with ``tasks`` (empty: nothing): see the module's ``--check``."""
    ids = [task.id for task in tasks]
    problems = [f"{i}: id used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for task in tasks:
        problems += [f"{task.id}: {p}" for p in _check_task(task)]
    return problems


def _check_task(task: SuiteTask) -> list[str]:
    problems = [f"needed {p} is not in the project" for p in task.needed if p not in task.files]
    size = sum(len(text.encode()) for text in task.files.values())
    if task.template in _SMALL_TEMPLATES and (len(task.files) > _SMALL[0] or size > _SMALL[1]):
        problems.append(f"{len(task.files)} files, {size} bytes: not small")
    if task.template in _SMALL_TEMPLATES and not task.needed:
        problems.append("no needed paths")
    if task.absent:
        return problems + _check_absent(task)
    needed = _normal("\n".join(task.files.get(p, "") for p in task.needed))
    if task.needed and "computed" not in task.tags:
        problems += [
            f"{v!r} is not in {task.needed}" for v in task.expect if not _states(needed, v)
        ]
    if not task_right(task, " / ".join(task.expect)):
        problems.append("a perfect answer is not right")
    for n, value in enumerate(task.expect):
        if task_right(task, " / ".join(task.expect[:n] + task.expect[n + 1 :])):
            problems.append(f"an answer without {value!r} is right")
    return problems


def _check_absent(task: SuiteTask) -> list[str]:
    everything = _normal("\n".join(task.files.values()))
    problems = [
        f"decoy {v!r} is not in the project" for v in task.expect if not _states(everything, v)
    ]
    for answer in ("I could not find that in the files.", "文件里没有这个信息。"):
        if not task_right(task, answer):
            problems.append(f"{answer!r} is not right")
    if task_right(task, "I read the files and checked the folder."):
        problems.append("an answer that does not say it is absent is right")
    for value in task.expect:
        if task_right(task, f"It is not in that file; elsewhere it is {value}."):
            problems.append(f"an answer stating the decoy {value!r} is right")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--split", choices=(*SPLITS, *TEMPLATE_SPLITS, "all"), default="all")
    parser.add_argument("--check", action="store_true", help="check the split's tasks")
    args = parser.parse_args()
    if not args.check and args.out is None:
        parser.error("--out is required (unless --check)")
    tasks = generate(args.split)
    if args.check:
        problems = check_tasks(tasks)
        print("\n".join(problems) or f"{len(tasks)} tasks ({args.split}): ok", file=sys.stderr)
        if problems or args.out is None:
            return 1 if problems else 0
    listing = write_suite(tasks, args.out)
    print(f"{len(tasks)} tasks ({args.split}) in {listing}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
