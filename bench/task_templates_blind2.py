"""Blind question templates for the generated suite: the ``blind2`` split.

Written without reading how minipi reads files or judges its own answers, and apart from the
templates of ``task_suite.py``, ``task_templates.py`` and ``task_templates_blind.py`` (other
formats, layouts, decoys and phrasings), so a run on them measures whether a green verdict
holds on questions nobody tuned on. Each template is a ``task_suite.Make``: ``(rng, language)
-> (question, files, expect)``, its ``files`` a ``task_templates.Files`` (``needed``: the paths
a person would paste to answer; ``absent``: the asked data or the named file is not there, and
``expect`` holds the decoys a wrong answer would state; ``tags``: ``computed`` when a value is
derived, not quoted).

Formats: Kubernetes manifests (multi-document YAML, a Deployment reading a ConfigMap),
Terraform variables overridden by a .tfvars file, go.mod with a replace directive, a
multi-stage Dockerfile, systemd units with drop-ins and timers, Prometheus alerting rules, an
OpenAPI spec with shared parameters, logrotate configs, Markdown meeting notes where a later
meeting reverses a decision, requirements.txt with a constraints file, an iCalendar file with
Chinese event names, XML sitemaps, TSV benchmark results, a semicolon CSV with decimal commas
(German headers), an access log in Common Log Format, a budget CSV, Chinese shift rosters
(排班表) in Markdown, a Chinese expense-claim CSV (报销单), vCard contacts.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Sequence
from decimal import Decimal

from task_templates import MONTHS_EN, Drafted, Files

__all__ = ["BLIND2_TEMPLATES"]


def _ask(rng: random.Random, lang: str, zh: Sequence[str], en: Sequence[str]) -> str:
    """One of the two phrasings of ``lang``, drawn by the seed."""
    return rng.choice(zh if lang == "zh" else en)


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _distinct(rng: random.Random, make: Callable[[], str], count: int) -> list[str]:
    """``count`` different values of ``make`` (none a substring of another)."""
    values: list[str] = []
    while len(values) < count:
        value = make()
        if not any(value in v or v in value for v in values):
            values.append(value)
    return values


def _euros(cents: int) -> str:
    return f"{Decimal(cents) / 100:.2f}"


_ZH_FAMILY = "孙钱周吴郑王冯陈褚卫蒋沈韩杨朱秦许何吕施"
_ZH_GIVEN = ("海燕", "立新", "春梅", "志远", "晓东", "丽华", "建平", "秀英", "永强", "雪莹")
_FIRST = ("Greta", "Malik", "Ingrid", "Tobias", "Leila", "Caspar", "Nadia", "Oskar", "Farah")
_LAST = ("Hoffmann", "Lindholm", "Ferreira", "Kaminski", "Osei", "Vasquez", "Petrov", "Sato")
_WEEKDAYS_ZH = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")


def _zh_names(rng: random.Random, count: int) -> list[str]:
    return rng.sample([f + g for f in _ZH_FAMILY for g in _ZH_GIVEN], count)


def _people(rng: random.Random, count: int) -> list[tuple[str, str]]:
    return rng.sample([(f, s) for f in _FIRST for s in _LAST], count)


def _month_day(day: dt.date) -> str:
    return f"{MONTHS_EN[day.month - 1]} {day.day}"


# --- Kubernetes -----------------------------------------------------------------------------

_K8S_APPS = ("checkout", "catalog", "payments", "search", "notifier", "accounts")


def _deployment(app: str, replicas: int, tag: str, port: int) -> list[str]:
    return [
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata:",
        f"  name: {app}",
        "  labels:",
        f"    app: {app}",
        "spec:",
        f"  replicas: {replicas}",
        "  selector:",
        "    matchLabels:",
        f"      app: {app}",
        "  template:",
        "    metadata:",
        "      labels:",
        f"        app: {app}",
        "    spec:",
        "      containers:",
        f"        - name: {app}",
        f"          image: registry.acme.io/shop/{app}:{tag}",
        "          ports:",
        f"            - containerPort: {port}",
        "          envFrom:",
        "            - configMapRef:",
        f"                name: {app}-config",
        "          env:",
        "            - name: LOG_FORMAT",
        "              value: json",
    ]


def _config_map(app: str, env: str, pool: int) -> list[str]:
    return [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        f"  name: {app}-config",
        "data:",
        f'  APP_ENV: "{env}"',
        f'  DB_POOL_SIZE: "{pool}"',
        f'  LOG_LEVEL: "{"debug" if env == "staging" else "info"}"',
    ]


def _multi_doc(docs: Sequence[list[str]]) -> str:
    return "---\n".join(_lines(*doc) for doc in docs)


def _k8s_env(
    rng: random.Random, env: str, apps: Sequence[str], tags: Sequence[str], pools: Sequence[int]
) -> dict[str, str]:
    ports = [8080, 8081, 9000]
    deploys = [
        _deployment(a, rng.randint(3, 9) if env == "production" else 1, t, p)
        for a, t, p in zip(apps, tags, ports, strict=True)
    ]
    maps = [_config_map(a, env, pool) for a, pool in zip(apps, pools, strict=True)]
    return {
        f"k8s/{env}/deployments.yaml": _multi_doc(deploys),
        f"k8s/{env}/configmaps.yaml": _multi_doc(maps),
    }


def _k8s_configmap_chain(rng: random.Random, lang: str) -> Drafted:
    """Kubernetes multi-document YAML: an image tag in a Deployment and a setting it reads
    through ``envFrom`` from a ConfigMap in another file; decoys: the sibling apps' tags and
    pools, staging's manifests, the README's example."""
    apps = rng.sample(_K8S_APPS, 3)
    app = apps[0]
    tags = _distinct(
        rng, lambda: f"{rng.randint(1, 2)}.{rng.randint(10, 40)}.{rng.randint(0, 9)}", 6
    )
    pools = rng.sample(range(5, 60), 6)
    order = rng.sample(range(3), 3)
    prod = _k8s_env(
        rng,
        "production",
        [apps[i] for i in order],
        [tags[i] for i in order],
        [pools[i] for i in order],
    )
    staging = _k8s_env(rng, "staging", apps, tags[3:], pools[3:])
    files = {
        **prod,
        **staging,
        "k8s/README.md": _lines(
            "# Manifests",
            "",
            "`kubectl apply -f k8s/<env>/` - one folder per cluster.",
            "Each app reads its settings from the `<app>-config` ConfigMap, e.g.",
            "",
            '    DB_POOL_SIZE: "10"',
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"线上集群的清单里，{app} 部署的镜像 tag 是什么？它拿到的 DB_POOL_SIZE 是多少？",
            f"生产环境的 k8s 配置中，{app} 跑的是哪个镜像版本，数据库连接池大小设的多少？",
        ),
        (
            f"In the production cluster's manifests, which image tag does {app} run, and what "
            "DB_POOL_SIZE does it get?",
            f"For {app} in prod on Kubernetes: what image version is deployed and how big is "
            "its database pool?",
        ),
    )
    needed = ("k8s/production/deployments.yaml", "k8s/production/configmaps.yaml")
    return question, Files(files, needed), (tags[0], str(pools[0]))


# --- Terraform ------------------------------------------------------------------------------

_INSTANCE_TYPES = ("t3.large", "t3.xlarge", "m6i.large", "m6i.2xlarge", "c6i.xlarge", "r6i.large")


def _tf_variables(default_type: str, disk: int) -> str:
    return _lines(
        'variable "environment" {',
        "  type = string",
        "}",
        "",
        'variable "region" {',
        "  type    = string",
        '  default = "eu-central-1"',
        "}",
        "",
        'variable "instance_type" {',
        '  description = "EC2 instance type of the worker nodes"',
        "  type        = string",
        f'  default     = "{default_type}"',
        "}",
        "",
        'variable "node_count" {',
        "  type    = number",
        "  default = 2",
        "}",
        "",
        'variable "disk_size_gb" {',
        '  description = "Root volume of each node, in GB"',
        "  type        = number",
        f"  default     = {disk}",
        "}",
    )


def _tfvars_staging(rng: random.Random, lang: str) -> Drafted:
    """Terraform: staging.tfvars overrides the instance type but not the disk size, which comes
    from the variable's default; decoys: production's values, a commented-out override, the
    example file."""
    default_type, stg_type, prod_type, example_type = rng.sample(_INSTANCE_TYPES, 4)
    disk = rng.choice((30, 40, 50, 60, 80))
    prod_disk, tried = rng.sample(range(100, 520, 20), 2)
    files = {
        "infra/variables.tf": _tf_variables(default_type, disk),
        "infra/main.tf": _lines(
            'resource "aws_launch_template" "nodes" {',
            '  name_prefix   = "${var.environment}-nodes-"',
            "  instance_type = var.instance_type",
            "  block_device_mappings {",
            '    device_name = "/dev/xvda"',
            "    ebs {",
            "      volume_size = var.disk_size_gb",
            "    }",
            "  }",
            "}",
        ),
        "infra/staging.tfvars": _lines(
            'environment   = "staging"',
            f'instance_type = "{stg_type}"',
            f"node_count    = {rng.randint(2, 4)}",
            f"# disk_size_gb = {tried}   # tried for the March load test, reverted",
        ),
        "infra/production.tfvars": _lines(
            'environment   = "production"',
            f'instance_type = "{prod_type}"',
            f"node_count    = {rng.randint(5, 12)}",
            f"disk_size_gb  = {prod_disk}",
        ),
        "infra/terraform.tfvars.example": _lines(
            'environment   = "dev"', f'instance_type = "{example_type}"', "disk_size_gb  = 20"
        ),
        "Makefile": _lines(
            "plan-%:",
            "\tterraform -chdir=infra plan -var-file=$*.tfvars",
            "",
            "apply-%:",
            "\tterraform -chdir=infra apply -var-file=$*.tfvars",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "用 staging.tfvars 部署预发环境时，节点的机型是什么？每台节点的磁盘多大（GB）？",
            "`make apply-staging` 之后，预发环境节点最终的 instance_type 和 disk_size_gb "
            "各是多少？",
        ),
        (
            "When we apply the staging environment (infra/staging.tfvars), which instance type "
            "do the nodes get, and how big is each node's disk in GB?",
            "What instance type and disk size actually end up in effect for staging in our "
            "Terraform setup?",
        ),
    )
    needed = ("infra/staging.tfvars", "infra/variables.tf")
    return question, Files(files, needed), (stg_type, str(disk))


# --- Go modules -----------------------------------------------------------------------------


def _go_mod(module: str, pgx: str, redis: str, replace: str | None, issue: int) -> str:
    lines = [
        f"module github.com/acme/shop/services/{module}",
        "",
        "go 1.22",
        "",
        "require (",
        "\tgithub.com/go-chi/chi/v5 v5.0.12",
        f"\tgithub.com/jackc/pgx/v5 v{pgx}",
        f"\tgithub.com/redis/go-redis/v9 v{redis}",
        ")",
        "",
        "require (",
        "\tgithub.com/jackc/pgpassfile v1.0.0 // indirect",
        "\tgithub.com/jackc/puddle/v2 v2.2.1 // indirect",
        "\tgolang.org/x/sync v0.7.0 // indirect",
        ")",
    ]
    if replace:
        lines += [
            "",
            f"// pgx v{pgx} leaks connections on context cancel (acme/shop#{issue}):",
            f"// every build uses v{replace} until that is sorted out upstream.",
            f"replace github.com/jackc/pgx/v5 => github.com/jackc/pgx/v5 v{replace}",
        ]
    return _lines(*lines)


def _gomod_replace(rng: random.Random, lang: str) -> Drafted:
    """go.mod: the pgx version the build really uses comes from a replace directive, the
    go-redis one from the require block; decoys: the required pgx, the worker module's pgx and
    go-redis, go.sum's lines."""
    pgx, replaced, worker = _distinct(rng, lambda: f"5.{rng.randint(3, 7)}.{rng.randint(0, 6)}", 3)
    redis, worker_redis = _distinct(rng, lambda: f"9.{rng.randint(4, 7)}.{rng.randint(0, 3)}", 2)
    issue = rng.randint(300, 900)
    files = {
        "services/api/go.mod": _go_mod("api", pgx, redis, replaced, issue),
        "services/api/go.sum": _lines(
            f"github.com/jackc/pgx/v5 v{pgx}/go.mod h1:{rng.getrandbits(64):016x}=",
            f"github.com/jackc/pgx/v5 v{replaced} h1:{rng.getrandbits(64):016x}=",
            f"github.com/jackc/pgx/v5 v{replaced}/go.mod h1:{rng.getrandbits(64):016x}=",
            f"github.com/redis/go-redis/v9 v{redis} h1:{rng.getrandbits(64):016x}=",
        ),
        "services/api/cmd/api/main.go": "package main\n\nfunc main() { run() }\n",
        "services/worker/go.mod": _go_mod("worker", worker, worker_redis, None, issue),
        "README.md": "# shop\n\nEach service under services/ is its own Go module.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "api 服务实际编译进去的 pgx 是哪个版本？它依赖的 go-redis 是哪个版本？",
            "services/api 这个 Go 模块构建时最终用的 github.com/jackc/pgx/v5 是多少版本，"
            "go-redis 要求的又是多少？",
        ),
        (
            "Which pgx version does the api service actually get built with, and which go-redis "
            "version does it require?",
            "Looking at the Go module under services/api: what version of "
            "github.com/jackc/pgx/v5 ends up in the build, and what go-redis version is required?",
        ),
    )
    return question, Files(files, ("services/api/go.mod",)), (replaced, redis)


# --- Dockerfile -----------------------------------------------------------------------------

_RUNTIME_IMAGES = (
    "gcr.io/distroless/static-debian12:nonroot",
    "alpine:3.20",
    "debian:12-slim",
    "cgr.dev/chainguard/static:latest",
    "ubuntu:24.04",
)


def _dockerfile_runtime(rng: random.Random, lang: str) -> Drafted:
    """A multi-stage Dockerfile: the final stage's base image and exposed port; decoys: the
    build stage's image, a commented-out older runtime, Dockerfile.dev and compose's ports."""
    runtime, old_runtime = rng.sample(_RUNTIME_IMAGES, 2)
    go_version = rng.choice(("1.21", "1.22", "1.23"))
    port, dev_port, host_port = rng.sample(range(7000, 9999), 3)
    app = rng.choice(("relay", "ingest", "ledger", "courier"))
    files = {
        "Dockerfile": _lines(
            "# syntax=docker/dockerfile:1.7",
            f"ARG GO_VERSION={go_version}",
            "",
            "FROM golang:${GO_VERSION}-bookworm AS build",
            "WORKDIR /src",
            "COPY go.mod go.sum ./",
            "RUN go mod download",
            "COPY . .",
            f"RUN CGO_ENABLED=0 go build -trimpath -o /out/{app} ./cmd/{app}",
            "",
            "FROM build AS test",
            "RUN go test ./...",
            "",
            f"# FROM {old_runtime} AS runtime   (until the base image review; kept for reference)",
            f"FROM {runtime} AS runtime",
            f"COPY --from=build /out/{app} /usr/local/bin/{app}",
            f"EXPOSE {port}",
            f'ENTRYPOINT ["/usr/local/bin/{app}"]',
        ),
        "Dockerfile.dev": _lines(
            f"FROM golang:{go_version}-bookworm",
            "RUN go install github.com/air-verse/air@latest",
            "WORKDIR /src",
            f"EXPOSE {dev_port}",
            'CMD ["air"]',
        ),
        "docker-compose.yml": _lines(
            "services:",
            f"  {app}:",
            "    build:",
            "      context: .",
            "      dockerfile: Dockerfile.dev",
            "    ports:",
            f'      - "{host_port}:{dev_port}"',
        ),
        ".dockerignore": ".git\nbin/\n*.md\n",
        f"cmd/{app}/main.go": "package main\n\nfunc main() {}\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "我们发布出去的镜像（Dockerfile 最后一个阶段）基于哪个基础镜像？对外暴露哪个端口？",
            "Dockerfile 多阶段构建里，最终运行阶段 FROM 的是什么镜像，EXPOSE 了几号端口？",
        ),
        (
            "The image we ship is the last stage of the Dockerfile: which base image is it built "
            "on, and which port does it expose?",
            "In the multi-stage Dockerfile, what does the runtime stage start FROM, and what port "
            "does it EXPOSE?",
        ),
    )
    return question, Files(files, ("Dockerfile",)), (runtime, str(port))


# --- systemd --------------------------------------------------------------------------------

_UNITS = ("billing", "ingest", "mailer", "thumbnails", "exporter")


def _unit(svc: str, user: str, restart: int, port: int) -> str:
    return _lines(
        "[Unit]",
        f"Description={svc.capitalize()} service",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"User={user}",
        f"Group={user}",
        f"WorkingDirectory=/opt/{svc}",
        f"ExecStart=/opt/{svc}/bin/{svc} --listen 127.0.0.1:{port}",
        "Restart=on-failure",
        f"RestartSec={restart}",
        "LimitNOFILE=65536",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    )


def _systemd_dropin(rng: random.Random, lang: str) -> Drafted:
    """systemd: the drop-in's RestartSec overrides the unit's, the User is the unit's; decoys:
    the unit's RestartSec, a commented-out User in the drop-in, the sibling unit's values."""
    svc, other = rng.sample(_UNITS, 2)
    user, other_user = f"{svc}-svc", f"{other}-svc"
    base, other_base = rng.sample(range(2, 10), 2)
    restart, other_restart = rng.sample((10, 15, 20, 30, 45, 60, 90), 2)
    ports = rng.sample(range(8100, 8999), 2)
    files = {
        f"deploy/systemd/{svc}.service": _unit(svc, user, base, ports[0]),
        f"deploy/systemd/{svc}.service.d/override.conf": _lines(
            f"# installed to /etc/systemd/system/{svc}.service.d/",
            "[Service]",
            f"RestartSec={restart}",
            "Environment=GOMAXPROCS=4",
            "# User=root   # only while debugging the cgroup issue, keep commented",
        ),
        f"deploy/systemd/{other}.service": _unit(other, other_user, other_base, ports[1]),
        f"deploy/systemd/{other}.service.d/override.conf": _lines(
            "[Service]", f"RestartSec={other_restart}"
        ),
        "deploy/install.sh": _lines(
            "#!/bin/sh",
            "set -eu",
            "install -m644 deploy/systemd/*.service /etc/systemd/system/",
            "cp -r deploy/systemd/*.service.d /etc/systemd/system/",
            "systemctl daemon-reload",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"{svc} 服务装好之后（连同 drop-in），是以哪个用户运行的？"
            "崩溃后 systemd 隔几秒重启它？",
            f"按仓库里的 systemd 配置，{svc} 跑在哪个系统用户下，挂掉后实际等多少秒才会被拉起来？",
        ),
        (
            f"Once {svc} is installed with its drop-in, which user does it run as, and how many "
            "seconds does systemd wait before restarting it after a crash?",
            f"Going by our systemd units, what account runs the {svc} service, and what's its "
            "effective restart delay in seconds?",
        ),
    )
    needed = (f"deploy/systemd/{svc}.service", f"deploy/systemd/{svc}.service.d/override.conf")
    return question, Files(files, needed), (user, str(restart))


def _absent_timer(rng: random.Random, lang: str) -> Drafted:
    """ABSENT FILE: the question names backup.timer, which does not exist (the backup is run by
    hand); decoys: the times of the two timers that do exist."""
    hours = rng.sample(range(10, 24), 2)
    times = [f"{h:02d}:{rng.randrange(5, 60, 5):02d}" for h in hours]
    files = {
        "deploy/systemd/backup.service": _lines(
            "[Unit]",
            f"Description=Database backup (run by hand for now, see OPS-{rng.randint(100, 999)})",
            "",
            "[Service]",
            "Type=oneshot",
            "User=backup",
            "ExecStart=/opt/backup/run.sh --target s3://acme-backups/prod",
        ),
        "deploy/systemd/cleanup.service": _lines(
            "[Service]", "Type=oneshot", "ExecStart=/opt/jobs/cleanup.sh --older-than 14d"
        ),
        "deploy/systemd/cleanup.timer": _lines(
            "[Unit]",
            "Description=Daily cleanup of temporary uploads",
            "",
            "[Timer]",
            f"OnCalendar=*-*-* {times[0]}:00",
            "Persistent=true",
            "",
            "[Install]",
            "WantedBy=timers.target",
        ),
        "deploy/systemd/report.service": _lines(
            "[Service]", "Type=oneshot", "ExecStart=/opt/jobs/weekly_report.py"
        ),
        "deploy/systemd/report.timer": _lines(
            "[Timer]",
            f"OnCalendar=Mon *-*-* {times[1]}:00",
            "",
            "[Install]",
            "WantedBy=timers.target",
        ),
        "deploy/README.md": _lines(
            "# Scheduled jobs",
            "",
            "Timers: cleanup.timer (daily), report.timer (weekly).",
            "Enable one with `systemctl enable --now <name>.timer`.",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "deploy/systemd/backup.timer 里设的触发时间（OnCalendar）是什么？",
            "备份用的 systemd 定时器 backup.timer 每天几点触发？",
        ),
        (
            "What OnCalendar schedule does deploy/systemd/backup.timer set?",
            "At what time of day does our backup.timer fire the backup job?",
        ),
    )
    files_ = Files(files, ("deploy/systemd/backup.service",), absent=True)
    return question, files_, tuple(times)


# --- Prometheus -----------------------------------------------------------------------------


def _error_rule(name: str, job: str, threshold: int, minutes: int, severity: str) -> list[str]:
    return [
        f"      - alert: {name}HighErrorRate",
        "        expr: |",
        f'          100 * sum(rate(http_requests_total{{job="{job}", code=~"5.."}}[5m]))',
        f'            / sum(rate(http_requests_total{{job="{job}"}}[5m])) > {threshold}',
        f"        for: {minutes}m",
        "        labels:",
        f"          severity: {severity}",
        "        annotations:",
        f'          summary: "{job}: more than {threshold}% of requests fail"',
    ]


def _alert_rules(job: str, warn: tuple[int, int], crit: tuple[int, int], latency: str) -> str:
    name = "".join(part.capitalize() for part in job.split("-"))
    return _lines(
        "groups:",
        f"  - name: {job}.availability",
        "    rules:",
        *_error_rule(name, job, *warn, "warning"),
        *_error_rule(name, job, *crit, "critical"),
        f"      - alert: {name}LatencyP99High",
        "        expr: |",
        "          histogram_quantile(0.99, sum by (le) (",
        f'            rate(http_request_duration_seconds_bucket{{job="{job}"}}[5m]))) > {latency}',
        "        for: 10m",
        "        labels:",
        "          severity: warning",
    )


def _prom_critical(rng: random.Random, lang: str) -> Drafted:
    """Prometheus rules: the threshold and ``for`` of the critical one of two same-named
    alerts; decoys: the warning alert, the disabled legacy rules, the node rules."""
    job = rng.choice(("checkout-api", "orders-api", "gateway", "search-api"))
    warn = (rng.randint(1, 3), rng.choice((10, 15, 20)))
    crit = (rng.choice((6, 7, 8, 10, 12)), rng.randint(2, 4))
    legacy = (crit[0] + rng.choice((3, 5)), crit[1] + 5)
    files = {
        f"monitoring/rules/{job}-alerts.yml": _alert_rules(job, warn, crit, "1.5"),
        f"monitoring/rules/legacy/{job}-alerts.yml.disabled": _alert_rules(
            job, (warn[0] + 1, 30), legacy, "2"
        ),
        "monitoring/rules/node-alerts.yml": _lines(
            "groups:",
            "  - name: node",
            "    rules:",
            "      - alert: NodeDiskFilling",
            "        expr: 100 * (1 - node_filesystem_avail_bytes / node_filesystem_size_bytes)"
            f" > {rng.choice((80, 85, 90))}",
            "        for: 30m",
            "        labels:",
            "          severity: warning",
        ),
        "monitoring/prometheus.yml": _lines(
            "global:",
            "  scrape_interval: 30s",
            "rule_files:",
            "  - rules/*.yml",
            "alerting:",
            "  alertmanagers:",
            "    - static_configs:",
            "        - targets: ['alertmanager:9093']",
        ),
        "monitoring/alertmanager.yml": _lines(
            "route:",
            "  receiver: slack",
            "  routes:",
            "    - matchers: ['severity=\"critical\"']",
            "      receiver: pagerduty",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"我们的告警规则里，{job} 错误率的 critical 告警在错误率超过百分之几时触发？"
            "要持续几分钟才会触发？",
            f"{job} 的 5xx 错误率告警中会呼人的那条（critical），阈值是多少，for 持续多少分钟？",
        ),
        (
            f"In our alerting rules, above what error percentage does the critical {job} "
            "error-rate alert fire, and for how many minutes must it hold first?",
            f"What threshold and 'for' duration (minutes) does the paging error-rate alert for "
            f"{job} use?",
        ),
    )
    needed = (f"monitoring/rules/{job}-alerts.yml",)
    return question, Files(files, needed), (str(crit[0]), str(crit[1]))


def _absent_alert(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: no alert on Postgres replication lag exists (only a recording rule and a
    dashboard threshold); decoys: the dashboard's threshold and the sibling alerts'."""
    lag, conn, redis_mem, deadlocks = rng.sample((30, 45, 60, 75, 80, 85, 90, 120), 4)
    panel = {
        "title": "Postgres",
        "panels": [
            {
                "title": "Replication lag (s)",
                "targets": [{"expr": "pg:replication_lag_seconds:max"}],
                "fieldConfig": {
                    "defaults": {
                        "thresholds": {
                            "steps": [
                                {"color": "green", "value": None},
                                {"color": "red", "value": lag},
                            ]
                        }
                    }
                },
            }
        ],
    }
    files = {
        "monitoring/rules/postgres-alerts.yml": _lines(
            "groups:",
            "  - name: postgres",
            "    rules:",
            "      - alert: PostgresDown",
            "        expr: pg_up == 0",
            "        for: 1m",
            "      - alert: PostgresConnectionsHigh",
            "        expr: 100 * sum(pg_stat_activity_count) / max(pg_settings_max_connections)"
            f" > {conn}",
            "        for: 10m",
            "      - alert: PostgresDeadlocks",
            f"        expr: increase(pg_stat_database_deadlocks[10m]) > {deadlocks}",
        ),
        "monitoring/rules/redis-alerts.yml": _lines(
            "groups:",
            "  - name: redis",
            "    rules:",
            "      - alert: RedisReplicationBroken",
            "        expr: redis_connected_slaves < 1",
            "        for: 2m",
            "      - alert: RedisMemoryHigh",
            f"        expr: 100 * redis_memory_used_bytes / redis_memory_max_bytes > {redis_mem}",
        ),
        "monitoring/rules/recording.yml": _lines(
            "groups:",
            "  - name: recording",
            "    rules:",
            "      - record: pg:replication_lag_seconds:max",
            "        expr: max by (cluster) (pg_replication_lag_seconds)",
        ),
        "monitoring/dashboards/postgres.json": _json(panel),
    }
    question = _ask(
        rng,
        lang,
        (
            "我们的告警规则里，Postgres 主从复制延迟超过多少秒会触发告警？",
            "PostgresReplicationLag 这条告警的阈值是多少秒？",
        ),
        (
            "At how many seconds of replication lag does our Postgres replication-lag alert fire?",
            "What threshold does the PostgresReplicationLag alert in our alerting rules use?",
        ),
    )
    needed = ("monitoring/rules/postgres-alerts.yml",)
    decoys = (str(lag), str(conn), str(redis_mem))
    return question, Files(files, needed, absent=True), decoys


# --- OpenAPI --------------------------------------------------------------------------------


def _limit_param(key: str, maximum: int, default: int) -> list[str]:
    return [
        f"    {key}:",
        "      name: limit",
        "      in: query",
        "      description: Page size.",
        "      schema:",
        "        type: integer",
        "        minimum: 1",
        f"        maximum: {maximum}",
        f"        default: {default}",
    ]


def _list_path(path: str, op: str, limit_ref: str) -> list[str]:
    return [
        f"  {path}:",
        "    get:",
        f"      operationId: {op}",
        "      parameters:",
        '        - $ref: "#/components/parameters/Cursor"',
        f'        - $ref: "#/components/parameters/{limit_ref}"',
        "      responses:",
        '        "200":',
        "          description: A page of results.",
    ]


def _openapi_limit(rng: random.Random, lang: str) -> Drafted:
    """OpenAPI: GET /orders takes its ``limit`` from a component of its own; decoys: the shared
    PageLimit component /customers uses, the frozen v1 spec."""
    default, cust_default, v1_default = rng.sample((10, 15, 20, 25, 30, 50), 3)
    maximum, cust_max, v1_max = rng.sample((100, 150, 200, 250, 300, 500), 3)
    spec = _lines(
        "openapi: 3.1.0",
        "info:",
        "  title: Shop API",
        f"  version: 2.{rng.randint(1, 9)}.0",
        "servers:",
        "  - url: https://api.shop.example/v2",
        "paths:",
        *_list_path("/customers", "listCustomers", "PageLimit"),
        *_list_path("/orders", "listOrders", "OrderLimit"),
        "    post:",
        "      operationId: createOrder",
        "      responses:",
        '        "201":',
        "          description: Created.",
        "  /orders/{orderId}:",
        "    get:",
        "      operationId: getOrder",
        "      responses:",
        '        "200":',
        "          description: The order.",
        "components:",
        "  parameters:",
        "    Cursor:",
        "      name: cursor",
        "      in: query",
        "      schema:",
        "        type: string",
        *_limit_param("PageLimit", cust_max, cust_default),
        *_limit_param("OrderLimit", maximum, default),
    )
    files = {
        "api/openapi.yaml": spec,
        "api/v1/swagger.yaml": _lines(
            'swagger: "2.0"',
            "info:",
            "  title: Shop API",
            "  version: 1.9.3",
            "paths:",
            "  /orders:",
            "    get:",
            "      parameters:",
            "        - name: limit",
            "          in: query",
            "          type: integer",
            f"          maximum: {v1_max}",
            f"          default: {v1_default}",
        ),
        "api/README.md": "api/openapi.yaml is the current (v2) contract; api/v1/ is frozen.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "现行 API 规范里 GET /orders 的 limit 参数默认是多少？最大能传多少？",
            "v2 接口文档里订单列表分页：默认每页几条，limit 上限是多少？",
        ),
        (
            "In the current API spec, what are the default and the maximum value of the limit "
            "parameter of GET /orders?",
            "For listing orders in our v2 OpenAPI contract: how many items does a page hold by "
            "default, and how large may limit be?",
        ),
    )
    return question, Files(files, ("api/openapi.yaml",)), (str(default), str(maximum))


# --- logrotate ------------------------------------------------------------------------------


def _rotate_block(path: str, freq: str, keep: int, size: int, reload: str) -> str:
    return _lines(
        f"{path} {{",
        f"    {freq}",
        f"    rotate {keep}",
        f"    maxsize {size}M",
        "    missingok",
        "    notifempty",
        "    compress",
        "    delaycompress",
        "    sharedscripts",
        "    postrotate",
        f"        {reload}",
        "    endscript",
        "}",
    )


def _logrotate_app(rng: random.Random, lang: str) -> Drafted:
    """logrotate: one app's block sets its own retention and size; decoys: the global defaults,
    nginx's block and the app's old block kept in old/."""
    app = rng.choice(("ledger", "courier", "tessera", "harbor"))
    keep, nginx_keep, old_keep = rng.sample((7, 10, 14, 21, 30, 60, 90), 3)
    size, nginx_size, old_size = rng.sample((50, 100, 200, 250, 500), 3)
    files = {
        "ops/logrotate/logrotate.conf": _lines(
            '# see "man logrotate" for details',
            "weekly",
            "rotate 4",
            "create",
            "dateext",
            "compress",
            "include /etc/logrotate.d",
        ),
        f"ops/logrotate/logrotate.d/{app}": _rotate_block(
            f"/var/log/{app}/*.log",
            rng.choice(("daily", "weekly")),
            keep,
            size,
            f"systemctl kill -s HUP {app}.service",
        ),
        "ops/logrotate/logrotate.d/nginx": _rotate_block(
            "/var/log/nginx/*.log", "daily", nginx_keep, nginx_size, "nginx -s reopen"
        ),
        f"ops/logrotate/old/{app}": _rotate_block(
            f"/var/log/{app}/*.log", "weekly", old_keep, old_size, f"service {app} reload"
        ),
        "ops/README.md": "ops/logrotate/ is synced to /etc/ by the base Ansible role.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"logrotate 对 {app} 的日志保留几份轮转文件？日志长到多少 MB 会被提前轮转？",
            f"按我们的 logrotate 配置，/var/log/{app}/ 下的日志留几份旧文件，"
            "单个文件上限多大（MB）？",
        ),
        (
            f"How many rotated log files does logrotate keep for {app}, and at what size (MB) "
            "does it rotate a log early?",
            f"Per our logrotate setup, what's the retention count and the max size in MB for the "
            f"logs in /var/log/{app}/?",
        ),
    )
    needed = (f"ops/logrotate/logrotate.d/{app}",)
    return question, Files(files, needed), (str(keep), str(size))


# --- Markdown meeting notes -----------------------------------------------------------------

_QUEUES = ("RabbitMQ", "Kafka", "NATS", "Pulsar", "SQS")


def _sync_note(day: dt.date, body: Sequence[str]) -> str:
    return _lines(f"# Architecture sync - {day}", "", *body)


def _notes_reversed(rng: random.Random, lang: str) -> Drafted:
    """A folder of Markdown meeting notes: a decision reversed at a later meeting; decoys: the
    first decision, a draft agenda proposing a third option, the proposal's date."""
    first, final, other = rng.sample(_QUEUES, 3)
    (a_first, a_last), (b_first, b_last), (c_first, _) = _people(rng, 3)
    d0 = dt.date(2026, rng.randint(1, 6), rng.randint(1, 28))
    d1 = d0 + dt.timedelta(days=7)
    d2 = d1 + dt.timedelta(days=rng.choice((14, 21, 28)))
    d3 = d2 + dt.timedelta(days=rng.choice((7, 14)))
    notes = {
        d0: [
            "## Job queue for the import pipeline",
            f"- Options on the table: {first}, {final}, {other}.",
            f"- {a_first} to write up a comparison for next week.",
        ],
        d1: [
            "## Job queue",
            f"- Went through {a_first}'s comparison of {first}, {final} and {other}.",
            f"- **Decision:** go with {first}; best throughput in the comparison.",
            f"- Owner: {a_first} {a_last}.",
        ],
        d2: [
            "## Job queue (revisited)",
            f"- Running {first} ourselves needs a dedicated on-call rotation;",
            f"  {b_first} benchmarked {final} and it covers the import volume.",
            f"- **Decision:** switch to {final}; the {first} spike is dropped.",
            f"- Owner: {b_first} {b_last}.",
        ],
        d3: [
            "## Job queue",
            f"- {final} rollout on track, first consumer in staging.",
            f"- {c_first} raised {other} for the analytics team; no change for imports.",
        ],
    }
    files = {f"notes/{day}-arch-sync.md": _sync_note(day, body) for day, body in notes.items()}
    files["notes/README.md"] = "One file per meeting, named by its date.\n"
    files["notes/drafts/next-agenda.md"] = _lines(
        "# Next sync (draft)", "", f"- Propose moving imports to {other}? ({c_first})"
    )
    question = _ask(
        rng,
        lang,
        (
            "导入流水线的任务队列最后定的是哪个？是哪天的会上定下来的？",
            "翻一下我们的架构例会记录：import pipeline 的消息队列最终选了什么，"
            "哪次会议（日期）拍板的？",
        ),
        (
            "Which job queue did we finally settle on for the import pipeline, and at which "
            "meeting (date) was that decided?",
            "Going through the architecture sync notes: what queue did we end up choosing for "
            "imports, and when was it decided?",
        ),
    )
    needed = (f"notes/{d2}-arch-sync.md",)
    return question, Files(files, needed), (final, d2.isoformat())


# --- pip requirements -----------------------------------------------------------------------


def _requirements_constraints(rng: random.Random, lang: str) -> Drafted:
    """requirements.txt pins Django itself but takes celery's version from constraints.txt;
    decoys: celery's floor, the legacy py38 file, a commented-out pin, kombu's version."""
    django = f"5.{rng.randint(0, 1)}.{rng.randint(2, 9)}"
    minor, patch = rng.choice((3, 4)), rng.randint(0, 5)
    celery, kombu = f"5.{minor}.{patch}", f"5.{minor}.{patch + rng.randint(1, 3)}"
    files = {
        "requirements.txt": _lines(
            "# runtime dependencies; versions not pinned here come from constraints.txt",
            "-c constraints.txt",
            f"Django=={django}",
            "djangorestframework>=3.15",
            "celery[redis]>=5.3",
            "psycopg[binary]>=3.1",
            "requests>=2.28",
            "# sentry-sdk==1.45.0   # re-enable once the new DSN is set up",
        ),
        "constraints.txt": _lines(
            f"# tested together in CI on {dt.date(2026, rng.randint(1, 9), rng.randint(1, 28))}",
            f"celery=={celery}",
            f"kombu=={kombu}",
            f"redis==5.0.{rng.randint(1, 8)}",
            f"requests==2.32.{rng.randint(0, 3)}",
            "urllib3==2.2.2",
            f"psycopg==3.1.{rng.randint(12, 19)}",
            f"djangorestframework==3.15.{rng.randint(1, 2)}",
        ),
        "requirements-dev.txt": _lines(
            "-r requirements.txt", "pytest==8.2.2", "pytest-django==4.8.0", "factory-boy==3.3.0"
        ),
        "requirements/py38-legacy.txt": _lines(
            "# for the old reporting box, do not use for the app image",
            f"Django==4.2.{rng.randint(10, 16)}",
            "celery==5.2.7",
        ),
        "Dockerfile": _lines(
            "FROM python:3.12-slim",
            "COPY requirements.txt constraints.txt ./",
            "RUN pip install --no-cache-dir -r requirements.txt",
            "COPY . /app",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "镜像里执行 pip install -r requirements.txt 之后，"
            "装上的 Django 和 celery 分别是哪个确切版本？",
            "我们后端的运行依赖装完后，Django 和 celery 的具体版本号各是多少？",
        ),
        (
            "When the Dockerfile runs pip install -r requirements.txt, which exact Django and "
            "celery versions get installed?",
            "After installing our runtime requirements, what exact versions of Django and celery "
            "do we end up with?",
        ),
    )
    needed = ("requirements.txt", "constraints.txt")
    return question, Files(files, needed), (django, celery)


# --- iCalendar ------------------------------------------------------------------------------

_PROJECTS = (("星河", "xinghe"), ("青鸟", "qingniao"), ("北斗", "beidou"), ("磐石", "panshi"))


def _vevent(uid: str, day: dt.date, summary: str, extra: Sequence[str] = ()) -> list[str]:
    stamp = day.strftime("%Y%m%d")
    return [
        "BEGIN:VEVENT",
        f"UID:{uid}@calendar.acme.cn",
        f"DTSTAMP:{stamp}T020000Z",
        f"DTSTART;TZID=Asia/Shanghai:{stamp}T100000",
        f"DTEND;TZID=Asia/Shanghai:{stamp}T113000",
        f"SUMMARY:{summary}",
        *extra,
        "END:VEVENT",
    ]


def _calendar(name: str, events: Sequence[list[str]]) -> str:
    head = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Acme//Team Calendar//ZH"]
    head += [f"X-WR-CALNAME:{name}", "X-WR-TIMEZONE:Asia/Shanghai"]
    return _lines(*head, *(line for event in events for line in event), "END:VCALENDAR")


def _ics_days_between(rng: random.Random, lang: str) -> Drafted:
    """iCalendar with Chinese event names: days from the kickoff to the launch review, whose
    first date was cancelled; decoys: the cancelled date, the midterm review, the first phase's
    calendar with the same event names."""
    name, slug = rng.choice(_PROJECTS)
    kickoff = dt.date(2026, rng.randint(1, 6), rng.randint(1, 28))
    midterm = kickoff + dt.timedelta(days=rng.randint(10, 19))
    cancelled = kickoff + dt.timedelta(days=rng.randint(24, 40))
    review = cancelled + dt.timedelta(days=rng.randint(5, 20))
    events = [
        _vevent("k1", kickoff, f"{name}项目启动会", ["LOCATION:3楼大会议室"]),
        _vevent(
            "s1",
            kickoff + dt.timedelta(days=(3 - kickoff.weekday()) % 7 or 7),  # a Thursday
            f"{name}项目周会",
            ["RRULE:FREQ=WEEKLY;BYDAY=TH;COUNT=12"],
        ),
        _vevent("m1", midterm, f"{name}项目中期评审"),
        _vevent(
            "r1",
            cancelled,
            f"{name}项目上线评审",
            ["STATUS:CANCELLED", "DESCRIPTION:改期，见新邀请"],
        ),
        _vevent("r2", review, f"{name}项目上线评审", ["STATUS:CONFIRMED"]),
    ]
    old_kick = dt.date(2025, rng.randint(3, 9), rng.randint(1, 28))
    old = [
        _vevent("k0", old_kick, f"{name}项目启动会"),
        _vevent("r0", old_kick + dt.timedelta(days=rng.randint(50, 80)), f"{name}项目上线评审"),
    ]
    path = f"calendar/{slug}.ics"
    files = {
        path: _calendar(f"{name}项目组", events),
        f"calendar/archive/{slug}-phase1.ics": _calendar(f"{name}项目组（一期）", old),
        "calendar/README.md": _lines(
            "团队日历导出（二期），可直接导入 Outlook 或飞书。", "一期的在 archive/。"
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"按团队日历，{name}项目的上线评审比项目启动会晚多少天？",
            f"{name}项目从启动会到上线评审（以最终确定的那次为准）相隔几天？",
        ),
        (
            f"According to the team calendar, how many days after the {name} kickoff "
            "(项目启动会) is its launch review (上线评审)?",
            f"How many days separate the {name} project's kickoff meeting from its launch review "
            f"in {path}?",
        ),
    )
    days = (review - kickoff).days
    return question, Files(files, (path,), tags=("computed",)), (str(days),)


# --- XML sitemap ----------------------------------------------------------------------------

_PAGES = ("pricing", "careers", "security", "integrations", "partners", "customers", "enterprise")
_POSTS = ("how-we-cut-build-times", "postgres-upgrade-notes", "launch-week-recap", "on-call-101")


def _urlset(domain: str, entries: Sequence[tuple[str, dt.date]]) -> str:
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ]
    for path, day in entries:
        lines += [
            "  <url>",
            f"    <loc>https://{domain}/{path}</loc>",
            f"    <lastmod>{day}</lastmod>",
            "    <changefreq>monthly</changefreq>",
            "  </url>",
        ]
    return _lines(*lines, "</urlset>")


def _sitemap_latest(rng: random.Random, lang: str) -> Drafted:
    """XML sitemaps: the most recently modified page (a max by date) in the pages sitemap;
    decoys: a newer blog post, the index's generation dates."""
    domain = rng.choice(("www.kiln.dev", "www.tidewater.io", "www.parcelkit.com"))
    pages = rng.sample(_PAGES, 5)
    base = dt.date(2026, rng.randint(3, 10), rng.randint(1, 28))
    offsets = rng.sample(range(0, 160), 5)
    page_days = [base - dt.timedelta(days=o) for o in offsets]
    latest = min(range(5), key=lambda i: offsets[i])
    post_days = [base + dt.timedelta(days=rng.randint(1, 9))]
    post_days += [base - dt.timedelta(days=rng.randint(20, 200)) for _ in _POSTS[1:]]
    generated = max(post_days) + dt.timedelta(days=1)
    files = {
        "public/sitemap.xml": _lines(
            '<?xml version="1.0" encoding="UTF-8"?>',
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
            f"  <sitemap><loc>https://{domain}/sitemap-pages.xml</loc>"
            f"<lastmod>{generated}</lastmod></sitemap>",
            f"  <sitemap><loc>https://{domain}/sitemap-blog.xml</loc>"
            f"<lastmod>{generated}</lastmod></sitemap>",
            "</sitemapindex>",
        ),
        "public/sitemap-pages.xml": _urlset(domain, list(zip(pages, page_days, strict=True))),
        "public/sitemap-blog.xml": _urlset(
            domain, [(f"blog/{p}", d) for p, d in zip(_POSTS, post_days, strict=True)]
        ),
        "public/robots.txt": f"User-agent: *\nAllow: /\nSitemap: https://{domain}/sitemap.xml\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "网站的主页面（不算博客文章）里，哪个页面是最近修改的？是哪天？",
            "按 sitemap，除了博客，最近更新过的页面是哪个，lastmod 是哪天？",
        ),
        (
            "Among the site's main pages (blog posts aside), which one was modified most "
            "recently according to the sitemap, and on what date?",
            "Per our sitemaps, which non-blog page has the newest lastmod, and what is it?",
        ),
    )
    expect = (pages[latest], page_days[latest].isoformat())
    return question, Files(files, ("public/sitemap-pages.xml",), tags=("computed",)), expect


# --- TSV ------------------------------------------------------------------------------------

_CONFIGS = ("baseline", "jemalloc", "io_uring", "mimalloc")


def _runs(rng: random.Random, count: int, mean: int) -> list[int]:
    """``count`` rps values around ``mean`` whose average is exactly ``mean``."""
    while True:
        values = [mean + rng.randint(-600, 600) for _ in range(count - 1)]
        last = mean * count - sum(values)
        if abs(last - mean) <= 700:
            return [*values, last]


def _bench_tsv(rng: random.Random, means: dict[str, int], count: int) -> str:
    rows = ["run\tconfig\tthreads\twarmup\trps\tp50_ms\tp99_ms"]
    run = 1
    for config, mean in means.items():
        measured = _runs(rng, count, mean)
        for n, rps in enumerate([mean - rng.randint(900, 2000), *measured]):
            p50 = round(rng.uniform(1.2, 4.8), 2)
            p99 = round(p50 * rng.uniform(3, 7), 2)
            rows.append(f"{run}\t{config}\t16\t{int(n == 0)}\t{rps}\t{p50}\t{p99}")
            run += 1
    return _lines(*rows)


def _tsv_average(rng: random.Random, lang: str) -> Drafted:
    """TSV: the average of one column over one config's measured rows (warm-up rows excluded);
    decoys: the warm-up row, the other configs, the previous results file."""
    config = rng.choice(_CONFIGS[1:])
    day = dt.date(2026, rng.randint(2, 11), rng.randint(2, 28))
    before = day - dt.timedelta(days=rng.randint(5, 20))
    means = {c: rng.randint(80, 190) * 100 for c in _CONFIGS}
    old_means = {c: m - rng.randint(5, 30) * 10 for c, m in means.items()}
    count = rng.choice((4, 5))
    path = f"bench/results/{day}.tsv"
    files = {
        path: _bench_tsv(rng, means, count),
        f"bench/results/{before}.tsv": _bench_tsv(rng, old_means, count),
        "bench/README.md": _lines(
            "# Load benchmarks",
            "",
            "One TSV per run day. The first run of each config has warmup=1 and is discarded",
            "from every average.",
        ),
        "bench/run.sh": '#!/bin/sh\nwrk -t16 -c256 -d60s http://127.0.0.1:8080/ "$@"\n',
    }
    question = _ask(
        rng,
        lang,
        (
            f"最新一轮压测结果里，{config} 配置去掉预热轮之后的平均 rps 是多少？",
            f"帮我算下 {day} 的 benchmark TSV 里 {config} 正式跑的几轮（warmup=0）平均每秒请求数。",
        ),
        (
            f"In the latest benchmark results, what's the average rps of the {config} "
            "configuration over its measured runs (warm-up excluded)?",
            f"From bench/results/{day}.tsv, average the rps of the non-warm-up {config} runs.",
        ),
    )
    return question, Files(files, (path,), tags=("computed",)), (str(means[config]),)


# --- semicolon CSV --------------------------------------------------------------------------

_CUSTOMERS = (
    "Brandt Logistik GmbH",
    "Keller Bau AG",
    "Nordlicht Medien",
    "Vogel Partner",
    "Hansen Elektro KG",
    "Sommer Feinkost",
)


def _invoice_rows(
    rng: random.Random, customers: Sequence[str], asked_open: Sequence[int]
) -> list[tuple[str, int, str]]:
    """(customer, cents, status) rows: the asked customer's open ones plus noise."""
    rows = [(customers[0], cents, "offen") for cents in asked_open]
    rows += [(customers[0], rng.randint(4000, 90000), s) for s in ("bezahlt", "storniert")]
    for customer in customers[1:]:
        for _ in range(rng.randint(2, 3)):
            status = rng.choice(("offen", "bezahlt", "bezahlt"))
            rows.append((customer, rng.randint(4000, 90000), status))
    rng.shuffle(rows)
    return rows


def _invoice_csv(rng: random.Random, rows: Sequence[tuple[str, int, str]], quarter: int) -> str:
    lines = ["Rechnungsnr;Kunde;Rechnungsdatum;Betrag (EUR);Status"]
    for n, (customer, cents, status) in enumerate(rows):
        day = f"{rng.randint(1, 28):02d}.{(quarter - 1) * 3 + 1 + n % 3:02d}.2026"
        amount = f"{cents // 100},{cents % 100:02d}"
        lines.append(f"RE-2026-{quarter}{n + 101:03d};{customer};{day};{amount};{status}")
    return _lines(*lines)


def _semicolon_sum(rng: random.Random, lang: str) -> Drafted:
    """A semicolon CSV with decimal commas and German headers and statuses: the sum of one
    customer's open invoices; decoys: its paid and cancelled ones, the other customers', the
    first quarter's file."""
    customers = rng.sample(_CUSTOMERS, 4)
    asked = customers[0]
    open_cents = [rng.randint(4000, 32000) for _ in range(rng.randint(2, 3))]
    q1_open = [rng.randint(4000, 32000) for _ in range(2)]
    files = {
        "exports/rechnungen_2026-Q2.csv": _invoice_csv(
            rng, _invoice_rows(rng, customers, open_cents), 2
        ),
        "exports/rechnungen_2026-Q1.csv": _invoice_csv(
            rng, _invoice_rows(rng, customers, q1_open), 1
        ),
        "exports/README.md": _lines(
            "ERP export, one file per quarter: semicolon-separated, decimal comma.",
            "Status: offen = open, bezahlt = paid, storniert = cancelled.",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"2026 年第二季度导出的发票里，{asked} 还没付的（状态 offen）一共多少欧元？",
            f"帮我算一下 Q2 发票导出中 {asked} 仍未结清的发票总额（欧元）。",
        ),
        (
            f"What's the total of {asked}'s still-open invoices in the Q2 2026 export, in euros?",
            f"Add up the unpaid (offen) invoices of {asked} in exports/rechnungen_2026-Q2.csv.",
        ),
    )
    needed = ("exports/rechnungen_2026-Q2.csv",)
    return question, Files(files, needed, tags=("computed",)), (_euros(sum(open_cents)),)


# --- access log -----------------------------------------------------------------------------

_REQUESTS = (
    ("GET", "/", 200),
    ("GET", "/api/items", 200),
    ("GET", "/api/items/42", 404),
    ("POST", "/api/cart", 201),
    ("GET", "/static/app.js", 304),
    ("POST", "/api/login", 401),
    ("GET", "/healthz", 200),
)


def _hour_counts(rng: random.Random, busiest: int) -> dict[int, int]:
    counts = {hour: rng.randint(1, 5) for hour in range(8, 21)}
    counts[busiest] = max(counts.values()) + rng.randint(3, 7)
    return counts


def _access_log(rng: random.Random, day: dt.date, counts: dict[int, int]) -> str:
    stamp = f"{day.day:02d}/{MONTHS_EN[day.month - 1][:3]}/{day.year}"
    lines = []
    for hour, count in sorted(counts.items()):
        for minute, second in sorted(
            (rng.randint(0, 59), rng.randint(0, 59)) for _ in range(count)
        ):
            method, path, status = rng.choice(_REQUESTS)
            ip = f"203.0.113.{rng.randint(2, 250)}"
            when = f"[{stamp}:{hour:02d}:{minute:02d}:{second:02d} +0000]"
            lines.append(
                f'{ip} - - {when} "{method} {path} HTTP/1.1" {status} {rng.randint(120, 9000)}'
            )
    return _lines(*lines)


def _access_busiest_hour(rng: random.Random, lang: str) -> Drafted:
    """An access log in Common Log Format: the hour with the most requests and its count (a max
    over counts); decoys: the rotated previous day's log with a busier other hour."""
    day = dt.date(2026, rng.randint(1, 12), rng.randint(2, 28))
    busiest, old_busiest = rng.sample(range(10, 20), 2)
    counts = _hour_counts(rng, busiest)
    while counts[busiest] == busiest:
        counts = _hour_counts(rng, busiest)
    old_counts = _hour_counts(rng, old_busiest)
    old_counts[old_busiest] = counts[busiest] + rng.randint(2, 5)
    files = {
        "logs/access.log": _access_log(rng, day, counts),
        "logs/access.log.1": _access_log(rng, day - dt.timedelta(days=1), old_counts),
        "logs/error.log": _lines(
            f"{day:%Y/%m/%d} 09:12:44 [warn] 17#17: *88 upstream response is buffered",
            f"{day:%Y/%m/%d} 16:40:02 [error] 17#17: *301 connect() failed (111)",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "logs/access.log 里一天中哪个小时的请求最多？那个小时一共有多少条请求？",
            "看一下当前的访问日志（不是轮转出去的那个），最忙的是几点那个小时，有多少个请求？",
        ),
        (
            "In logs/access.log, which hour of the day saw the most requests, and how many "
            "requests came in during that hour?",
            "From the current access log (not the rotated one), what was the busiest hour and its "
            "request count?",
        ),
    )
    expect = (str(busiest), str(counts[busiest]))
    return question, Files(files, ("logs/access.log",), tags=("computed",)), expect


# --- budget CSV -----------------------------------------------------------------------------

_BUDGET_LINES = {
    "Engineering": ("Cloud hosting", "Contractors", "Software licenses", "Hardware"),
    "Marketing": ("Paid search", "Events", "Agency fees"),
    "Sales": ("Travel", "CRM seats", "Commissions"),
    "Operations": ("Office rent", "Insurance", "Facilities"),
}


def _budget_csv(rng: random.Random, lean: float) -> tuple[str, dict[str, int]]:
    """A budget CSV and each department's budget minus spent."""
    rows = ["department,line_item,budget_usd,spent_usd,forecast_usd"]
    left: dict[str, int] = {}
    for dept, items in _BUDGET_LINES.items():
        left[dept] = 0
        for item in items:
            budget = rng.randint(20, 400) * 500
            spent = round(budget * rng.uniform(0.25, lean) / 10) * 10
            forecast = round(budget * rng.uniform(0.9, 1.15) / 10) * 10
            rows.append(f"{dept},{item},{budget},{spent},{forecast}")
            left[dept] += budget - spent
    return _lines(*rows), left


def _budget_remaining(rng: random.Random, lang: str) -> Drafted:
    """A budget CSV: one department's total budget minus total spent (a sum and a difference);
    decoys: the forecast column, the other departments, last year's sheet."""
    dept = rng.choice(tuple(_BUDGET_LINES))
    text, left = _budget_csv(rng, 0.95)
    old, _ = _budget_csv(rng, 1.05)
    files = {
        "finance/budget_2026.csv": text,
        "finance/budget_2025.csv": old,
        "finance/README.md": _lines(
            "# Budgets",
            "",
            "All figures in USD. spent_usd is as of the last month-end close; forecast_usd is",
            "the full-year forecast.",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"2026 年预算表里，{dept} 部门所有预算科目加起来还剩多少美元没花（预算减已花费）？",
            f"{dept} 今年的预算还剩多少？按所有科目的 budget 合计减去 spent 合计来算。",
        ),
        (
            f"In the 2026 budget sheet, how much of {dept}'s budget is left unspent across all "
            "its line items (budget minus spent)?",
            f"How many dollars does {dept} have left for 2026 - total budget minus total spent?",
        ),
    )
    files_ = Files(files, ("finance/budget_2026.csv",), tags=("computed",))
    return question, files_, (str(left[dept]),)


# --- Chinese shift roster -------------------------------------------------------------------

Shift = tuple[str, str, str]


def _shifts(rng: random.Random, names: Sequence[str], nights: int) -> list[Shift]:
    """Seven days of (day, evening, night) shifts; ``names[0]`` works ``nights`` nights and two
    day shifts."""
    person, others = names[0], list(names[1:])
    night_days = rng.sample(range(7), nights)
    day_shifts = rng.sample([d for d in range(7) if d not in night_days], 2)
    week: list[Shift] = []
    for d in range(7):
        night = person if d in night_days else rng.choice(others)
        white, evening = rng.sample([n for n in others if n != night], 2)
        week.append((person if d in day_shifts else white, evening, night))
    return week


def _roster_md(week: int, monday: dt.date, shifts: Sequence[Shift]) -> str:
    rows = [
        "| 日期 | 星期 | 白班 08:00-16:00 | 中班 16:00-24:00 | 夜班 00:00-08:00 |",
        "|---|---|---|---|---|",
    ]
    for d, (white, evening, night) in enumerate(shifts):
        day = monday + dt.timedelta(days=d)
        rows.append(
            f"| {day.month}月{day.day}日 | {_WEEKDAYS_ZH[d]} | {white} | {evening} | {night} |"
        )
    sunday = monday + dt.timedelta(days=6)
    return _lines(f"# 运维值班排班表 2026年第{week}周（{monday} ~ {sunday}）", "", *rows)


_ROSTER_RULES = _lines(
    "# 排班规则",
    "",
    "- 每人每周夜班不超过 3 次。",
    "- 调班需提前一天告知组长，并在群里同步。",
    "- 排班表每周五发布下一周的。",
)


def _zh_roster_nights(rng: random.Random, lang: str) -> Drafted:
    """A Chinese roster in Markdown: a count of one person's night shifts; decoys: their day
    shifts, the week before's roster."""
    names = _zh_names(rng, 6)
    person = names[0]
    week = rng.randint(8, 40)
    monday = dt.date.fromisocalendar(2026, week, 1)
    nights, old_nights = rng.sample((1, 2, 3), 2)
    path = f"排班/2026-W{week:02d}.md"
    files = {
        path: _roster_md(week, monday, _shifts(rng, names, nights)),
        f"排班/2026-W{week - 1:02d}.md": _roster_md(
            week - 1, monday - dt.timedelta(days=7), _shifts(rng, names, old_nights)
        ),
        "排班/规则.md": _ROSTER_RULES,
    }
    question = _ask(
        rng,
        lang,
        (
            f"第{week}周的排班表里，{person}一共排了几个夜班？",
            f"{monday.month}月{monday.day}日开始的那一周，{person}要上几次夜班？",
        ),
        (
            f"In the shift roster for week {week}, how many night shifts (夜班) is {person} "
            "scheduled for?",
            f"How many night shifts does {person} work in the week starting {_month_day(monday)}, "
            "2026?",
        ),
    )
    return question, Files(files, (path,), tags=("computed",)), (str(nights),)


def _absent_zh_roster(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: the asked date is in the week after the last published roster; decoys: the night
    shifts of the same weekday in the two weeks that are there."""
    names = _zh_names(rng, 6)
    week = rng.randint(8, 40)
    monday = dt.date.fromisocalendar(2026, week, 1)
    first = _shifts(rng, names, rng.randint(1, 3))
    second = _shifts(rng, names, rng.randint(1, 3))
    weekday = rng.randint(0, 6)
    asked = monday + dt.timedelta(days=14 + weekday)
    paths = (f"排班/2026-W{week:02d}.md", f"排班/2026-W{week + 1:02d}.md")
    files = {
        paths[0]: _roster_md(week, monday, first),
        paths[1]: _roster_md(week + 1, monday + dt.timedelta(days=7), second),
        "排班/规则.md": _ROSTER_RULES,
    }
    question = _ask(
        rng,
        lang,
        (
            f"{asked.month}月{asked.day}日（{_WEEKDAYS_ZH[weekday]}）的夜班是谁值？",
            f"排班表上 {asked} 那天的夜班安排的是谁？",
        ),
        (
            f"Who is on the night shift (夜班) on {_month_day(asked)}, 2026?",
            f"According to the shift roster, who works the night shift on {asked}?",
        ),
    )
    decoys = tuple(dict.fromkeys((first[weekday][2], second[weekday][2])))
    return question, Files(files, paths, absent=True), decoys


# --- Chinese expense claims -----------------------------------------------------------------

_CLAIM_KINDS = (
    ("差旅-机票", 60000, 180000),
    ("差旅-住宿", 30000, 120000),
    ("市内交通", 1500, 9000),
    ("业务招待", 20000, 80000),
    ("办公用品", 2000, 30000),
)


def _claims_csv(
    rng: random.Random, names: Sequence[str], month: int, approved: int
) -> tuple[str, int]:
    """A month's claims CSV and the total in cents of ``names[0]``'s ``approved`` approved
    claims (they also have a rejected and a pending one)."""
    person = names[0]
    statuses = ["已批准"] * approved + ["已驳回", "审批中"]
    rows = [(person, status) for status in statuses]
    rows += [(name, rng.choice(("已批准", "已批准", "审批中"))) for name in names[1:] for _ in "ab"]
    rng.shuffle(rows)
    lines = ["单号,报销人,部门,日期,类别,金额（元）,状态,备注"]
    total = 0
    for n, (name, status) in enumerate(rows):
        kind, low, high = rng.choice(_CLAIM_KINDS)
        cents = rng.randint(low, high)
        if name == person and status == "已批准":
            total += cents
        note = "超标准，请补充说明" if status == "已驳回" else ""
        day = f"2026-{month:02d}-{rng.randint(1, 28):02d}"
        lines.append(
            f"BX{month:02d}{n + 1:03d},{name},研发部,{day},{kind},{_euros(cents)},{status},{note}"
        )
    return _lines(*lines), total


def _zh_claims_total(rng: random.Random, lang: str) -> Drafted:
    """A Chinese expense-claim CSV: the sum of one person's approved claims; decoys: their
    rejected and pending claims, the other people, the previous month's file."""
    names = _zh_names(rng, 5)
    person = names[0]
    month = rng.randint(2, 12)
    text, total = _claims_csv(rng, names, month, rng.randint(2, 3))
    old, _ = _claims_csv(rng, names, month - 1, 2)
    path = f"财务/报销单_2026年{month:02d}月.csv"
    files = {
        path: text,
        f"财务/报销单_2026年{month - 1:02d}月.csv": old,
        "财务/报销制度.md": _lines(
            "# 报销制度（摘要）",
            "",
            "- 住宿标准：一线城市每晚 600 元，其他城市每晚 450 元。",
            "- 报销须在费用发生后 30 天内提交。",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"{month}月的报销单里，{person}已经批下来的报销一共多少钱？",
            f"帮我算一下{person} 2026年{month}月审批通过的报销总额。",
        ),
        (
            f"In the {MONTHS_EN[month - 1]} 2026 expense claims, how much did {person} get "
            "approved in total?",
            f"Sum up {person}'s approved (已批准) reimbursements for {MONTHS_EN[month - 1]} 2026.",
        ),
    )
    return question, Files(files, (path,), tags=("computed",)), (_euros(total),)


# --- vCard ----------------------------------------------------------------------------------


def _vcard(first: str, last: str, org: str, phone: str, birthday: dt.date | None) -> list[str]:
    lines = [
        "BEGIN:VCARD",
        "VERSION:3.0",
        f"FN:{first} {last}",
        f"N:{last};{first};;;",
        f"ORG:{org}",
        f"TEL;TYPE=WORK,VOICE:{phone}",
        f"EMAIL;TYPE=INTERNET:{first.lower()}.{last.lower()}@{org.split(';')[0].lower()}.example",
    ]
    if birthday:
        lines.append(f"BDAY:{birthday}")
    return [*lines, "END:VCARD"]


def _birthday(rng: random.Random) -> dt.date:
    return dt.date(rng.randint(1972, 2001), rng.randint(1, 12), rng.randint(1, 28))


def _absent_vcf_birthday(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: the asked person's vCard has no BDAY; decoys: a namesake's birthday in the
    suppliers' contacts and two colleagues' birthdays."""
    people = _people(rng, 4)
    first, last = people[0]
    birthdays = [_birthday(rng) for _ in range(4)]
    team = [_vcard(first, last, "Acme;Platform", f"+49-30-5550-{rng.randint(1000, 9999)}", None)]
    team += [
        _vcard(f, s, "Acme;Platform", f"+49-30-5550-{rng.randint(1000, 9999)}", b)
        for (f, s), b in zip(people[1:], birthdays[1:], strict=True)
    ]
    namesake = _vcard(first, last, "Brightline;Sales", "+44-20-7946-0321", birthdays[0])
    files = {
        "contacts/team.vcf": _lines(*(line for card in team for line in card)),
        "contacts/suppliers.vcf": _lines(
            *namesake,
            *_vcard("Jorge", "Almeida", "Quayside;Support", "+351-21-555-0192", None),
        ),
        "contacts/README.md": "Exported from the shared address book; team.vcf is our team.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"通讯录里我们团队的 {first} {last} 生日是哪天？",
            f"帮我查一下团队联系人 contacts/team.vcf 里 {first} {last} 的生日。",
        ),
        (
            f"When is {first} {last}'s birthday, according to our team's contacts?",
            f"Look up {first} {last}'s birthday in contacts/team.vcf.",
        ),
    )
    decoys = tuple(b.isoformat() for b in birthdays[:3])
    return question, Files(files, ("contacts/team.vcf",), absent=True), decoys


BLIND2_TEMPLATES: dict[str, Callable[[random.Random, str], Drafted]] = {
    "k8s_configmap_chain": _k8s_configmap_chain,
    "tfvars_staging": _tfvars_staging,
    "gomod_replace": _gomod_replace,
    "dockerfile_runtime": _dockerfile_runtime,
    "systemd_dropin": _systemd_dropin,
    "absent_timer": _absent_timer,
    "prom_critical": _prom_critical,
    "absent_alert": _absent_alert,
    "openapi_limit": _openapi_limit,
    "logrotate_app": _logrotate_app,
    "notes_reversed": _notes_reversed,
    "requirements_constraints": _requirements_constraints,
    "ics_days_between": _ics_days_between,
    "sitemap_latest": _sitemap_latest,
    "tsv_average": _tsv_average,
    "semicolon_sum": _semicolon_sum,
    "access_busiest_hour": _access_busiest_hour,
    "budget_remaining": _budget_remaining,
    "zh_roster_nights": _zh_roster_nights,
    "absent_zh_roster": _absent_zh_roster,
    "zh_claims_total": _zh_claims_total,
    "absent_vcf_birthday": _absent_vcf_birthday,
}
"""The ``blind2`` split's templates, by name (none shares a name with ``task_suite.TEMPLATES``,
``task_templates.NEW_TEMPLATES`` or ``task_templates_blind.BLIND_TEMPLATES``)."""
