"""The logic of ``minipi mcp list`` and of the MCP options of ask/chat (cli/mcp.py)."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import SILENT, TOOLBOX
from minipi.cli.mcp import McpOptions, list_servers, open_for_run
from minipi.errors import ConfigError

TESTS = Path(__file__).resolve().parent
BOX = shlex.join([sys.executable, str(TOOLBOX)])


def test_mcp_list_shows_each_tool_read_only_or_not_and_its_tokens(tmp_path: Path) -> None:
    out = io.StringIO()
    options = McpOptions(commands=(BOX,), trusted=("toolbox",))
    assert list_servers(options, {}, tmp_path, out=out) == 0
    text = out.getvalue()
    head, *lines = text.splitlines()
    assert head.startswith(f"toolbox (stdio: {BOX}, trusted): 14 tools, ~")
    rows = {line.split()[0]: line for line in lines if line.startswith("  ") and "log:" not in line}
    assert "read-only " in rows["echo"]
    assert "Return the text unchanged." in rows["echo"]
    assert "may change, asks" in rows["add"]
    assert f"  log: {tmp_path / 'mcp' / 'toolbox.log'}" in lines
    assert lines[-1].startswith("14 tools, ~")
    assert lines[-1].endswith("tokens added to every request (estimate: UTF-8 bytes / 3)")


def test_mcp_list_json_and_a_server_that_cannot_be_used(tmp_path: Path) -> None:
    out = io.StringIO()
    commands = (BOX, shlex.join([sys.executable, str(SILENT)]), "no-such-mcp-command")
    options = McpOptions(commands=commands, connect_timeout=6)
    assert list_servers(options, {}, tmp_path, as_json=True, out=out) == 2
    report = json.loads(out.getvalue())
    box, silent, ghost = report["servers"]
    assert "command 'no-such-mcp-command' not found on PATH" in ghost["error"]
    assert (box["name"], box["trusted"], box["error"]) == ("toolbox", False, None)
    echo = next(t for t in box["tools"] if t["name"] == "echo")
    assert (echo["read_only_hint"], echo["asks"]) == (True, True)  # not trusted: it asks
    assert echo["parameters"]["required"] == ["text"]
    declaration = {key: echo[key] for key in ("name", "description", "parameters")}
    utf8 = len(json.dumps(declaration, ensure_ascii=False).encode())
    assert echo["tokens"] == (utf8 + 2) // 3
    assert report["tokens"] == sum(t["tokens"] for t in box["tools"])
    assert report["token_estimate"] == "estimate: UTF-8 bytes / 3"
    assert silent["tools"] == []
    assert "did not answer within 6 s" in silent["error"]


def test_mcp_list_reports_a_name_clash(tmp_path: Path) -> None:
    out = io.StringIO()
    options = McpOptions(commands=(f"{BOX} --name-clash read_file",))
    assert list_servers(options, {}, tmp_path, out=out) == 2
    assert "name clash: the tool 'read_file' of MCP server 'toolbox'" in out.getvalue()
    with pytest.raises(ConfigError, match="no MCP server configured"):
        list_servers(McpOptions(), {}, tmp_path)


def test_ask_and_chat_get_the_tools_or_none(tmp_path: Path) -> None:
    with open_for_run(McpOptions(), {}, tmp_path, tmp_path / "project") as nothing:
        assert nothing is None
    options = McpOptions(commands=(BOX,), prefix=True, call_timeout=7)
    with open_for_run(options, {}, tmp_path / "data", tmp_path / "project") as mcp:
        assert mcp is not None
        assert "toolbox__echo" in {t.name for t in mcp.tools}
    clash = McpOptions(commands=(f"{BOX} --name-clash move_file",))
    with (
        pytest.raises(ConfigError, match="pass --mcp-prefix"),
        open_for_run(clash, {}, tmp_path / "data", tmp_path / "project"),
    ):
        pass


def test_a_server_run_prints_nothing_of_its_own_on_the_screen(tmp_path: Path) -> None:
    code = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from minipi.cli.mcp import McpOptions, list_servers, open_for_run
from pathlib import Path
options = McpOptions(commands=({BOX + " --garbage"!r},))
with open_for_run(options, {{}}, Path({str(tmp_path)!r}), None) as mcp:
    tools = {{t.name: t for t in mcp.tools}}
    tools["fail"].execute({{"reason": "x"}})
    print(tools["crash"].execute({{}}).code)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert (done.stdout, done.stderr) == ("server_exited\n", "")
    log = (tmp_path / "mcp" / "toolbox.log").read_text(encoding="utf-8")
    assert "toolbox: about to crash" in log
    assert "skipped a line of stdout" in log
