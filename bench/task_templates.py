"""Held-out question templates for the generated suite: the ``templates`` split.

Written apart from the 13 templates of ``task_suite.py`` (other formats, file names, keys and
phrasings) and without reading how minipi judges its own answers, so a run on them measures
rather than confirms. Each template is a ``task_suite.Make``: ``(rng, language) -> (question,
files, expect)``; its ``files`` is a ``Files``, a ``dict`` that also carries ``needed`` (the
project paths a person would paste to answer), ``absent`` (the asked data is not in the
project, or the named file does not exist: ``expect`` then holds the decoy values a wrong
answer would state) and ``tags`` (``computed``: a value is derived from the files, not quoted).

Formats: YAML (a list of services, nested Helm values), TOML (arrays of tables, a Cargo
workspace), INI (layered defaults, an Ansible inventory), a Markdown table, Markdown pages with
headings in a nested ``docs/`` tree, CSV whose columns are not named as the question words
them, logs whose INFO/WARN lines carry the same fields as the asked ERROR line, Python and
JavaScript constants, a Chinese meeting note, plain text with units.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal

__all__ = ["NEW_TEMPLATES", "Drafted", "Files"]


class Files(dict[str, str]):
    """A project's files (path -> text) and what scoring needs beside ``expect``."""

    def __init__(
        self,
        files: dict[str, str],
        needed: Iterable[str],
        *,
        absent: bool = False,
        tags: Iterable[str] = (),
    ) -> None:
        super().__init__(files)
        self.needed = tuple(needed)
        self.absent = absent
        self.tags = tuple(tags)


Drafted = tuple[str, dict[str, str], tuple[str, ...]]
"""(question, files, expected values): what a ``task_suite.Make`` returns."""

_FIRST = (
    "Priya",
    "Tomasz",
    "Mei",
    "Jonas",
    "Aisha",
    "Diego",
    "Hannah",
    "Kenji",
    "Olu",
    "Sofia",
    "Rafael",
    "Ines",
    "Lars",
    "Noor",
    "Mateo",
    "Yuki",
)
_LAST = (
    "Natarajan",
    "Kowalski",
    "Lindqvist",
    "Becker",
    "Okafor",
    "Alvarez",
    "Tanaka",
    "Haddad",
    "Moreau",
    "Novak",
    "Brennan",
    "Quinn",
    "Castillo",
    "Ivanova",
)
_ZH_FAMILY = "苏邓韩冯曹彭曾萧田董潘袁蒋蔡余杜"
_ZH_GIVEN = ("思远", "嘉怡", "子轩", "雨桐", "浩然", "欣妍", "俊杰", "梓涵", "宇航", "诗琪", "明哲")
MONTHS_EN = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _ask(rng: random.Random, lang: str, zh: Sequence[str], en: Sequence[str]) -> str:
    """One of the phrasings of ``lang`` (imperative, indirect, casual: drawn by the seed)."""
    return rng.choice(zh if lang == "zh" else en)


def _people(rng: random.Random, count: int) -> list[str]:
    pool = [f"{first} {last}" for first in _FIRST for last in _LAST]
    return rng.sample(pool, count)


def _zh_people(rng: random.Random, count: int) -> list[str]:
    pool = [family + given for family in _ZH_FAMILY for given in _ZH_GIVEN]
    return rng.sample(pool, count)


def _version(rng: random.Random) -> str:
    return f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}"


def _newer(version: str, rng: random.Random) -> str:
    """A later patch release of ``version`` (staging runs ahead of production)."""
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) + rng.randint(1, 3)}"


def _money(cents: int) -> str:
    return f"{Decimal(cents) / 100:.2f}"


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# --- YAML -----------------------------------------------------------------------------------

_SERVICES = ("gateway", "billing-api", "search", "notifier", "media-resizer", "auth", "scheduler")
_STACK_LAYOUTS = (
    ("deploy/production.yaml", "deploy/staging.yaml"),
    ("deploy/prod/stack.yaml", "deploy/staging/stack.yaml"),
    ("envs/prod.yml", "envs/stage.yml"),
)


def _stack_text(env: str, services: dict[str, tuple[str, int]]) -> str:
    lines = [f"# {env} stack", "registry: registry.internal", "services:"]
    for name, (version, replicas) in services.items():
        lines += [
            f"  - name: {name}",
            f"    image: registry.internal/{name}:{version}",
            f"    replicas: {replicas}",
            "    healthcheck:",
            "      path: /healthz",
            f"      every_s: {10 + len(name) % 3 * 5}",
        ]
    return _lines(*lines)


def _yaml_stack_image(rng: random.Random, lang: str) -> Drafted:
    """YAML list of services; a version string and a count; decoys: the other services and the
    staging file, which runs newer versions of the same services."""
    names = rng.sample(_SERVICES, 4)
    counts = rng.sample(range(2, 13), 4)
    prod = {}  # a major version (13-29) never reads as a replica count (2-12)
    for name, count in zip(names, counts, strict=True):
        prod[name] = (f"{rng.randint(13, 29)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}", count)
    stage = {n: (_newer(v, rng), rng.randint(1, 2)) for n, (v, _) in prod.items()}
    prod_path, stage_path = rng.choice(_STACK_LAYOUTS)
    svc = rng.choice(names)
    files = {
        prod_path: _stack_text("production", prod),
        stage_path: _stack_text("staging", stage),
        "README.md": f"Deploy manifests: production is {prod_path}, staging is {stage_path}.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"生产环境的 {svc} 现在跑的是哪个版本？开了几个副本？",
            f"帮我查一下线上 {svc} 服务的镜像版本号和副本数。",
        ),
        (
            f"Which version of {svc} runs in production, and with how many replicas?",
            f"Tell me the image version and the replica count of {svc} in prod.",
        ),
    )
    version, replicas = prod[svc]
    return question, Files(files, (prod_path,)), (version, str(replicas))


_APPS = ("ledger", "courier", "atlas", "pixel", "relay", "harvest")


def _helm_limits(rng: random.Random, lang: str) -> Drafted:
    """Nested YAML keys, three values (a Chinese question about English keys); decoys:
    ``resources.requests`` beside the limits and a dev values file that overrides them."""
    app = rng.choice(_APPS)
    cpu = rng.choice((600, 750, 1200, 1500, 2000))
    memory = rng.choice(("640Mi", "768Mi", "1536Mi", "2Gi", "3Gi"))
    low, high = rng.randint(2, 4), rng.randint(6, 14)
    values = _lines(
        "image:",
        f"  repository: ghcr.io/acme/{app}",
        f'  tag: "{_version(rng)}"',
        "resources:",
        "  requests:",
        f"    cpu: {rng.choice((100, 200, 250))}m",
        f"    memory: {rng.choice(('128Mi', '192Mi', '256Mi'))}",
        "  limits:",
        f"    cpu: {cpu}m",
        f"    memory: {memory}",
        "autoscaling:",
        "  enabled: true",
        f"  minReplicas: {low}",
        f"  maxReplicas: {high}",
        f"  targetCPUUtilizationPercentage: {rng.choice((60, 70, 80))}",
    )
    dev = _lines(
        "# overrides for the dev cluster",
        "resources:",
        "  limits:",
        "    cpu: 300m",
        "    memory: 384Mi",
        "autoscaling:",
        "  maxReplicas: 1",
    )
    base = f"charts/{app}"
    files = {
        f"{base}/Chart.yaml": f"apiVersion: v2\nname: {app}\nversion: {_version(rng)}\n",
        f"{base}/values.yaml": values,
        f"{base}/values-dev.yaml": dev,
        f"{base}/templates/deployment.yaml": "resources: {{- toYaml .Values.resources }}\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"{base}/values.yaml 默认的 resources.limits 里 cpu 和 memory 各是多少？"
            "autoscaling 的 maxReplicas 是几？",
            f"帮我看下 {app} 这个 chart 默认配置的 CPU 上限、内存上限和最大副本数。",
        ),
        (
            f"What CPU limit, memory limit and maximum replica count does the {app} chart set by "
            "default?",
            f"I'm sizing the cluster - tell me the default cpu and memory limits and maxReplicas "
            f"of the {app} Helm chart.",
        ),
    )
    return question, Files(files, (f"{base}/values.yaml",)), (f"{cpu}m", memory, str(high))


def _absent_memory(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: one service's YAML sets no memory limit; decoys: its siblings' memory limits."""
    names = rng.sample(_SERVICES, 3)
    svc = names[rng.randrange(3)]
    memories = rng.sample(("256Mi", "384Mi", "512Mi", "768Mi", "1Gi", "2Gi"), 3)
    files = {"deploy/README.md": "One file per service under deploy/services/.\n"}
    decoys = []
    for name, memory in zip(names, memories, strict=True):
        lines = [
            f"name: {name}",
            f"image: registry.internal/{name}:{_version(rng)}",
            f"replicas: {rng.randint(2, 6)}",
            "resources:",
            f"  cpu: {rng.choice((250, 500, 1000))}m",
        ]
        if name != svc:
            lines.append(f"  memory: {memory}")
            decoys.append(memory)
        files[f"deploy/services/{name}.yaml"] = _lines(*lines)
    question = _ask(
        rng,
        lang,
        (f"{svc} 的内存上限设置的是多少？", f"帮我查一下 {svc} 服务配置的内存限制。"),
        (
            f"What memory limit is set for {svc}?",
            f"Tell me how much memory the {svc} service is allowed.",
        ),
    )
    needed = (f"deploy/services/{svc}.yaml",)
    return question, Files(files, needed, absent=True), tuple(decoys)


def _chain_db(rng: random.Random, lang: str) -> Drafted:
    """A chain: a note says the service moved from config/db.yaml to another file; decoy: the
    old file, still there with other values."""
    code = rng.choice(("orion", "tundra", "saffron", "kepler", "marlin"))
    numbers = rng.sample(range(100, 400), 2)
    sites = rng.sample(("fra2", "ams1", "lon3", "par1"), 2)
    hosts = [f"pg-{n}.{dc}.db.example.net" for n, dc in zip(numbers, sites, strict=True)]
    pools = rng.sample(range(8, 64), 2)
    when = dt.date(2026, rng.randint(1, 6), rng.randint(1, 28))

    def db(host: str, pool: int) -> str:
        return _lines("database:", f"  host: {host}", "  name: shop", f"  pool_size: {pool}")

    files = {
        "README.md": "Order service. Read NOTES.md before changing any configuration.\n",
        "NOTES.md": _lines(
            "# Notes",
            "",
            f"- {when}: moved to the new database cluster. config/db.yaml is kept for reference "
            f"only; the service now reads config/db.{code}.yaml.",
            f"- {when + dt.timedelta(days=9)}: rotated the TLS certificates.",
        ),
        "config/db.yaml": db(hosts[0], pools[0]),
        f"config/db.{code}.yaml": db(hosts[1], pools[1]),
        "config/logging.yaml": "level: info\nformat: json\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "服务现在连的是哪个数据库主机？连接池大小是多少？",
            "帮我查一下服务目前用的数据库地址和连接池大小。",
        ),
        (
            "Which database host does the service connect to now, and with what pool size?",
            "Tell me the current DB host and connection pool size of the service.",
        ),
    )
    needed = ("NOTES.md", f"config/db.{code}.yaml")
    return question, Files(files, needed), (hosts[1], str(pools[1]))


# --- TOML -----------------------------------------------------------------------------------


def _toml_backup(rng: random.Random, lang: str) -> Drafted:
    """TOML array of tables; a host and a number; decoys: the other (non-primary) targets."""
    sites = rng.sample(("fra", "ams", "waw", "mad", "dub", "hel"), 3)
    hosts = [f"bk-{s}-{rng.randint(1, 6):02d}.vault.example.net" for s in sites]
    keeps = rng.sample(range(7, 120), 3)
    primary = rng.randrange(1, 3)  # never the first table
    blocks = [
        _lines(
            "[[target]]",
            f'name = "{name}"',
            f'host = "{host}"',
            f"keep_days = {keep}",
            f"primary = {'true' if i == primary else 'false'}",
        )
        for i, (name, host, keep) in enumerate(
            zip(("offsite", "nearline", "cold"), hosts, keeps, strict=True)
        )
    ]
    text = '# nightly backups of the main database\n[schedule]\ncron = "15 2 * * *"\n'
    text += 'compression = "zstd"\n\n' + "\n".join(blocks)
    files = {"ops/backup.toml": text, "ops/README.md": "Backups: see ops/backup.toml.\n"}
    question = _ask(
        rng,
        lang,
        (
            "帮我查一下：备份的主目标（primary）是哪台主机？在那儿保留几天？",
            "备份首先写到哪台机器上？那边的备份留多少天？",
        ),
        (
            "Where do our backups go first? I need the primary target's host and how many days "
            "it keeps them.",
            "Tell me which host is the primary backup target and its retention in days.",
        ),
    )
    return question, Files(files, ("ops/backup.toml",)), (hosts[primary], str(keeps[primary]))


def _cargo_workspace(rng: random.Random, lang: str) -> Drafted:
    """TOML chain: a crate inherits a dependency's version from the workspace root; decoy: the
    sibling crate pins its own, older version."""
    a, b = rng.sample(("ingest", "planner", "courier", "vault", "render", "probe"), 2)
    dep, ws, pinned = rng.choice(
        (
            ("tokio", f"1.{rng.randint(30, 45)}.{rng.randint(0, 9)}", f"1.{rng.randint(10, 29)}.0"),
            ("serde_json", f"1.0.{rng.randint(110, 140)}", f"1.0.{rng.randint(80, 99)}"),
            ("reqwest", f"0.12.{rng.randint(2, 9)}", f"0.11.{rng.randint(10, 27)}"),
        )
    )
    own = f"0.{rng.randint(2, 9)}.{rng.randint(0, 9)}"
    files = {
        "Cargo.toml": _lines(
            "[workspace]",
            f'members = ["crates/{a}", "crates/{b}"]',
            'resolver = "2"',
            "",
            "[workspace.dependencies]",
            f'{dep} = "{ws}"',
            'anyhow = "1.0.86"',
        ),
        f"crates/{a}/Cargo.toml": _lines(
            "[package]",
            f'name = "{a}"',
            f'version = "{own}"',
            'edition = "2021"',
            "",
            "[dependencies]",
            f"{dep} = {{ workspace = true }}",
            "anyhow = { workspace = true }",
        ),
        f"crates/{b}/Cargo.toml": _lines(
            "[package]",
            f'name = "{b}"',
            f'version = "0.{rng.randint(10, 19)}.0"',
            'edition = "2021"',
            "",
            "[dependencies]",
            f'{dep} = "{pinned}"  # pinned until the upgrade lands here too',
        ),
        f"crates/{a}/src/lib.rs": "pub fn run() {}\n",
        f"crates/{b}/src/lib.rs": "pub fn run() {}\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"{a} 这个 crate 用的 {dep} 是哪个版本？它自己的版本号是多少？",
            f"帮我查一下 crates/{a} 依赖的 {dep} 版本和它的 package version。",
        ),
        (
            f"Which {dep} version does the {a} crate build with, and what is {a}'s own version?",
            f"Tell me the {dep} version crates/{a} uses and the crate's package version.",
        ),
    )
    needed = (f"crates/{a}/Cargo.toml", "Cargo.toml")
    return question, Files(files, needed), (ws, own)


# --- INI ------------------------------------------------------------------------------------


def _ini_layered(rng: random.Random, lang: str) -> Drafted:
    """INI chain: production.ini overrides single keys of defaults.ini; decoys: the sample
    file beside it, staging's override, and the default rate limit."""
    base = rng.choice(("gateway", "edge", "proxy"))
    rpm_default, rpm_prod = rng.randint(3, 9) * 100, rng.randint(12, 60) * 100
    read_ms = rng.choice((2500, 4000, 4500, 6000, 7500, 9000))
    stage_ms = read_ms + rng.choice((-1000, 1500, 2000))
    rpm_prod += 100 if rpm_prod == read_ms else 0  # two values, never one number twice
    files = {
        f"{base}/defaults.ini": _lines(
            "; defaults for every environment; an environment file overrides single keys",
            "[limits]",
            f"requests_per_minute = {rpm_default}",
            f"burst = {rng.randint(20, 60)}",
            "",
            "[upstream]",
            f"connect_timeout_ms = {rng.choice((500, 800, 1200))}",
            f"read_timeout_ms = {read_ms}",
            "retries = 2",
        ),
        f"{base}/production.ini": _lines(
            "; production: only what differs from defaults.ini",
            "[limits]",
            f"requests_per_minute = {rpm_prod}",
            f"burst = {rng.randint(100, 300)}",
        ),
        f"{base}/staging.ini": _lines("[upstream]", f"read_timeout_ms = {stage_ms}"),
        f"{base}/production.ini.sample": _lines(
            "; copy to production.ini and adjust",
            "[limits]",
            "requests_per_minute = 100",
            "[upstream]",
            "read_timeout_ms = 3000",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"线上（production）{base} 每分钟限流多少个请求？上游读超时是多少毫秒？",
            f"帮我查一下 production 环境下 {base} 的 requests_per_minute 和 read_timeout_ms。",
        ),
        (
            f"In production, what is the {base}'s rate limit per minute, and its upstream read "
            "timeout?",
            f"I'm debugging timeouts in prod. What read timeout does the {base} use upstream, and "
            "how many requests per minute does it allow?",
        ),
    )
    needed = (f"{base}/production.ini", f"{base}/defaults.ini")
    return question, Files(files, needed), (str(rpm_prod), str(read_ms))


def _ansible_hosts(rng: random.Random, lang: str) -> Drafted:
    """INI inventory, two or three values (a list); decoys: the replica group and staging."""
    dc = rng.choice(("fra", "ams", "sin", "iad"))
    numbers = rng.sample(range(1, 30), 6)
    count = rng.randint(2, 3)
    db = [f"db-{n:02d}.{dc}.example.net" for n in numbers[:count]]
    replicas = [f"db-{n:02d}.{dc}.example.net" for n in numbers[count : count + 2]]

    def inventory(web: int, dbs: list[str], reps: list[str], domain: str) -> str:
        return _lines(
            "[web]",
            *(f"web-{i:02d}.{domain}.example.net" for i in range(1, web + 1)),
            "",
            "[db]",
            *dbs,
            "",
            "[db_replicas]",
            *reps,
            "",
            "[all:vars]",
            "ansible_user=deploy",
        )

    files = {
        "ansible/hosts-prod.ini": inventory(3, db, replicas, dc),
        "ansible/hosts-staging.ini": inventory(
            1, [f"db-{numbers[5]:02d}.stg.example.net"], [], "stg"
        ),
        "ansible/site.yml": "- hosts: db\n  roles: [postgres]\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "生产环境的 inventory 里 db 组有哪些主机？",
            "帮我列一下线上 ansible 清单中 [db] 组的机器。",
        ),
        (
            "List the hosts in the db group of the production inventory.",
            "Which machines are in production's [db] group?",
        ),
    )
    return question, Files(files, ("ansible/hosts-prod.ini",)), tuple(db)


# --- Markdown -------------------------------------------------------------------------------

_PLANS = ("Starter", "Team", "Growth", "Business", "Scale")


def _price_table(plans: Sequence[str], seats: Sequence[int], monthly: Sequence[int]) -> str:
    rows = ["| Plan | Seats included | Monthly (EUR) | Yearly (EUR) |", "|---|---|---|---|"]
    for plan, seat, month in zip(plans, seats, monthly, strict=True):
        rows.append(f"| {plan} | {seat} | {month} | {month * 10} |")
    return "\n".join(rows) + "\n"


def _md_pricing(rng: random.Random, lang: str) -> Drafted:
    """A Markdown table, a price in EUR and a count; decoys: the monthly column and the legacy
    table with the same plans."""
    plans = sorted(rng.sample(_PLANS, 4), key=_PLANS.index)
    seats = sorted(rng.sample((1, 3, 5, 10, 15, 25, 50), 4))
    monthly = sorted(rng.sample(range(9, 400), 4))
    legacy = [m - rng.randint(2, 8) for m in monthly]
    since = dt.date(2026, rng.randint(2, 9), 1)
    doc = (
        "# Pricing\n\nPrices are per workspace, VAT excluded. Paying yearly gets two months "
        f"free.\n\n## Current prices (from {since})\n\n{_price_table(plans, seats, monthly)}\n"
        f"## Legacy prices (until {since - dt.timedelta(days=1)})\n\n"
        f"{_price_table(plans, [max(1, s // 2) for s in seats], legacy)}"
    )
    files = {
        "docs/pricing.md": doc,
        "docs/index.md": "# Handbook\n\n- [Pricing](pricing.md)\n- [Refunds](refunds.md)\n",
        "docs/refunds.md": "# Refunds\n\nYearly plans are refunded pro rata within 30 days.\n",
    }
    i = rng.randrange(1, 4)
    plan = plans[i]
    question = _ask(
        rng,
        lang,
        (
            f"{plan} 套餐现在按年付多少欧元？含几个席位？",
            f"帮我查一下 {plan} 套餐目前的年费（欧元）和包含的席位数。",
        ),
        (
            f"How much is the {plan} plan per year now, in euros, and how many seats come with it?",
            f"A customer asks about {plan}: tell me the current yearly price (EUR) and the seats "
            "it includes.",
        ),
    )
    return question, Files(files, ("docs/pricing.md",)), (str(monthly[i] * 10), str(seats[i]))


def _rota(
    year: int, weeks: range, people: list[str], rng: random.Random
) -> tuple[str, dict[int, str]]:
    parts = [f"# On-call rota {year}\n\nHandover: Mondays 10:00.\n"]
    secondary = dict(zip(weeks, rng.sample(people, len(weeks)), strict=True))  # one week each
    for week in weeks:
        start = dt.date.fromisocalendar(year, week, 1)
        end = start + dt.timedelta(days=6)
        second = secondary[week]
        first, third = rng.sample([p for p in people if p != second], 2)
        parts.append(
            f"## Week {week} ({start:%d %b} - {end:%d %b})\n\n- Primary: {first}\n"
            f"- Secondary: {second}\n- Escalation: {third}\n"
        )
    return "\n".join(parts), secondary


def _md_oncall(rng: random.Random, lang: str) -> Drafted:
    """Markdown headings, a person's name; decoys: the week's primary, the next weeks, and
    last year's page with the same week numbers."""
    people = _people(rng, 7)
    start = rng.randint(2, 44)
    weeks = range(start, start + 5)
    text, secondary = _rota(2026, weeks, people, rng)
    old, old_secondary = _rota(2025, weeks, people, rng)
    week = rng.choice(weeks)
    while old_secondary[week] == secondary[week]:
        old, old_secondary = _rota(2025, weeks, people, rng)
    files = {
        "docs/oncall/2026.md": text,
        "docs/oncall/2025.md": old,
        "docs/oncall/README.md": "One page per year. Swap shifts in #oncall, then edit the page.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"2026 年第 {week} 周的 secondary 值班是谁？",
            f"帮我查一下 2026 年第 {week} 周谁是二线值班（secondary）。",
        ),
        (
            f"hey, who's the secondary on call in week {week} of 2026?",
            f"I need to swap a shift. Who is secondary on call in week {week} this year (2026)?",
        ),
    )
    return question, Files(files, ("docs/oncall/2026.md",)), (secondary[week],)


_GROUPS = {
    "platform": ("storage", "network", "observability"),
    "product": ("search", "checkout", "onboarding"),
    "data": ("ingest", "warehouse"),
}


def _team_page(team: str, group: str, lead: str, members: list[str], channel: str) -> str:
    return _lines(
        f"# {team.capitalize()} team",
        "",
        f"Part of the {group} group.",
        "",
        "## People",
        "",
        f"- Lead: {lead}",
        f"- Members: {', '.join(members)}",
        "",
        "## Contact",
        "",
        f"- Chat: #{channel}",
        f"- Pager: {team}-primary",
    )


def _team_pages(rng: random.Random, lang: str) -> Drafted:
    """A nested docs tree (docs/teams/<group>/<team>.md), a name and a channel; decoys: the
    other teams' pages and the asked team's archived page with its former lead."""
    teams = [(g, t) for g, ts in _GROUPS.items() for t in ts]
    people = _people(rng, len(teams) * 3 + 1)
    files = {
        "docs/teams/README.md": "# Teams\n\nOne page per team, by group. Old pages: _archive/.\n"
    }
    leads: dict[str, str] = {}
    channels: dict[str, str] = {}
    for n, (group, team) in enumerate(teams):
        leads[team] = people[3 * n]
        channels[team] = f"{team}-{rng.choice(('crew', 'squad', 'help', 'desk'))}"
        page = _team_page(team, group, leads[team], people[3 * n + 1 : 3 * n + 3], channels[team])
        files[f"docs/teams/{group}/{team}.md"] = page
    group, team = rng.choice(teams)
    old = _team_page(team, group, people[-1], people[:2], f"{team}-old")
    files[f"docs/teams/_archive/{team}-2025.md"] = "(archived 2025)\n\n" + old
    question = _ask(
        rng,
        lang,
        (
            f"{team} 团队的负责人是谁？找他们用哪个聊天频道？",
            f"帮我查一下 {team} 组的 lead 和沟通频道。",
        ),
        (
            f"Who leads the {team} team, and which chat channel reaches them?",
            f"Tell me who the {team} team's lead is and their chat channel; I want to ask them "
            "something.",
        ),
    )
    needed = (f"docs/teams/{group}/{team}.md",)
    return question, Files(files, needed), (leads[team], channels[team])


def _absent_runbook(rng: random.Random, lang: str) -> Drafted:
    """ABSENT FILE: the question names a runbook that was never written; decoys: the RTOs of
    the runbooks that exist."""
    existing = rng.sample(("backup-restore", "dns-cutover", "cert-renewal", "queue-drain"), 3)
    missing = rng.choice(("failover", "region-evacuation", "db-failover"))
    rtos = rng.sample(range(15, 240, 5), 3)
    files = {
        "docs/runbooks/README.md": _lines(
            "# Runbooks",
            "",
            *(f"- [{name}]({name}.md)" for name in existing),
            "",
            f"Planned, not written yet: {missing}.",
        )
    }
    for name, rto in zip(existing, rtos, strict=True):
        files[f"docs/runbooks/{name}.md"] = _lines(
            f"# {name}",
            "",
            f"Target RTO: {rto} minutes",
            "",
            "1. Page the owner.",
            "2. Follow the steps.",
        )
    question = _ask(
        rng,
        lang,
        (
            f"docs/runbooks/{missing}.md 里写的目标 RTO 是多少分钟？",
            f"帮我看一下 {missing} 的 runbook（docs/runbooks/{missing}.md）要求的 RTO。",
        ),
        (
            f"According to docs/runbooks/{missing}.md, what is the target RTO?",
            f"Tell me the RTO the {missing} runbook (docs/runbooks/{missing}.md) sets.",
        ),
    )
    files_ = Files(files, ("docs/runbooks/README.md",), absent=True)
    return question, files_, tuple(str(r) for r in rtos)


def _statement_percent(rng: random.Random, lang: str) -> Drafted:
    """Sibling month files (the question names one); a fraction asked as a percent; decoys:
    the other months and the churn fraction."""
    first = rng.randint(1, 10)
    margins = rng.sample([m for m in range(251, 650) if m % 10], 3)  # 41.2 %, never 41 %
    files = {}
    for n, margin in enumerate(margins):
        month = first + n
        files[f"finance/statements/2026-{month:02d}.md"] = _lines(
            f"# Statement, {MONTHS_EN[month - 1]} 2026",
            "",
            f"- Net sales: {rng.randint(80, 400) * 1000} EUR",
            f"- Gross margin (fraction of net sales): {Decimal(margin) / 1000}",
            f"- Churn (fraction of accounts): {Decimal(rng.randint(11, 60)) / 1000}",
        )
    pick = rng.randrange(3)
    month = first + pick
    percent = f"{Decimal(margins[pick]) / 10}"
    question = _ask(
        rng,
        lang,
        (
            f"{month} 月报表里的毛利率是百分之多少？",
            f"帮我查一下 2026 年 {month} 月的毛利率，用百分比表示。",
        ),
        (
            f"What was the gross margin in the {MONTHS_EN[month - 1]} statement, as a percentage?",
            f"Tell me {MONTHS_EN[month - 1]}'s gross margin in percent.",
        ),
    )
    needed = (f"finance/statements/2026-{month:02d}.md",)
    return question, Files(files, needed, tags=("computed",)), (percent,)


# --- CSV ------------------------------------------------------------------------------------

_KINDS = ("meals", "office", "software", "training")


def _expenses(rng: random.Random, month: int, travel: int) -> tuple[str, int]:
    """A month's expense CSV and its travel total in cents (``travel`` travel rows)."""
    kinds = ["travel"] * travel + [rng.choice(_KINDS) for _ in range(rng.randint(6, 9))]
    rng.shuffle(kinds)
    rows, total = ["booked_on,person,kind,amount_eur,note"], 0
    for kind in kinds:
        cents = rng.randint(12, 400) * 50 if kind == "travel" else rng.randint(500, 30000)
        total += cents if kind == "travel" else 0
        who = rng.choice(("mkoch", "aruiz", "tlee", "jdoe", "pwu"))
        rows.append(f"2026-{month:02d}-{rng.randint(1, 28):02d},{who},{kind},{_money(cents)},")
    return "\n".join(rows) + "\n", total


def _csv_travel_sum(rng: random.Random, lang: str) -> Drafted:
    """CSV sum of one category with decimals (EUR); decoy: the previous month's file."""
    month = rng.randint(2, 12)
    text, total = _expenses(rng, month, rng.randint(3, 4))
    old, _ = _expenses(rng, month - 1, rng.randint(2, 4))
    path = f"expenses/2026-{month:02d}.csv"
    files = {
        path: text,
        f"expenses/2026-{month - 1:02d}.csv": old,
        "expenses/README.md": "One CSV per month; amount_eur includes VAT.\n",
    }
    name = MONTHS_EN[month - 1]
    question = _ask(
        rng,
        lang,
        (
            f"{month} 月份差旅（travel）一共花了多少欧元？",
            f"帮我算一下 2026 年 {month} 月的差旅费用合计。",
        ),
        (
            f"How much did we spend on travel in {name} 2026? Give the total in euros.",
            f"Tell me the total of {name}'s travel expenses (EUR).",
        ),
    )
    return question, Files(files, (path,), tags=("computed",)), (_money(total),)


_TOWNS = ("Leeds", "Porto", "Graz", "Lyon", "Gdansk", "Utrecht", "Bilbao", "Turku", "Brno", "Ghent")
_AREAS = ("North", "South", "East", "West", "Coastal")


def _csv_area_count(rng: random.Random, lang: str) -> Drafted:
    """CSV count of rows matching two conditions; the question says "region", the column is
    ``area``; decoys: the same area's closed stores."""
    area = rng.choice(_AREAS)
    rows = [(area, "open")] * rng.randint(2, 5) + [(area, rng.choice(("closed", "renovating")))]
    rows += [(rng.choice(_AREAS), rng.choice(("open", "open", "closed"))) for _ in range(9)]
    rng.shuffle(rows)
    count = sum(1 for a, s in rows if a == area and s == "open")
    lines = ["store_code,city,area,opened,status"]
    for n, (a, status) in enumerate(rows):
        lines.append(f"S{100 + n * 7},{rng.choice(_TOWNS)},{a},{2015 + n % 10},{status}")
    files = {"stores/locations.csv": "\n".join(lines) + "\n", "stores/README.md": "Store list.\n"}
    question = _ask(
        rng,
        lang,
        (
            f"{area} 区域目前在营业（open）的门店有几家？",
            f"帮我数一下 {area} 区现在开着的店有多少家。",
        ),
        (
            f"How many of our stores in the {area} region are open right now?",
            f"quick count: open stores in the {area} region?",
        ),
    )
    needed = ("stores/locations.csv",)
    return question, Files(files, needed, tags=("computed",)), (str(count),)


_SUPPLIERS = ("Kessler GmbH", "Nordvik AS", "Baltic Fasteners", "Oriel Components")


def _csv_price_avg(rng: random.Random, lang: str) -> Drafted:
    """CSV average; the question says "price", the column is ``unit_cost_eur``; decoys: the
    other suppliers' rows and the lead-time column."""
    supplier = rng.choice(_SUPPLIERS)
    mine = [rng.randint(150, 9000) for _ in range(rng.randint(3, 4))]
    mine[-1] += -sum(mine) % len(mine)  # an average exact to the cent
    rows = [(supplier, c) for c in mine]
    others = [s for s in _SUPPLIERS if s != supplier]
    rows += [(rng.choice(others), rng.randint(150, 9000)) for _ in range(rng.randint(5, 8))]
    rng.shuffle(rows)
    lines = ["part_no,description,supplier,unit_cost_eur,lead_time_days"]
    for n, (who, cents) in enumerate(rows):
        part = rng.choice(("bracket", "hinge", "bolt M8", "gasket", "bearing", "spring"))
        lines.append(f"P-{4100 + n * 13},{part},{who},{_money(cents)},{rng.randint(3, 40)}")
    files = {"purchasing/parts.csv": "\n".join(lines) + "\n"}
    question = _ask(
        rng,
        lang,
        (
            f"从 {supplier} 采购的零件平均单价是多少欧元？",
            f"帮我算一下 {supplier} 供货的零件平均价格。",
        ),
        (
            f"What's the average price of the parts we buy from {supplier}?",
            f"Tell me the mean unit price of {supplier}'s parts, in euros.",
        ),
    )
    average = _money(sum(mine) // len(mine))
    needed = ("purchasing/parts.csv",)
    return question, Files(files, needed, tags=("computed",)), (average,)


def _absent_month(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: a month after the CSV's last row; decoys: the channel's last two months."""
    last = rng.randint(4, 9)
    channels = ("web", "ios", "android", "partner")
    values = {(m, c): rng.randint(120, 4800) for m in range(1, last + 1) for c in channels}
    lines = ["month,channel,new_accounts"]
    lines += [f"2026-{m:02d},{c},{v}" for (m, c), v in values.items()]
    files = {
        "growth/signups.csv": "\n".join(lines) + "\n",
        "growth/README.md": "signups.csv is updated after each month closes.\n",
    }
    channel = rng.choice(channels)
    month = last + rng.randint(1, 2)
    question = _ask(
        rng,
        lang,
        (
            f"2026 年 {month} 月通过 {channel} 渠道新增了多少账户？",
            f"帮我查一下 {month} 月 {channel} 的新注册数。",
        ),
        (
            f"How many new accounts came from {channel} in {MONTHS_EN[month - 1]} 2026?",
            f"Tell me {channel}'s signups for {MONTHS_EN[month - 1]} 2026.",
        ),
    )
    decoys = (str(values[(last, channel)]), str(values[(last - 1, channel)]))
    return question, Files(files, ("growth/signups.csv",), absent=True), decoys


# --- logs and text --------------------------------------------------------------------------


def _payments_log(rng: random.Random, day: dt.date, error_at: int) -> tuple[str, tuple[str, str]]:
    """A day's payment log, one ERROR line (at ``error_at``) among INFO/WARN lines with the
    same fields: the text, and the ERROR's (upstream, request id)."""
    lines: list[str] = []
    error = ("", "")
    for n in range(11):
        level = "ERROR" if n == error_at else rng.choice(("INFO", "INFO", "INFO", "WARN"))
        req = f"r-{rng.getrandbits(24):06x}"
        upstream = f"psp-{rng.choice(('eu', 'us', 'ap', 'sa'))}-{rng.randint(1, 9)}.pay.example.com"
        status, took = {"INFO": (200, 180), "WARN": (429, 900), "ERROR": (502, 30000)}[level]
        tail = {"INFO": "", "WARN": " retrying", "ERROR": " giving up"}[level]
        stamp = f"{day}T{9 + n // 4:02d}:{n * 5 % 60:02d}:{rng.randint(0, 59):02d}Z"
        lines.append(
            f"{stamp} {level:<5} req={req} upstream={upstream} status={status} "
            f"took={took + rng.randint(0, 99)}ms{tail}"
        )
        if level == "ERROR":
            error = (upstream, req)
    return "\n".join(lines) + "\n", error


def _log_error_fields(rng: random.Random, lang: str) -> Drafted:
    """A log whose INFO/WARN lines carry the same fields as its one ERROR line; an id and a
    host; decoy: the previous day's log with its own ERROR."""
    day = dt.date(2026, rng.randint(1, 12), rng.randint(2, 28))
    text, error = _payments_log(rng, day, rng.randint(3, 10))
    old, _ = _payments_log(rng, day - dt.timedelta(days=1), rng.randint(1, 9))
    path = f"logs/payments-{day}.log"
    files = {path: text, f"logs/payments-{day - dt.timedelta(days=1)}.log": old}
    question = _ask(
        rng,
        lang,
        (
            f"{day} 那天的支付日志里有一条 ERROR，它打到的是哪个 upstream？请求 id 是什么？",
            f"帮我查一下 {day} 支付日志中 ERROR 那条请求的 id 和 upstream 主机。",
        ),
        (
            f"On {day} one payment request failed with an ERROR. Which upstream did it hit, and "
            "what was the request id?",
            f"Tell me the request id and the upstream host of the ERROR in the payments log of "
            f"{day}.",
        ),
    )
    return question, Files(files, (path,)), error


def _perf_units(rng: random.Random, lang: str) -> Drafted:
    """A difference across two files in different units (ms and s); decoys: p50 and p99."""
    base = [rng.randint(120, 300), rng.randint(400, 1400), rng.randint(1500, 3000)]
    drop = rng.randint(20, 250)
    after = [base[0] - rng.randint(5, 60), base[1] - drop, base[2] - rng.randint(10, 400)]
    files = {
        "perf/baseline.txt": _lines(
            "run: baseline",
            f"requests: {rng.randint(10, 50) * 1000}",
            f"p50: {base[0]} ms",
            f"p95: {base[1]} ms",
            f"p99: {base[2]} ms",
        ),
        "perf/after-cache.txt": _lines(
            "run: after-cache (read cache on)",
            "latency in seconds",
            *(
                f"{p} {Decimal(v) / 1000:.3f}"
                for p, v in zip(("p50", "p95", "p99"), after, strict=True)
            ),
        ),
        "perf/README.md": "Load-test runs. Same load profile for every run.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "加了缓存之后，p95 延迟比 baseline 降了多少毫秒？",
            "帮我算一下 after-cache 相比 baseline，p95 少了几毫秒。",
        ),
        (
            "By how many milliseconds did p95 latency drop from the baseline run to the "
            "after-cache run?",
            "Tell me how much faster p95 got with the cache, in ms (baseline vs after-cache).",
        ),
    )
    needed = ("perf/baseline.txt", "perf/after-cache.txt")
    return question, Files(files, needed, tags=("computed",)), (str(drop),)


_TOPICS = (
    ("短信服务商选型", "SMS provider selection"),
    ("日志平台选型", "logging platform selection"),
    ("CDN 供应商续约", "CDN vendor renewal"),
)
_VENDORS = ("Kestrel", "Bluefin", "Lumen", "Corvid", "Halyard", "Tessel")


def _zh_day(day: dt.date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


def _note(topic: str, day: dt.date, people: list[str], vendors: list[str], decision: str) -> str:
    return _lines(
        f"会议纪要：{topic}",
        f"时间：{_zh_day(day)} 14:00",
        f"参会人：{'、'.join(people)}",
        "",
        "一、讨论",
        f"候选：{'、'.join(vendors)}。{people[1]}认为 {vendors[2]} 价格最低，但稳定性存疑。",
        "",
        "二、决定",
        decision,
    )


def _zh_meeting(rng: random.Random, lang: str) -> Drafted:
    """A Chinese meeting note: a decision, an owner, a date (three values; an English question
    about a Chinese-named file); decoys: the other action item and the earlier meeting's
    tentative choice."""
    topic, topic_en = rng.choice(_TOPICS)
    people = _zh_people(rng, 5)
    vendors = rng.sample(_VENDORS, 3)
    day = dt.date(2026, rng.randint(3, 10), rng.randint(1, 20))
    due = day + dt.timedelta(days=rng.randint(10, 40))
    other_due = day + dt.timedelta(days=rng.randint(3, 9))
    owner, other = people[2], people[3]
    final = _note(topic, day, people[:4], vendors, f"选用 {vendors[0]}。") + _lines(
        "",
        "三、待办",
        f"1. 迁移与切换：负责人 {owner}，截止 {_zh_day(due)}。",
        f"2. 合同审核：负责人 {other}，截止 {_zh_day(other_due)}。",
    )
    early = day - dt.timedelta(days=14)
    draft = _note(topic, early, people[1:], vendors, f"暂定 {vendors[1]}，下次会议确认。")
    path = f"会议纪要/{day} {topic}.txt"
    files = {path: final, f"会议纪要/{early} {topic}（初选）.txt": draft}
    md = f"{day.month}月{day.day}日"
    question = _ask(
        rng,
        lang,
        (
            f"帮我查一下 {md}{topic}的会最后定了哪家？迁移谁负责？截止日期是哪天？",
            f"{md}那次{topic}会议，结论选的是哪家，迁移的负责人和截止时间分别是什么？",
        ),
        (
            f"In the {topic_en} meeting of {MONTHS_EN[day.month - 1]} {day.day}: which vendor "
            "did they pick, who owns the migration, and what is the deadline?",
            f"Tell me the outcome of the {topic_en} meeting on {day}: the chosen vendor, the "
            "migration owner and the due date.",
        ),
    )
    return question, Files(files, (path,)), (vendors[0], owner, due.isoformat())


# --- source code ----------------------------------------------------------------------------


def _py_constant(rng: random.Random, lang: str) -> Drafted:
    """Python constants, two values; decoys: the test's monkeypatched values and the other
    constants."""
    pkg = rng.choice(("uploader", "mediahub", "docstore", "filedrop"))
    max_mb, timeout = rng.choice((15, 25, 40, 64, 100)), rng.choice((20, 30, 45, 90))
    files = {
        f"src/{pkg}/limits.py": _lines(
            '"""Upload and request limits."""',
            "",
            f"MAX_UPLOAD_MB = {max_mb}",
            '"""Largest upload accepted, in megabytes."""',
            f"CHUNK_SIZE_KB = {rng.choice((256, 512, 1024))}",
            f"REQUEST_TIMEOUT_S = {timeout}",
            f"MAX_FILES_PER_BATCH = {rng.randint(5, 12)}",
        ),
        f"src/{pkg}/server.py": _lines(
            f"from {pkg} import limits",
            "",
            "",
            "def accept(size: int) -> bool:",
            "    return size <= limits.MAX_UPLOAD_MB * 1024 * 1024",
        ),
        "tests/test_limits.py": _lines(
            f"from {pkg} import limits, server",
            "",
            "",
            "def test_rejects_big(monkeypatch):",
            '    monkeypatch.setattr(limits, "MAX_UPLOAD_MB", 2)',
            '    monkeypatch.setattr(limits, "REQUEST_TIMEOUT_S", 1)',
            "    assert not server.accept(3 * 1024 * 1024)",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "这个服务允许上传的最大文件是多少 MB？请求超时是几秒？",
            "帮我从代码里查一下：上传大小上限和请求超时各是多少？",
        ),
        (
            "What's the largest upload the app accepts (in MB), and after how many seconds does "
            "a request time out?",
            "Tell me the upload size limit and the request timeout set in the code.",
        ),
    )
    return question, Files(files, (f"src/{pkg}/limits.py",)), (str(max_mb), str(timeout))


def _js_fallback(rng: random.Random, lang: str) -> Drafted:
    """A JavaScript constant, a host string; decoys: the sample env file and the test's host."""
    brand = rng.choice(("shop", "tickets", "atlas", "grove"))
    host = f"api-{rng.choice(('eu', 'us', 'ap'))}-{rng.randint(2, 9)}.{brand}.example.net"
    files = {
        "web/src/api/client.js": _lines(
            "// The build sets VITE_API_HOST; without it the client falls back to production.",
            f'const FALLBACK_HOST = "{host}";',
            "export const API_HOST = import.meta.env.VITE_API_HOST ?? FALLBACK_HOST;",
            f"export const RETRY_LIMIT = {rng.randint(2, 6)};",
            "",
            "export async function getJson(path) {",
            "  const reply = await fetch(`https://${API_HOST}${path}`);",
            "  return reply.json();",
            "}",
        ),
        "web/src/api/client.test.js": _lines(
            'import { vi } from "vitest";',
            'vi.stubEnv("VITE_API_HOST", "api.test.local");',
        ),
        "web/env.sample": f"VITE_API_HOST=api.staging.{brand}.example.net\n",
        "web/package.json": '{\n  "name": "web",\n  "private": true\n}\n',
    }
    question = _ask(
        rng,
        lang,
        (
            "如果没有设置 VITE_API_HOST，前端默认请求哪个 API 主机？",
            "帮我查一下 web 客户端代码里兜底的 API host 是什么。",
        ),
        (
            "If VITE_API_HOST isn't set, which host does the web client talk to?",
            "Tell me the fallback API host in the web client's code.",
        ),
    )
    return question, Files(files, ("web/src/api/client.js",)), (host,)


NEW_TEMPLATES: dict[str, Callable[[random.Random, str], Drafted]] = {
    "yaml_stack_image": _yaml_stack_image,
    "helm_limits": _helm_limits,
    "absent_memory": _absent_memory,
    "chain_db_note": _chain_db,
    "toml_backup": _toml_backup,
    "cargo_workspace": _cargo_workspace,
    "ini_layered": _ini_layered,
    "ansible_hosts": _ansible_hosts,
    "md_pricing": _md_pricing,
    "md_oncall": _md_oncall,
    "team_pages": _team_pages,
    "absent_runbook": _absent_runbook,
    "statement_percent": _statement_percent,
    "csv_travel_sum": _csv_travel_sum,
    "csv_area_count": _csv_area_count,
    "csv_price_avg": _csv_price_avg,
    "absent_month": _absent_month,
    "log_error_fields": _log_error_fields,
    "perf_units": _perf_units,
    "zh_meeting": _zh_meeting,
    "py_constant": _py_constant,
    "js_fallback": _js_fallback,
}
"""The ``templates`` split's templates, by name (none shares a name with ``TEMPLATES``)."""
