"""Blind question templates for the generated suite: the ``blind`` split.

Written without reading how minipi reads files or judges its own answers, and apart from the
templates of ``task_suite.py`` and ``task_templates.py`` (other formats, layouts, decoys and
phrasings), so a run on them measures whether a green verdict holds on questions nobody tuned
on. Each template is a ``task_suite.Make``: ``(rng, language) -> (question, files, expect)``,
its ``files`` a ``task_templates.Files`` (``needed``: the paths a person would paste to
answer; ``absent``: the asked data or the named file is not there, and ``expect`` holds the
decoys a wrong answer would state; ``tags``: ``computed`` when a value is derived, not quoted).

Formats: ``.env`` files layered per environment, docker-compose files, a GitHub Actions
matrix, pyproject.toml, package.json (dependencies, workspace versions), nginx.conf with
includes, a crontab, SQL migrations, a Makefile with a VERSION file, JSON Lines logs, a Keep a
Changelog page, CSV with a Chinese header, Chinese Markdown tables (a weekly report, a stock
take), a plain-text Chinese README, pom.xml with properties, .csproj files, CODEOWNERS.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
from collections.abc import Callable, Sequence

from task_templates import MONTHS_EN, Drafted, Files

__all__ = ["BLIND_TEMPLATES"]


def _ask(rng: random.Random, lang: str, zh: Sequence[str], en: Sequence[str]) -> str:
    """One of the two phrasings of ``lang``, drawn by the seed."""
    return rng.choice(zh if lang == "zh" else en)


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _semver(rng: random.Random, major: tuple[int, int], minor: tuple[int, int]) -> str:
    return f"{rng.randint(*major)}.{rng.randint(*minor)}.{rng.randint(0, 9)}"


def _distinct(rng: random.Random, make: Callable[[], str], count: int) -> list[str]:
    """``count`` different values of ``make`` (none a substring of another)."""
    values: list[str] = []
    while len(values) < count:
        value = make()
        if not any(value in v or v in value for v in values):
            values.append(value)
    return values


_ZH_FAMILY = "韩冯曹彭曾萧田董潘袁蒋蔡余杜沈"
_ZH_GIVEN = ("晓峰", "雅琴", "志强", "婉婷", "建国", "思琪", "文博", "佳怡", "国栋", "若曦")
_HANDLES = (
    "mhartmann",
    "s-okonkwo",
    "lvanderberg",
    "rpetrescu",
    "ayamamoto",
    "dfigueroa",
    "kobrien",
    "jlindgren",
    "tnakashima",
    "bcarvalho",
)


def _zh_names(rng: random.Random, count: int) -> list[str]:
    return rng.sample([f + g for f in _ZH_FAMILY for g in _ZH_GIVEN], count)


# --- .env files -----------------------------------------------------------------------------


def _env_staging_connect(rng: random.Random, lang: str) -> Drafted:
    """.env layering: staging overrides the host but not the port, which comes from ``.env``;
    decoys: production's host and port, the example file's 5432, redis' port."""
    app = rng.choice(("orders", "ledger", "booking", "courier", "inventory"))
    nums = rng.sample(range(10, 99), 3)
    stg_host, prod_host = f"pg-stg-{nums[0]}.{app}.internal", f"pg-prod-{nums[1]}.{app}.internal"
    port, prod_port = rng.sample([p for p in range(5433, 6999) if p != 6379], 2)
    files = {
        ".env": _lines(
            "# defaults for every environment; .env.$APP_ENV overrides the keys it sets",
            "APP_ENV=development",
            f"APP_NAME={app}",
            "DB_HOST=localhost",
            "# through pgbouncer",
            f"DB_PORT={port}",
            f"DB_NAME={app}",
            "DB_USER=app",
            "REDIS_URL=redis://localhost:6379/0",
            "LOG_LEVEL=debug",
        ),
        ".env.staging": _lines(
            "APP_ENV=staging",
            f"DB_HOST={stg_host}",
            f"DB_NAME={app}_staging",
            f"REDIS_URL=redis://redis-stg-{nums[2]}.{app}.internal:6379/0",
            "LOG_LEVEL=info",
        ),
        ".env.production": _lines(
            "APP_ENV=production",
            f"DB_HOST={prod_host}",
            f"DB_PORT={prod_port}",
            f"DB_NAME={app}",
            "LOG_LEVEL=warning",
        ),
        ".env.example": _lines(
            "# copy to .env and fill in",
            "APP_ENV=development",
            "DB_HOST=db.example.com",
            "DB_PORT=5432",
            "DB_USER=changeme",
            "DB_PASSWORD=changeme",
        ),
        "app/settings.py": _lines(
            "import os",
            "",
            "from dotenv import dotenv_values",
            "",
            "",
            "def load() -> dict[str, str]:",
            '    base = dotenv_values(".env")',
            '    env = os.environ.get("APP_ENV") or base.get("APP_ENV", "development")',
            '    return {**base, **dotenv_values(f".env.{env}")}',
        ),
        "README.md": f"# {app}\n\nStart with `APP_ENV=<env> python -m app`. See app/settings.py.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "如果用 APP_ENV=staging 启动这个应用，它会连哪台数据库主机、哪个端口？",
            "在 staging 下跑起来的话，数据库连的是哪台机器、几号端口？",
        ),
        (
            "If I started the app with APP_ENV=staging, which database host and port would it "
            "connect to?",
            "What would a staging boot of this app talk to for its database - host and port?",
        ),
    )
    return question, Files(files, (".env.staging", ".env")), (stg_host, str(port))


def _env_debug_prod(rng: random.Random, lang: str) -> Drafted:
    """A yes/no question decided by a value: APP_DEBUG in one service's .env.production;
    decoys: the sibling service's production file, the dev .env and the example."""
    svc, other = rng.sample(("api", "web", "worker", "admin"), 2)
    value = rng.choice(("true", "false"))
    flip = "false" if value == "true" else "true"
    files = {
        "deploy/README.md": "In production each service reads services/<name>/.env.production.\n",
        f"services/{svc}/.env": _lines("APP_DEBUG=true", "LOG_LEVEL=debug", "PORT=8000"),
        f"services/{svc}/.env.example": _lines("APP_DEBUG=true", "SECRET_KEY=changeme"),
        f"services/{svc}/.env.production": _lines(
            f"APP_DEBUG={value}",
            f"LOG_LEVEL={'debug' if value == 'true' else 'warning'}",
            "PORT=8000",
            f"SENTRY_DSN=https://{rng.getrandbits(32):08x}@sentry.example.com/{rng.randint(2, 90)}",
        ),
        f"services/{other}/.env": _lines("APP_DEBUG=true", "PORT=3000"),
        f"services/{other}/.env.production": _lines(f"APP_DEBUG={flip}", "PORT=3000"),
    }
    question = _ask(
        rng,
        lang,
        (f"{svc} 服务在生产环境开了 debug 吗？", f"线上的 {svc} 是不是开着调试模式？"),
        (
            f"Is debug mode switched on for the {svc} service in production?",
            f"If I deploy {svc} to prod as configured, will it run with debug on?",
        ),
    )
    return question, Files(files, (f"services/{svc}/.env.production",)), (value,)


# --- docker-compose -------------------------------------------------------------------------


def _compose_published_port(rng: random.Random, lang: str) -> Drafted:
    """docker-compose.yml (named exactly): a published host port and an image tag; decoys:
    the container port, the web's port, and the override file's ports and older Postgres."""
    api_port, web_port = rng.randint(18000, 18999), rng.randint(13000, 13999)
    major, minor = rng.randint(15, 17), rng.randint(1, 9)
    pg, old = f"{major}.{minor}", f"{major - 1}.{rng.randint(1, 9)}"
    suffix = rng.choice(("", "-alpine", "-bookworm"))
    files = {
        "docker-compose.yml": _lines(
            "services:",
            "  web:",
            f"    image: ghcr.io/acme/web:{rng.randint(2, 9)}.{rng.randint(0, 9)}",
            "    ports:",
            f'      - "{web_port}:3000"',
            "    depends_on: [api]",
            "  api:",
            "    build: ./api",
            "    ports:",
            f'      - "{api_port}:8000"',
            "    environment:",
            "      DATABASE_URL: postgres://app:app@db:5432/app",
            "    depends_on: [db, redis]",
            "  db:",
            f"    image: postgres:{pg}{suffix}",
            "    volumes:",
            "      - pgdata:/var/lib/postgresql/data",
            "  redis:",
            "    image: redis:7.2-alpine",
            "volumes:",
            "  pgdata: {}",
        ),
        "docker-compose.override.yml": _lines(
            "# local development: merged automatically by `docker compose up`",
            "services:",
            "  api:",
            "    ports:",
            '      - "8000:8000"',
            "    volumes:",
            "      - ./api:/app",
            "  db:",
            f"    image: postgres:{old}",
            "    ports:",
            '      - "5432:5432"',
        ),
        "api/Dockerfile": 'FROM python:3.12-slim\nEXPOSE 8000\nCMD ["gunicorn", "app:app"]\n',
    }
    question = _ask(
        rng,
        lang,
        (
            "docker-compose.yml 里 api 服务映射到宿主机的端口是多少？db 用的 Postgres 是哪个版本？",
            "只用 docker-compose.yml（不带 override）起服务的话，api 在本机哪个端口？"
            "数据库用的 Postgres 镜像是哪个版本？",
        ),
        (
            "In docker-compose.yml, which host port is the api service published on, and which "
            "Postgres version does the db service run?",
            "If I run `docker compose -f docker-compose.yml up` (no override), on which localhost "
            "port do I reach the api, and which Postgres image version comes up?",
        ),
    )
    return question, Files(files, ("docker-compose.yml",)), (str(api_port), pg)


def _absent_compose_prod(rng: random.Random, lang: str) -> Drafted:
    """ABSENT FILE: the question names docker-compose.prod.yml, which does not exist; decoys:
    the web service's ports in the compose files that do."""
    ports = rng.sample(range(8081, 9899), 3)
    files = {
        "docker-compose.yml": _lines(
            "services:",
            "  web:",
            "    image: ghcr.io/acme/shop-web:latest",
            "    ports:",
            f'      - "{ports[0]}:80"',
            "  worker:",
            "    image: ghcr.io/acme/shop-worker:latest",
        ),
        "docker-compose.override.yml": _lines(
            "services:", "  web:", "    ports:", f'      - "{ports[1]}:80"'
        ),
        "docker-compose.staging.yml": _lines(
            "services:",
            "  web:",
            "    ports:",
            f'      - "{ports[2]}:80"',
            "    environment:",
            "      SHOP_ENV: staging",
        ),
        "deploy/README.md": _lines(
            "# Deploying",
            "",
            "- docker-compose.yml: the base stack",
            "- docker-compose.override.yml: local development (merged automatically)",
            "- docker-compose.staging.yml: the staging host",
            "",
            "Production runs on the Kubernetes cluster (manifests live in the infra repository).",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "docker-compose.prod.yml 里 web 服务映射到宿主机的哪个端口？",
            "帮我看下生产的 compose 文件（docker-compose.prod.yml）给 web 开的是哪个端口。",
        ),
        (
            "Which host port does docker-compose.prod.yml publish the web service on?",
            "Check docker-compose.prod.yml for me: what port is web exposed on in production?",
        ),
    )
    decoys = tuple(str(p) for p in ports)
    return question, Files(files, ("deploy/README.md",), absent=True), decoys


# --- GitHub Actions -------------------------------------------------------------------------

_OSES = ("ubuntu-latest", "macos-latest", "windows-latest")
_PYTHONS = ("3.9", "3.10", "3.11", "3.12")


def _matrix_lines(oses: Sequence[str], pythons: Sequence[str]) -> list[str]:
    quoted = ", ".join('"' + p + '"' for p in pythons)
    return [f"        os: [{', '.join(oses)}]", f"        python-version: [{quoted}]"]


def _gha_matrix(rng: random.Random) -> tuple[list[str], int]:
    """The ``matrix:`` block of a test job and how many jobs it expands to."""
    oses = list(_OSES[: rng.randint(2, 3)])
    pythons = list(_PYTHONS[rng.randint(0, 1) :])[: rng.randint(2, 3)]
    combos = [(o, p) for o in oses for p in pythons]
    excluded = rng.sample(combos[1:], 1 if len(combos) <= 4 else rng.randint(1, 2))
    lines = [*_matrix_lines(oses, pythons), "        exclude:"]
    for os_name, python in excluded:
        lines += [f"          - os: {os_name}", f'            python-version: "{python}"']
    count = len(combos) - len(excluded)
    if rng.random() < 0.5:  # a new python version: a job of its own
        lines += [
            "        include:",
            "          - os: ubuntu-latest",
            '            python-version: "3.13"',
            "            experimental: true",
        ]
        count += 1
    return lines, count


def _gha_matrix_jobs(rng: random.Random, lang: str) -> Drafted:
    """A GitHub Actions matrix with excludes (and maybe an include); a count of jobs (the
    question names the folder); decoys: the lint job and the release workflow's matrix."""
    matrix, count = _gha_matrix(rng)
    ci = _lines(
        "name: CI",
        "on:",
        "  push:",
        "    branches: [main]",
        "  pull_request:",
        "jobs:",
        "  lint:",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "      - uses: actions/checkout@v4",
        "      - run: pipx run ruff check .",
        "  test:",
        "    runs-on: ${{ matrix.os }}",
        f"    timeout-minutes: {rng.choice((15, 20, 25, 30))}",
        "    strategy:",
        "      fail-fast: false",
        "      matrix:",
        *matrix,
        "    steps:",
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        "        with:",
        "          python-version: ${{ matrix.python-version }}",
        "      - run: pip install -e .[test]",
        "      - run: pytest -q",
    )
    release = _lines(
        "name: Release",
        "on:",
        "  push:",
        "    tags: ['v*']",
        "jobs:",
        "  wheels:",
        "    runs-on: ${{ matrix.os }}",
        "    strategy:",
        "      matrix:",
        *_matrix_lines(_OSES, _PYTHONS),
        "    steps:",
        "      - uses: actions/checkout@v4",
        "      - uses: pypa/cibuildwheel@v2.19",
    )
    files = {
        ".github/workflows/ci.yml": ci,
        ".github/workflows/release.yml": release,
        ".github/workflows/docs.yml": _lines(
            "name: Docs",
            "on: [push]",
            "jobs:",
            "  build:",
            "    runs-on: ubuntu-latest",
            "    steps:",
            "      - run: mkdocs build --strict",
        ),
        "pyproject.toml": '[project]\nname = "tidewater"\nrequires-python = ">=3.9"\n',
    }
    question = _ask(
        rng,
        lang,
        (
            "CI 工作流里 test 这个 job 的矩阵展开后一共会跑几个组合？",
            "帮我算一下 .github/workflows 下 CI 的测试矩阵每次推送要起多少个 test job。",
        ),
        (
            "How many jobs does the test matrix of our CI workflow expand to?",
            "Looking at .github/workflows: on each push to main, how many test jobs does the CI "
            "matrix start?",
        ),
    )
    files_ = Files(files, (".github/workflows/ci.yml",), tags=("computed",))
    return question, files_, (str(count),)


# --- Python and JavaScript packaging --------------------------------------------------------


def _pyproject_dep_floor(rng: random.Random, lang: str) -> Drafted:
    """pyproject.toml: the package's version and a dependency's lower bound; decoys: the dev
    group's exact pin, a plugin package beside it with its own values."""
    pkg = rng.choice(("tidewater", "quillmark", "parcelkit", "brightline"))
    version, plugin_version = _distinct(rng, lambda: _semver(rng, (1, 4), (0, 19)), 2)
    floor, dev_pin, plugin_floor = _distinct(
        rng, lambda: f"0.{rng.randint(20, 28)}.{rng.choice((0, 0, 1, 2, 3))}", 3
    )
    files = {
        "pyproject.toml": _lines(
            "[build-system]",
            'requires = ["hatchling>=1.24"]',
            'build-backend = "hatchling.build"',
            "",
            "[project]",
            f'name = "{pkg}"',
            f'version = "{version}"',
            'requires-python = ">=3.10"',
            "dependencies = [",
            f'  "httpx>={floor}",',
            f'  "pydantic>=2.{rng.randint(4, 9)},<3",',
            '  "rich>=13.7",',
            "]",
            "",
            "[project.optional-dependencies]",
            's3 = ["boto3>=1.34"]',
            "",
            "[dependency-groups]",
            f'dev = ["pytest>=8.2", "httpx=={dev_pin}", "respx>=0.21"]',
            "",
            "[tool.ruff]",
            'target-version = "py310"',
        ),
        f"plugins/{pkg}-s3/pyproject.toml": _lines(
            "[project]",
            f'name = "{pkg}-s3"',
            f'version = "{plugin_version}"',
            f'dependencies = ["{pkg}", "httpx>={plugin_floor}", "boto3>=1.34"]',
        ),
        f"src/{pkg}/__init__.py": '"""The package."""\n',
        "README.md": f"# {pkg}\n\nInstall with `pip install {pkg}`; the S3 plugin is separate.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"根目录 pyproject.toml 里 {pkg} 这个包的版本号是多少？运行时要求 httpx 最低哪个版本？",
            f"帮我看看 {pkg} 现在是什么版本，运行依赖里 httpx 的下限是多少。",
        ),
        (
            f"What version is the {pkg} package at, and what is the lowest httpx it accepts at "
            "runtime?",
            f"Tell me {pkg}'s version from the root pyproject.toml and its minimum httpx.",
        ),
    )
    return question, Files(files, ("pyproject.toml",)), (version, floor)


def _package_json(name: str, version: str, deps: dict[str, str], dev: dict[str, str]) -> str:
    body: dict[str, object] = {
        "name": name,
        "version": version,
        "private": True,
        "scripts": {"dev": "next dev", "build": "next build", "lint": "eslint ."},
        "dependencies": deps,
        "devDependencies": dev,
    }
    return _json(body)


def _package_json_deps(rng: random.Random, lang: str) -> Drafted:
    """package.json of one app in a monorepo (the question names the folder): a dependency
    and a devDependency; decoys: the admin app's versions, the root's TypeScript, the UI
    package's peer range."""
    next_v, admin_next = f"14.2.{rng.randint(1, 30)}", f"13.5.{rng.randint(1, 9)}"
    ts, admin_ts, root_ts = _distinct(rng, lambda: _semver(rng, (5, 5), (1, 6)), 3)
    react = f"18.{rng.randint(2, 3)}.1"
    files = {
        "package.json": _json(
            {
                "name": "acme-monorepo",
                "private": True,
                "workspaces": ["apps/*", "packages/*"],
                "devDependencies": {"typescript": root_ts, "turbo": "^2.0.6"},
                "packageManager": "pnpm@9.4.0",
            }
        ),
        "apps/web/package.json": _package_json(
            "@acme/web",
            f"0.{rng.randint(5, 19)}.{rng.randint(0, 9)}",
            {"next": next_v, "react": f"^{react}", "react-dom": f"^{react}", "zod": "^3.23.8"},
            {"typescript": ts, "eslint": "^8.57.0", "@types/react": "^18.3.3"},
        ),
        "apps/admin/package.json": _package_json(
            "@acme/admin",
            f"1.{rng.randint(0, 9)}.0",
            {"next": admin_next, "react": "^17.0.2", "react-dom": "^17.0.2"},
            {"typescript": admin_ts},
        ),
        "packages/ui/package.json": _json(
            {"name": "@acme/ui", "version": "0.3.0", "peerDependencies": {"react": ">=17"}}
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            "apps/web 这个前端依赖的 Next.js 是哪个版本？"
            "devDependencies 里的 TypeScript 是哪个版本？",
            "帮我查下 web 应用（apps 目录下）用的 next 版本，还有它开发依赖里 typescript 的版本。",
        ),
        (
            "Which Next.js version does the web app in apps/web depend on, and which TypeScript "
            "version is in its devDependencies?",
            "The web app under apps/: what Next.js version does it pin, and what TypeScript does "
            "it build with?",
        ),
    )
    return question, Files(files, ("apps/web/package.json",)), (next_v, ts)


_NPM_NAMES = ("parser", "cli", "charts", "logger", "sdk", "icons")


def _npm_highest_version(rng: random.Random, lang: str) -> Drafted:
    """The highest version among workspace packages (the question names the folder), where
    2.10.x beats 2.9.x; decoys: the root's version, dependency versions, a string sort."""
    names = rng.sample(_NPM_NAMES, 4)
    major = rng.randint(2, 4)
    versions = [
        f"{major}.10.{rng.randint(0, 4)}",
        f"{major}.9.{rng.randint(5, 9)}",
        f"{major}.{rng.randint(2, 8)}.{rng.randint(0, 9)}",
        f"{major - 1}.{rng.randint(11, 19)}.{rng.randint(0, 9)}",
    ]
    order = rng.sample(range(4), 4)
    files = {
        "package.json": _json(
            {"name": "acme-libs", "version": f"{major + 3}.0.0", "workspaces": ["packages/*"]}
        ),
        "README.md": "Published to npm as @acme/<name>; one folder each under packages/.\n",
    }
    for slot, n in enumerate(order):
        first = {"@acme/" + names[order[0]]: "workspace:^"}
        deps = first if slot % 2 else {"lodash": "^4.17.21"}
        files[f"packages/{names[n]}/package.json"] = _json(
            {"name": f"@acme/{names[n]}", "version": versions[n], "dependencies": deps}
        )
    question = _ask(
        rng,
        lang,
        (
            "packages 目录下哪个包的版本号最高？是多少？",
            "帮我看下 packages 里各个包，版本最新的是哪个，版本号多少。",
        ),
        (
            "Of the packages under packages/, which one has the highest version number, and what "
            "is it?",
            "Which workspace package in packages/ is furthest along - name and version?",
        ),
    )
    needed = tuple(f"packages/{n}/package.json" for n in names)
    return question, Files(files, needed), (names[0], versions[0])


# --- nginx ----------------------------------------------------------------------------------


def _nginx_upload_limit(rng: random.Random, lang: str) -> Drafted:
    """A yes/no question decided by a value: client_max_body_size in one location of an
    included server block; decoys: the http-level default and the admin site's limit."""
    domain = rng.choice(("shopfront.example", "tidewater.example", "kiln.example"))
    base, limit, admin = rng.choice((1, 2, 8)), rng.randrange(10, 100, 5), rng.randint(2, 5) * 100
    asked = limit + rng.choice((-7, -3, 4, 15)) if limit > 10 else limit + 6
    files = {
        "nginx/nginx.conf": _lines(
            "user nginx;",
            "worker_processes auto;",
            "events { worker_connections 1024; }",
            "http {",
            "    sendfile on;",
            f"    client_max_body_size {base}m;",
            "    gzip on;",
            "    include /etc/nginx/conf.d/*.conf;",
            "}",
        ),
        "nginx/conf.d/api.conf": _lines(
            "server {",
            "    listen 443 ssl;",
            f"    server_name api.{domain};",
            "    location / {",
            "        proxy_pass http://api:8000;",
            "    }",
            "    location /upload {",
            f"        client_max_body_size {limit}m;",
            "        proxy_request_buffering off;",
            "        proxy_pass http://api:8000;",
            "    }",
            "}",
        ),
        "nginx/conf.d/admin.conf": _lines(
            "server {",
            "    listen 443 ssl;",
            f"    server_name admin.{domain};",
            f"    client_max_body_size {admin}m;",
            "    location / { proxy_pass http://admin:3000; }",
            "}",
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"往 https://api.{domain}/upload 传一个 {asked}MB 的文件，nginx 会放行吗？",
            f"nginx 那边允许往 api 的 /upload 上传 {asked} MB 的文件吗？上限是多少？",
        ),
        (
            f"Would nginx let a {asked} MB file through to https://api.{domain}/upload?",
            f"Can a client upload {asked} MB to the api's /upload endpoint, as nginx is "
            "configured? What's the limit?",
        ),
    )
    return question, Files(files, ("nginx/conf.d/api.conf",)), (str(limit),)


# --- crontab --------------------------------------------------------------------------------

_JOBS = (
    ("backup_db", "数据库全量备份"),
    ("rotate_logs", "日志切割"),
    ("sync_ldap", "同步 LDAP 账号"),
    ("refresh_cache", "刷新报表缓存"),
    ("purge_tmp", "清理临时文件"),
    ("export_reports", "导出日报"),
    ("renew_certs", "检查证书续期"),
)


def _crontab_text(rng: random.Random, daily: list[tuple[str, str, int]], early: int) -> str:
    """A crontab: the ``daily`` jobs (name, comment, minute of the day) among an every-15-
    minutes job, a weekly and a monthly job and a disabled one, all earlier than ``early``."""
    lines = ["# m h dom mon dow  command", "MAILTO=ops@example.com", "SHELL=/bin/bash", ""]
    extra = [
        (early - 20, "0", "weekly_vacuum", "每周日：数据库 VACUUM"),
        (early - 10, "1 * *", "monthly_invoices", "每月 1 号：生成账单"),
    ]
    for at, when, name, note in extra:
        dom_mon_dow = "* * 0" if when == "0" else when
        lines += [f"# {note}", f"{at % 60} {at // 60} {dom_mon_dow} /opt/jobs/{name}.sh"]
    off = early - 5
    lines += [
        "# 已停用（迁到 k8s CronJob）",
        f"# {off % 60} {off // 60} * * * /opt/jobs/legacy_sync.sh",
    ]
    lines += ["# 每 15 分钟：拉取队列", "*/15 * * * * /opt/jobs/poll_queue.sh"]
    for name, note, at in rng.sample(daily, len(daily)):
        lines += [f"# 每天：{note}", f"{at % 60} {at // 60} * * * /opt/jobs/{name}.sh"]
    return _lines(*lines)


def _crontab_first_daily(rng: random.Random, lang: str) -> Drafted:
    """The earliest of the daily cron jobs (Chinese comments); decoys: an earlier weekly,
    monthly and commented-out job, the every-15-minutes job, and the old crontab."""
    jobs = rng.sample(_JOBS, 5)
    times = sorted(rng.sample(range(60, 7 * 60, 5), 4))
    daily = [(name, note, at) for (name, note), at in zip(jobs, times, strict=False)]
    old = [(jobs[4][0], jobs[4][1], times[0] - 15), *daily[1:]]
    files = {
        "ops/crontab": _crontab_text(rng, daily, times[0]),
        "ops/crontab.2024.bak": _crontab_text(rng, old, times[0] - 15),
        "ops/README.md": "ops/crontab is installed on the jobs host with `crontab ops/crontab`.\n",
    }
    question = _ask(
        rng,
        lang,
        ("ops/crontab 里每天跑一次的任务中，哪个最早执行？", "定时任务里每天最先跑的是哪个脚本？"),
        (
            "Of the cron jobs in ops/crontab that run once a day, which fires earliest?",
            "Looking at our crontab, which daily job is the first to run each night?",
        ),
    )
    return question, Files(files, ("ops/crontab",)), (daily[0][0],)


# --- SQL ------------------------------------------------------------------------------------

_STATUSES = ("awaiting_payment", "pending_review", "queued", "received", "unconfirmed")


def _sql_migration_final(rng: random.Random, lang: str) -> Drafted:
    """SQL migrations: two values each set by a later ALTER in its own file; decoys: the
    CREATE TABLE's originals, the down migration, the customers table's email length."""
    first, final = rng.sample(_STATUSES, 2)
    length, old_length, cust_length = rng.choice((254, 320)), rng.choice((120, 150)), 190
    n_email, n_status = rng.randint(3, 5), rng.randint(7, 9)
    email_path = f"migrations/{n_email:04d}_widen_order_email.sql"
    status_path = f"migrations/{n_status:04d}_order_status_default.sql"
    files = {
        "migrations/0001_create_orders.sql": _lines(
            "CREATE TABLE orders (",
            "    id BIGSERIAL PRIMARY KEY,",
            f"    customer_email VARCHAR({old_length}) NOT NULL,",
            f"    status VARCHAR(32) NOT NULL DEFAULT '{first}',",
            "    total_cents INTEGER NOT NULL,",
            "    created_at TIMESTAMPTZ NOT NULL DEFAULT now()",
            ");",
        ),
        "migrations/0002_create_customers.sql": _lines(
            "CREATE TABLE customers (",
            "    id BIGSERIAL PRIMARY KEY,",
            f"    email VARCHAR({cust_length}) UNIQUE NOT NULL",
            ");",
        ),
        email_path: f"ALTER TABLE orders ALTER COLUMN customer_email TYPE VARCHAR({length});\n",
        f"migrations/{n_email + 1:04d}_orders_created_index.sql": (
            "CREATE INDEX orders_created_at_idx ON orders (created_at);\n"
        ),
        status_path: f"ALTER TABLE orders ALTER COLUMN status SET DEFAULT '{final}';\n",
        f"migrations/down/{n_status:04d}_order_status_default.sql": (
            f"ALTER TABLE orders ALTER COLUMN status SET DEFAULT '{first}';\n"
        ),
        "migrations/README.md": "Applied in numeric order; down/ holds the rollbacks.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "所有迁移都跑完之后，orders 表新订单的 status 默认值是什么？"
            "customer_email 最长多少个字符？",
            "migrations 全部执行完，订单的默认状态是啥？订单邮箱字段长度上限是多少？",
        ),
        (
            "Once every migration has run, what is the default status of a new order, and how "
            "long can orders.customer_email be?",
            "After migrating to the latest schema, what status does an order get by default and "
            "what's the max length of its customer_email?",
        ),
    )
    return question, Files(files, (status_path, email_path)), (final, str(length))


# --- Makefile -------------------------------------------------------------------------------


def _makefile_image(rng: random.Random, lang: str) -> Drafted:
    """A Makefile composing an image reference from variables and a VERSION file (an indirect
    question); decoys: the chart's older appVersion, the example registry."""
    registry = rng.choice(("ghcr.io/acme", "registry.gitlab.com/kiln-ops", "quay.io/tidewater"))
    app = rng.choice(("billing", "notifier", "ingestor", "scheduler"))
    version, chart = _distinct(rng, lambda: _semver(rng, (1, 3), (0, 14)), 2)
    files = {
        "Makefile": _lines(
            f"REGISTRY ?= {registry}",
            f"APP      := {app}",
            "VERSION  := $(shell cat VERSION)",
            "IMAGE    := $(REGISTRY)/$(APP):$(VERSION)",
            "",
            ".PHONY: build test docker-build docker-push",
            "",
            "build:",
            "\tgo build -o bin/$(APP) ./cmd/$(APP)",
            "",
            "test:",
            "\tgo test ./...",
            "",
            "docker-build:",
            "\tdocker build -t $(IMAGE) .",
            "",
            "docker-push: docker-build",
            "\tdocker push $(IMAGE)",
        ),
        "VERSION": f"{version}\n",
        f"deploy/chart/{app}/Chart.yaml": _lines(
            "apiVersion: v2", f"name: {app}", "version: 0.1.0", f'appVersion: "{chart}"'
        ),
        ".env.example": "REGISTRY=localhost:5000\n",
        f"cmd/{app}/main.go": "package main\n\nfunc main() {}\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "`make docker-build` 会打出什么镜像（完整的镜像名和 tag）？",
            "我要是跑 make docker-push，推上去的镜像是哪个？",
        ),
        (
            "What image reference would `make docker-build` produce?",
            "If I ran `make docker-push` without setting anything, which image would get pushed?",
        ),
    )
    return question, Files(files, ("Makefile", "VERSION")), (registry, app, version)


# --- JSON Lines -----------------------------------------------------------------------------

_ROUTES = ("/v1/cart", "/v1/login", "/v1/checkout/preview", "/v1/search")


def _jsonl_day(rng: random.Random, day: dt.date, failures: int) -> str:
    """A day's JSON Lines access log with ``failures`` 5xx answers to /v1/checkout among
    2xx/4xx ones and other routes' 5xx."""
    rows = [("/v1/checkout", rng.choice((500, 502, 503, 504))) for _ in range(failures)]
    rows += [("/v1/checkout", rng.choice((200, 201, 201, 400, 409))) for _ in range(6)]
    rows += [(rng.choice(_ROUTES), rng.choice((200, 200, 401, 500, 503))) for _ in range(12)]
    rng.shuffle(rows)
    lines = []
    for n, (route, status) in enumerate(rows):
        level = "error" if status >= 500 else "warn" if status >= 400 else "info"
        entry = {
            "ts": f"{day}T{8 + n // 3:02d}:{n * 7 % 60:02d}:{rng.randint(0, 59):02d}Z",
            "level": level,
            "method": "GET" if route == "/v1/search" else "POST",
            "route": route,
            "status": status,
            "ms": rng.randint(12, 2900),
            "req": f"{rng.getrandbits(32):08x}",
        }
        lines.append(json.dumps(entry))
    return _lines(*lines)


def _jsonl_5xx_count(rng: random.Random, lang: str) -> Drafted:
    """JSON Lines: a count of one route's 5xx lines; decoys: the preview route, 4xx warnings,
    other routes' errors, the day before's log."""
    day = dt.date(2026, rng.randint(1, 12), rng.randint(2, 28))
    failures = rng.randint(2, 6)
    path = f"logs/api-{day}.jsonl"
    files = {
        path: _jsonl_day(rng, day, failures),
        f"logs/api-{day - dt.timedelta(days=1)}.jsonl": _jsonl_day(
            rng, day - dt.timedelta(days=1), failures + rng.randint(1, 3)
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"{day} 的 API 日志里，/v1/checkout 返回 5xx 的请求有几条？",
            f"帮我数一下 {day} 那天结账接口 /v1/checkout 有多少次 5xx。",
        ),
        (
            f"How many /v1/checkout requests failed with a 5xx status in the API log of {day}?",
            f"Count the 5xx responses of /v1/checkout on {MONTHS_EN[day.month - 1]} {day.day}, "
            f"{day.year}, from the API log.",
        ),
    )
    return question, Files(files, (path,), tags=("computed",)), (str(failures),)


# --- Keep a Changelog -----------------------------------------------------------------------

_FIXES = (
    (
        "CSV export wrote timestamps in the server's local time instead of UTC.",
        "CSV export timezone bug",
        "CSV 导出时间戳时区不对的问题",
        "PDF export used the server's timezone for the report header.",
        "CSV export dropped the header row when the report was empty.",
    ),
    (
        "Password reset links expired after 5 minutes instead of 60.",
        "password-reset links expiring too early",
        "重置密码链接过早失效的问题",
        "Email verification links were not URL-encoded.",
        "Password reset emails were sent twice on slow connections.",
    ),
    (
        "Webhook retries no longer stop after the first HTTP 500.",
        "webhook retries giving up after one 500 error",
        "webhook 遇到 500 只重试一次就放弃的问题",
        "Webhook signatures used the wrong secret after rotation.",
        "Webhook payloads lost their timezone offset.",
    ),
)


def _changelog_sections(
    rng: random.Random, versions: list[str], days: list[dt.date], at: int, fix: tuple[str, ...]
) -> list[str]:
    lines = ["## [Unreleased]", "", "### Fixed", "", f"- {fix[4]}", ""]
    for n, (version, day) in enumerate(zip(versions, days, strict=True)):
        lines += [f"## [{version}] - {day}", "", "### Added", "", f"- Feature flag #{n + 40}.", ""]
        if n == at:
            lines += ["### Fixed", "", f"- {fix[0]}", ""]
        elif n == (at + 1) % len(versions):
            lines += ["### Fixed", "", f"- {fix[3]}", ""]
        if rng.random() < 0.4:
            lines += ["### Security", "", "- Bumped dependencies.", ""]
    return lines


def _changelog_fixed_in(rng: random.Random, lang: str) -> Drafted:
    """Keep a Changelog: the release whose Fixed section has the asked fix, and its date;
    decoys: a similar fix in Unreleased and another release, the link references."""
    fix = rng.choice(_FIXES)
    major, minor = rng.randint(1, 4), rng.randint(3, 9)
    versions = [f"{major}.{minor}.1", f"{major}.{minor}.0", f"{major}.{minor - 1}.2"]
    versions += [f"{major}.{minor - 1}.1", f"{major}.{minor - 1}.0"]
    start = dt.date(2025, rng.randint(1, 12), rng.randint(1, 28))
    days = sorted((start + dt.timedelta(days=rng.randint(1, 300)) for _ in versions), reverse=True)
    while len(set(days)) < len(days):
        days = [d - dt.timedelta(days=n) for n, d in enumerate(days)]
    at = rng.randint(1, 3)
    head = [
        "# Changelog",
        "",
        "All notable changes to this project will be documented in this file.",
        "",
        "The format is based on [Keep a Changelog](https://keepachangelog.com/en/1.1.0/),",
        "and this project adheres to [Semantic Versioning](https://semver.org/spec/v2.0.0.html).",
        "",
    ]
    links = [f"[Unreleased]: https://github.com/acme/kiln/compare/v{versions[0]}...HEAD"]
    links += [
        f"[{v}]: https://github.com/acme/kiln/compare/v{older}...v{v}"
        for v, older in itertools.pairwise(versions)
    ]
    body = _changelog_sections(rng, versions, days, at, fix)
    files = {
        "CHANGELOG.md": _lines(*head, *body, *links),
        "README.md": "# kiln\n\nRelease notes: CHANGELOG.md.\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"{fix[2]}是在哪个版本修复的？那个版本是哪天发布的？",
            f"{fix[2]}，哪个版本修好的，哪天发的版？",
        ),
        (
            f"In which release was the {fix[1]} fixed, and when did that release come out?",
            f"Which version fixed the {fix[1]}, and what's its release date?",
        ),
    )
    return question, Files(files, ("CHANGELOG.md",)), (versions[at], days[at].isoformat())


# --- Chinese CSV and Markdown ---------------------------------------------------------------

_STORES = ("西湖店", "滨江店", "萧山店", "余杭店", "拱墅店", "钱塘店")


def _month_csv(stores: Sequence[str], revenue: dict[str, int], rng: random.Random) -> str:
    rows = ["门店,营业额（元）,客流（人次）,客单价（元）"]
    for store in stores:
        visits = rng.randint(1500, 9000)
        rows.append(f"{store},{revenue[store]},{visits},{revenue[store] / visits:.1f}")
    return _lines(*rows)


def _csv_zh_month_diff(rng: random.Random, lang: str) -> Drafted:
    """CSV with a Chinese header in two month files: a difference of one store's revenue;
    decoys: the visitor column, the other stores, a per-visit figure."""
    stores = rng.sample(_STORES, 5)
    feb = {s: rng.randint(80, 400) * 1000 + rng.randint(1, 999) for s in stores}
    mar = {s: feb[s] + rng.randint(-20_000, 60_000) for s in stores}
    store = rng.choice(stores)
    mar[store] = feb[store] + rng.randint(3_000, 60_000)
    files = {
        "报表/2026-02 门店月报.csv": _month_csv(stores, feb, rng),
        "报表/2026-03 门店月报.csv": _month_csv(rng.sample(stores, 5), mar, rng),
        "报表/说明.md": "每月一个文件，营业额含税，单位：元。\n",
    }
    question = _ask(
        rng,
        lang,
        (f"{store}3月的营业额比2月多了多少元？", f"帮我算算{store}三月比二月营业额涨了多少。"),
        (
            f"By how many yuan did {store}'s revenue (营业额) grow from February to March 2026?",
            f"How much more revenue did the {store} store make in March than in February?",
        ),
    )
    needed = ("报表/2026-02 门店月报.csv", "报表/2026-03 门店月报.csv")
    diff = mar[store] - feb[store]
    return question, Files(files, needed, tags=("computed",)), (str(diff),)


def _weekly_md(week: int, names: Sequence[str], rng: random.Random) -> tuple[str, int]:
    """A Chinese weekly report with a table; the sum of its actual hours."""
    monday = dt.date.fromisocalendar(2026, week, 1)
    friday = monday + dt.timedelta(days=4)
    rows = [
        "| 成员 | 完成任务 | 计划工时（小时） | 实际工时（小时） | 备注 |",
        "|---|---|---|---|---|",
    ]
    total = 0
    for name in names:
        plan = rng.choice((32, 36, 40))
        actual = plan + rng.randint(-8, 6)
        total += actual
        note = "请假半天" if actual < plan - 3 else rng.choice(("", "线上值班", "支援测试"))
        rows.append(f"| {name} | {rng.randint(2, 9)} | {plan} | {actual} | {note} |")
    text = _lines(
        f"# 研发组第{week}周周报（{monday} ~ {friday}）",
        "",
        "## 工时统计",
        "",
        *rows,
        "",
        "## 下周计划",
        "",
        "- 完成支付对账改造",
    )
    return text, total


def _md_zh_weekly_hours(rng: random.Random, lang: str) -> Drafted:
    """A Chinese weekly report's Markdown table: the sum of a column; decoys: the planned
    hours beside it, the week before's report."""
    week = rng.randint(10, 40)
    names = _zh_names(rng, rng.randint(4, 6))
    text, total = _weekly_md(week, names, rng)
    old, old_total = _weekly_md(week - 1, names, rng)
    while old_total == total:
        old, old_total = _weekly_md(week - 1, names, rng)
    path = f"周报/2026-W{week}.md"
    files = {path: text, f"周报/2026-W{week - 1}.md": old, "周报/模板.md": "| 成员 | 完成任务 |\n"}
    question = _ask(
        rng,
        lang,
        (
            f"第{week}周研发组实际一共投入了多少工时？",
            f"帮我把第{week}周周报里大家的实际工时加一下，总共多少小时？",
        ),
        (
            f"In the R&D weekly report for week {week}, how many hours did the team actually log "
            "in total?",
            f"Add up the actual hours (实际工时) in week {week}'s report for me.",
        ),
    )
    return question, Files(files, (path,), tags=("computed",)), (str(total),)


_ITEMS = ("A4 打印纸", "硒鼓", "订书机", "文件夹", "白板笔", "工牌卡套", "收纳箱")


def _stock_table(items: Sequence[str], opening: dict[str, int], out: dict[str, int]) -> list[str]:
    rows = ["| 商品 | 编码 | 期初库存 | 本月出库 | 期末库存 |", "|---|---|---|---|---|"]
    for n, item in enumerate(items):
        code = f"BG-{1031 + n * 17}"
        rows.append(
            f"| {item} | {code} | {opening[item]} | {out[item]} | {opening[item] - out[item]} |"
        )
    return rows


def _md_zh_stock_percent(rng: random.Random, lang: str) -> Drafted:
    """A Chinese stock take with two warehouse tables: a percentage of one row; decoys: the
    other warehouse's same item, the closing stock, last month's page."""
    items = rng.sample(_ITEMS, 5)
    item = rng.choice(items)
    opening = {i: rng.randint(2, 30) * 40 for i in items}
    out = {i: rng.randint(5, opening[i] - 10) for i in items}
    opening[item] = rng.randint(1, 10) * 200
    tenths = rng.randrange(55, 950, 5)  # 32.5 % or 40 %: exact, the outflow a whole number
    out[item] = opening[item] * tenths // 1000
    percent = str(tenths // 10) if tenths % 10 == 0 else f"{tenths // 10}.5"
    other_open = {i: rng.randint(2, 30) * 40 for i in items}
    other_out = {i: rng.randint(5, other_open[i] - 10) for i in items}
    april_open = {i: rng.randint(2, 30) * 40 for i in items}
    april_out = {i: rng.randint(5, april_open[i] - 10) for i in items}
    files = {
        "库存/2026年5月盘点.md": _lines(
            "# 2026年5月 办公用品盘点",
            "",
            "## 杭州仓",
            "",
            *_stock_table(items, opening, out),
            "",
            "## 武汉仓",
            "",
            *_stock_table(items, other_open, other_out),
        ),
        "库存/2026年4月盘点.md": _lines(
            "# 2026年4月 办公用品盘点",
            "",
            "## 杭州仓",
            "",
            *_stock_table(items, april_open, april_out),
        ),
    }
    question = _ask(
        rng,
        lang,
        (
            f"5月盘点里，杭州仓的{item}本月出库量占期初库存的百分之多少？",
            f"杭州仓{item}这个月出库了期初库存的百分之几？",
        ),
        (
            f"In the May 2026 stock take, what percentage of its opening stock of {item} did the "
            "Hangzhou warehouse (杭州仓) ship out this month?",
            f"What share (in %) of the opening stock of {item} left the Hangzhou warehouse in May?",
        ),
    )
    needed = ("库存/2026年5月盘点.md",)
    return question, Files(files, needed, tags=("computed",)), (percent,)


def _readme_txt_version(rng: random.Random, lang: str) -> Drafted:
    """A plain-text Chinese README: the version and the minimum JDK; decoys: the previous
    version's README, the next release's planned JDK, a protocol version."""
    name = rng.choice(("datasync", "ledgerbridge", "filepump"))
    version, old = _distinct(rng, lambda: _semver(rng, (2, 5), (0, 12)), 2)
    java, next_java = rng.choice(((17, 21), (21, 25)))
    files = {
        "README.txt": _lines(
            f"数据同步工具 {name}",
            "=" * 24,
            "",
            f"版本：{version}",
            f"发布日期：2026年{rng.randint(1, 12)}月{rng.randint(1, 28)}日",
            "",
            "运行环境",
            f"  - JDK {java} 及以上",
            f"  - 内存至少 {rng.randint(2, 8)} GB",
            "",
            "使用方法",
            f"  ./bin/{name} --config conf/sync.properties",
        ),
        f"docs/历史版本/README-{old}.txt": _lines(
            f"数据同步工具 {name}", f"版本：{old}", "运行环境：JDK 11 及以上"
        ),
        "RELEASE-NOTES.txt": _lines(
            "下一版本计划", f"  - 升级到 JDK {next_java}", "  - 支持增量校验"
        ),
        "conf/sync.properties": _lines("sync.protocol.version=3", "sync.batch.size=500"),
    }
    question = _ask(
        rng,
        lang,
        (
            "这个工具现在是哪个版本？最低要什么版本的 JDK？",
            f"{name} 这版的版本号多少，得装 JDK 几才能跑？",
        ),
        (
            f"What version of {name} is this, and what's the minimum JDK it needs?",
            f"Which {name} release is checked in here, and which Java version do I need at least?",
        ),
    )
    return question, Files(files, ("README.txt",)), (version, str(java))


def _absent_zh_email(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: the R&D list has no email column; decoys: the emails of the marketing list,
    where a namesake of the asked person has one."""
    names = _zh_names(rng, 7)
    asked = names[0]
    rd = ["姓名,工号,分机,手机"]
    for n, name in enumerate(names[:4]):
        rd.append(
            f"{name},RD{2040 + n * 3},{rng.randint(6000, 6999)},139{rng.randint(0, 10**8 - 1):08d}"
        )
    mk = ["姓名,工号,分机,邮箱"]
    emails = [f"mk{rng.randint(1000, 9999)}@acme-corp.cn" for _ in range(4)]
    for n, (name, email) in enumerate(zip([asked, *names[4:]], emails, strict=True)):
        mk.append(f"{name},MK{3100 + n * 7},{rng.randint(7000, 7999)},{email}")
    files = {
        "通讯录/研发部.csv": _lines(*rd),
        "通讯录/市场部.csv": _lines(*mk),
        "通讯录/说明.md": "各部门名单的字段不一样，以表头为准。\n",
    }
    question = _ask(
        rng,
        lang,
        (f"研发部的{asked}邮箱是多少？", f"帮我找一下研发部{asked}的邮箱地址。"),
        (
            f"What's the email address of {asked} in R&D (研发部)?",
            f"I need to email {asked} from the R&D department - what's the address?",
        ),
    )
    return question, Files(files, ("通讯录/研发部.csv",), absent=True), tuple(emails)


# --- XML ------------------------------------------------------------------------------------


def _pom_xml(rng: random.Random, art: str, version: str, jackson: str, boot: str) -> str:
    return _lines(
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<project xmlns="http://maven.apache.org/POM/4.0.0">',
        "  <modelVersion>4.0.0</modelVersion>",
        "  <parent>",
        "    <groupId>org.springframework.boot</groupId>",
        "    <artifactId>spring-boot-starter-parent</artifactId>",
        f"    <version>{boot}</version>",
        "  </parent>",
        "  <groupId>com.acme</groupId>",
        f"  <artifactId>{art}</artifactId>",
        f"  <version>{version}</version>",
        "  <packaging>pom</packaging>",
        "  <modules>",
        "    <module>service</module>",
        "    <module>client</module>",
        "  </modules>",
        "  <properties>",
        "    <java.version>21</java.version>",
        f"    <jackson.version>{jackson}</jackson.version>",
        f"    <testcontainers.version>1.19.{rng.randint(3, 8)}</testcontainers.version>",
        "  </properties>",
        "  <dependencyManagement>",
        "    <dependencies>",
        "      <dependency>",
        "        <groupId>com.fasterxml.jackson.core</groupId>",
        "        <artifactId>jackson-databind</artifactId>",
        "        <version>${jackson.version}</version>",
        "      </dependency>",
        "    </dependencies>",
        "  </dependencyManagement>",
        "</project>",
    )


def _module_pom(art: str, version: str, module: str, jackson: str | None) -> str:
    pinned = [f"      <version>{jackson}</version>"] if jackson else []
    return _lines(
        '<project xmlns="http://maven.apache.org/POM/4.0.0">',
        "  <modelVersion>4.0.0</modelVersion>",
        "  <parent>",
        "    <groupId>com.acme</groupId>",
        f"    <artifactId>{art}</artifactId>",
        f"    <version>{version}</version>",
        "  </parent>",
        f"  <artifactId>{art}-{module}</artifactId>",
        "  <dependencies>",
        "    <dependency>",
        "      <groupId>com.fasterxml.jackson.core</groupId>",
        "      <artifactId>jackson-databind</artifactId>",
        *pinned,
        "    </dependency>",
        "  </dependencies>",
        "</project>",
    )


def _pom_jackson_version(rng: random.Random, lang: str) -> Drafted:
    """pom.xml: the project's own version and a managed dependency's version through a
    property; decoys: the parent's version, the client module's own pin."""
    art = rng.choice(("orders", "payments", "catalog"))
    version = f"{rng.randint(1, 4)}.{rng.randint(0, 12)}.0" + rng.choice(("", "-SNAPSHOT"))
    jackson, pinned = f"2.17.{rng.randint(0, 2)}", f"2.15.{rng.randint(2, 4)}"
    boot = f"3.{rng.randint(2, 3)}.{rng.randint(1, 9)}"
    files = {
        "pom.xml": _pom_xml(rng, art, version, jackson, boot),
        "service/pom.xml": _module_pom(art, version, "service", None),
        "client/pom.xml": _module_pom(art, version, "client", pinned),
        "service/src/main/resources/application.yml": "server:\n  port: 8080\n",
    }
    question = _ask(
        rng,
        lang,
        (
            "根目录 pom.xml 里项目自己的版本号是多少？"
            "service 模块用的 jackson-databind 是哪个版本？",
            "帮我看下这个 Maven 工程的版本，还有 service 模块实际用到的 jackson-databind 版本。",
        ),
        (
            "What is the project's own version in the root pom.xml, and which jackson-databind "
            "version does the service module get?",
            "Tell me this Maven project's version and the jackson-databind version the service "
            "module builds with.",
        ),
    )
    return question, Files(files, ("pom.xml", "service/pom.xml")), (version, jackson)


def _csproj(sdk: str, refs: dict[str, str], projects: Sequence[str] = ()) -> str:
    lines = [
        f'<Project Sdk="Microsoft.NET.{sdk}">',
        "  <PropertyGroup>",
        "    <TargetFramework>net8.0</TargetFramework>",
        "    <Nullable>enable</Nullable>",
        "  </PropertyGroup>",
        "  <ItemGroup>",
    ]
    lines += [f'    <PackageReference Include="{p}" Version="{v}" />' for p, v in refs.items()]
    lines += [f'    <ProjectReference Include="{p}" />' for p in projects]
    return _lines(*lines, "  </ItemGroup>", "</Project>")


def _absent_csproj_package(rng: random.Random, lang: str) -> Drafted:
    """ABSENT: the Api project references no such package; decoys: the worker's and the
    tests' versions of it."""
    pkg = rng.choice(("Serilog", "Polly", "Dapper"))
    worker, sink, tests = _distinct(rng, lambda: _semver(rng, (3, 5), (0, 9)), 3)
    files = {
        "src/Acme.Api/Acme.Api.csproj": _csproj(
            "Sdk.Web",
            {
                "Swashbuckle.AspNetCore": f"6.{rng.randint(4, 6)}.0",
                "Microsoft.EntityFrameworkCore": f"8.0.{rng.randint(1, 8)}",
            },
            ("../Acme.Core/Acme.Core.csproj",),
        ),
        "src/Acme.Core/Acme.Core.csproj": _csproj("Sdk", {"FluentValidation": "11.9.2"}),
        "src/Acme.Worker/Acme.Worker.csproj": _csproj(
            "Sdk.Worker",
            {pkg: worker, f"{pkg}.Extensions.Hosting": sink},
            ("../Acme.Core/Acme.Core.csproj",),
        ),
        "tests/Acme.Api.Tests/Acme.Api.Tests.csproj": _csproj(
            "Sdk",
            {"xunit": "2.8.1", f"{pkg}.Testing": tests},
            ("../../src/Acme.Api/Acme.Api.csproj",),
        ),
        "Acme.sln": "Microsoft Visual Studio Solution File, Format Version 12.00\n",
    }
    question = _ask(
        rng,
        lang,
        (
            f"Acme.Api 项目引用的 {pkg} 是哪个版本？",
            f"API 项目（src/Acme.Api）用的 {pkg} 版本是多少？",
        ),
        (
            f"Which version of {pkg} does the Acme.Api project reference?",
            f"What {pkg} version is the API (src/Acme.Api) built against?",
        ),
    )
    needed = ("src/Acme.Api/Acme.Api.csproj", "src/Acme.Core/Acme.Core.csproj")
    return question, Files(files, needed, absent=True), (worker, sink, tests)


# --- CODEOWNERS -----------------------------------------------------------------------------


def _codeowners_owner(rng: random.Random, lang: str) -> Drafted:
    """CODEOWNERS, where the last matching pattern wins: a person's handle; decoys: the
    earlier, broader patterns' owners and the team page's lead."""
    docs, billing, tax, dba, search, lead = rng.sample(_HANDLES, 6)
    rules = [
        ("*", "@acme/platform"),
        ("/docs/", f"@{docs}"),
        ("/src/", "@acme/backend"),
        ("/src/billing/", f"@{billing}"),
        ("/src/billing/tax/", f"@{tax}"),
        ("*.sql", f"@{dba}"),
        ("/src/search/", f"@{search}"),
    ]
    width = max(len(p) for p, _ in rules) + 2
    text = "# Order matters: the last matching pattern takes precedence.\n"
    text += "".join(f"{p.ljust(width)}{o}\n" for p, o in rules)
    path, owner = rng.choice(
        (
            ("src/billing/invoices/render.py", billing),
            ("src/billing/tax/rates_2026.sql", dba),
            ("src/billing/tax/vat.py", tax),
        )
    )
    files = {
        ".github/CODEOWNERS": text,
        "docs/team.md": f"# Teams\n\n- Billing: lead @{lead}, owns invoicing and tax.\n",
        path: "-- placeholder\n" if path.endswith(".sql") else "# placeholder\n",
    }
    question = _ask(
        rng,
        lang,
        (f"改 {path} 需要谁来 review？", f"按 CODEOWNERS，{path} 这个文件的负责人是谁？"),
        (
            f"Who is automatically requested for review when I change {path}?",
            f"According to CODEOWNERS, who owns {path}?",
        ),
    )
    return question, Files(files, (".github/CODEOWNERS",)), (owner,)


BLIND_TEMPLATES: dict[str, Callable[[random.Random, str], Drafted]] = {
    "env_staging_connect": _env_staging_connect,
    "env_debug_prod": _env_debug_prod,
    "compose_published_port": _compose_published_port,
    "absent_compose_prod": _absent_compose_prod,
    "gha_matrix_jobs": _gha_matrix_jobs,
    "pyproject_dep_floor": _pyproject_dep_floor,
    "package_json_deps": _package_json_deps,
    "npm_highest_version": _npm_highest_version,
    "nginx_upload_limit": _nginx_upload_limit,
    "crontab_first_daily": _crontab_first_daily,
    "sql_migration_final": _sql_migration_final,
    "makefile_image": _makefile_image,
    "jsonl_5xx_count": _jsonl_5xx_count,
    "changelog_fixed_in": _changelog_fixed_in,
    "csv_zh_month_diff": _csv_zh_month_diff,
    "md_zh_weekly_hours": _md_zh_weekly_hours,
    "md_zh_stock_percent": _md_zh_stock_percent,
    "readme_txt_version": _readme_txt_version,
    "absent_zh_email": _absent_zh_email,
    "pom_jackson_version": _pom_jackson_version,
    "absent_csproj_package": _absent_csproj_package,
    "codeowners_owner": _codeowners_owner,
}
"""The ``blind`` split's templates, by name (none shares a name with ``task_suite.TEMPLATES``
or ``task_templates.NEW_TEMPLATES``)."""
