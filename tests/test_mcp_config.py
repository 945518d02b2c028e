"""MCP configuration: ``--mcp`` strings, the ``mcpServers`` file, ``${VAR}``, trust, names.

These need no ``mcp`` SDK: configuration is parsed before anything is imported or started.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minipi.cli.mcp import McpOptions, configured_servers, mcp_config
from minipi.errors import ConfigError
from minipi.mcp import McpConfig, McpServer, load_servers, parse_server_command
from minipi.mcp.config import derive_name, unique_servers

SRC = Path(__file__).resolve().parents[1] / "src" / "minipi"


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("uvx mcp-server-git --repository .", "git"),
        ("python -m mcp_server_time --local-timezone UTC", "time"),
        ("npx -y @modelcontextprotocol/server-filesystem /tmp", "filesystem"),
        ("/usr/bin/python3.11 tools/notes.py", "notes"),
        ("docker run -i --rm ghcr.io/github/github-mcp-server", "github"),
        ("weather-mcp --units metric", "weather"),
        ("python -m", "server"),
    ],
)
def test_a_command_line_names_its_server(command: str, name: str) -> None:
    server = parse_server_command(command)
    assert server.name == name
    assert [server.command, *server.args] == command.split()
    assert server.transport == "stdio"
    assert not server.trust


def test_a_command_line_is_split_like_a_shell_and_nothing_is_expanded() -> None:
    server = parse_server_command("""my-server --title 'two words' "$HOME" ${X}""")
    assert server.args == ("--title", "two words", "$HOME", "${X}")
    with pytest.raises(ConfigError, match="No closing quotation"):
        parse_server_command("server 'unclosed")
    with pytest.raises(ConfigError, match="needs a command"):
        parse_server_command("   ")


def test_repeated_names_are_made_unique_in_order() -> None:
    servers = unique_servers([parse_server_command(c) for c in ("a-mcp", "a-mcp --x", "a-mcp")])
    assert [s.name for s in servers] == ["a", "a-2", "a-3"]
    assert servers[1].args == ("--x",)


def test_the_file_of_other_clients_is_read_with_variables_expanded(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "mcpServers": {
                "git": {
                    "command": "uvx",
                    "args": ["mcp-server-git", "--repository", "${REPO}"],
                    "env": {"TOKEN": "${TOKEN}", "LEVEL": "${LEVEL:-info}"},
                    "cwd": "work",
                },
                "docs": {
                    "type": "http",
                    "url": "https://${HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                    "trust": True,
                },
                "off": {"command": "nothing", "disabled": True},
            }
        },
    )
    git, docs = load_servers(path, {"REPO": "/src/app", "TOKEN": "s3cret", "HOST": "docs.example"})
    assert (git.name, git.command, git.args) == (
        "git",
        "uvx",
        ("mcp-server-git", "--repository", "/src/app"),
    )
    assert dict(git.env) == {"TOKEN": "s3cret", "LEVEL": "info"}
    assert git.cwd == str(tmp_path / "work")
    assert (docs.transport, docs.url, docs.trust) == ("http", "https://docs.example/mcp", True)
    assert dict(docs.headers) == {"Authorization": "Bearer s3cret"}


def test_labels_never_show_secrets() -> None:
    server = McpServer("docs", url="https://user:pw@docs.example/mcp?key=k#f", headers={"A": "b"})
    assert server.label() == "http: https://docs.example/mcp"
    assert parse_server_command("srv --flag 'a b'").label() == "stdio: srv --flag 'a b'"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "expected"),
        ({"servers": {}}, "expected"),
        ({"mcpServers": {"a": "cmd"}}, "server 'a': expected an object"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "args must be a list"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "env.K must be a string"),
        ({"mcpServers": {"a": {"command": "x", "trust": "yes"}}}, "trust must be true or false"),
        ({"mcpServers": {"a": {"url": "http://h/mcp", "type": "sse"}}}, "SSE transport"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "must start with http"),
        ({"mcpServers": {"a": {}}}, "either a command"),
        ({"mcpServers": {"a b": {"command": "x"}}}, "letters, digits"),
        (
            {"mcpServers": {"a": {"command": "x", "args": ["${NOPE}"]}}},
            r"\$\{NOPE\}, which is not set",
        ),
    ],
)
def test_a_file_that_cannot_be_used_is_refused_with_the_entry_named(
    tmp_path: Path, document: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        load_servers(write(tmp_path, document), {})
    assert str(tmp_path / "mcp.json") in str(raised.value)
    assert raised.value.code == "mcp_config"


def test_a_missing_or_broken_file_says_which(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        load_servers(tmp_path / "none.json", {})
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_servers(tmp_path / "bad.json", {})


def test_the_cli_options_combine_file_and_commands_and_trust(tmp_path: Path) -> None:
    path = write(tmp_path, {"mcpServers": {"git": {"command": "git-mcp"}}})
    options = McpOptions(commands=("git-mcp --x", "time-mcp"), config_file=path, trusted=("time",))
    servers = configured_servers(options, {})
    assert [(s.name, s.trust) for s in servers] == [
        ("git", False),
        ("git-2", False),
        ("time", True),
    ]
    with pytest.raises(ConfigError, match="--mcp-trust nope: no such MCP server; configured: git"):
        configured_servers(McpOptions(config_file=path, trusted=("nope",)), {})


def test_logs_go_to_the_data_directory_never_into_the_project(tmp_path: Path) -> None:
    options = McpOptions(commands=("x",), prefix=True, connect_timeout=3, call_timeout=4)
    config = mcp_config(options, tmp_path / "data", tmp_path / "project", ("read_file",))
    assert config == McpConfig(3, 4, tmp_path / "data" / "mcp", True, ("read_file",))
    with pytest.raises(ConfigError, match="inside the project root"):
        mcp_config(options, tmp_path / "project" / ".data", tmp_path / "project")


def test_config_values_are_checked() -> None:
    with pytest.raises(ConfigError, match="positive"):
        McpConfig(call_timeout=0)
    assert derive_name(["--only-options"]) == "server"


def test_without_the_mcp_extra_nothing_starts_and_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util

    from minipi.mcp import open_mcp_tools

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    server = McpServer("s", command=sys.executable, args=("-c", "open('started', 'w')"))
    with (
        pytest.raises(ConfigError, match=r"pip install 'minipi\[mcp\]'") as raised,
        open_mcp_tools([server], McpConfig(log_dir=tmp_path)),
    ):
        pass
    assert raised.value.code == "missing_extra"
    assert list(tmp_path.iterdir()) == []  # no log, no process


def test_importing_minipi_mcp_loads_no_sdk() -> None:
    code = (
        "import sys, minipi.mcp, minipi.cli.mcp; "
        "print(sorted(m for m in ('mcp', 'anyio', 'httpx2', 'pydantic', 'jsonschema') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_mcp_layer_imports_only_downwards() -> None:
    forbidden = ("minipi.cli", "minipi.files", "minipi.local", "minipi.session", "minipi.ai.http")
    found = []
    for path in sorted((SRC / "mcp").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        found += [f"{path.name}: {name}" for name in forbidden if f"import {name}" in text]
        found += [f"{path.name}: {name}" for name in forbidden if f"from {name}" in text]
    assert found == []
