"""A question only withheld tools fit is stopped before the model runs (issue 38, item 1).

A read-only run withholds the MCP tools it cannot trust not to change things; a question
that shares words with one of them (``minipi.guided.fit``) and with none of the tools the
run offers is one those tools were for: the run stops with ``tools_withheld`` (exit 2),
nothing sent to the model, naming the tools and the flag that offers them. Through the real
``minipi`` with a hand-written MCP server (declarations like ``mcp-server-time``'s) and the
fake model over HTTP.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import HERE
from support.cli import EXAMPLES, clean_env, minipi
from support.fake import FakeServer, Turn

SCRIPTED = HERE / "scripted.py"
SAMPLE = EXAMPLES / "sample_project"
HINTED = {"readOnlyHint": True}
TIME_TOOLS = [
    {
        "name": "get_current_time",
        "description": "Get current time in a specific timezones",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}},
            "required": ["timezone"],
        },
        "annotations": HINTED,
    },
    {
        "name": "convert_time",
        "description": "Convert time between timezones",
        "inputSchema": {
            "type": "object",
            "properties": {
                "source_timezone": {"type": "string"},
                "time": {"type": "string"},
                "target_timezone": {"type": "string"},
            },
            "required": ["source_timezone", "time", "target_timezone"],
        },
        "annotations": HINTED,
    },
]
ALARM = {
    "name": "set_alarm",
    "description": "Set an alarm that rings at the given hour",
    "inputSchema": {"type": "object", "properties": {"hour": {"type": "integer"}}},
}
TOKYO = "What time is it now in Tokyo?"


def config(tmp_path: Path, tools: list[dict[str, Any]]) -> Path:
    """An ``mcpServers`` file with one server named ``time`` (not trusted)."""
    server = {"command": sys.executable, "args": [str(SCRIPTED), "--tools", json.dumps(tools)]}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"time": server}}), encoding="utf-8")
    return path


def ask(server: FakeServer, tmp_path: Path, question: str, *flags: str, tools: Any = None) -> Any:
    base = ("--project", str(SAMPLE), "--base-url", server.base_url, "--model", "fake-model")
    mcp = ("--mcp-config", str(config(tmp_path, tools or TIME_TOOLS)))
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    return minipi("ask", question, *base, *mcp, *flags, env=env, timeout=120)


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def test_a_question_only_withheld_tools_fit_is_stopped_before_the_model_runs(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    proc = ask(fake_server, tmp_path, TOKYO)
    assert proc.returncode == 2, proc.stderr
    assert fake_server.posts == 0  # nothing was sent
    assert proc.stdout == ""
    said = proc.stderr[proc.stderr.index("tools_withheld") :]
    assert "the question fits only tools this run does not offer" in said
    assert "get_current_time, convert_time" in said
    assert "--mcp-trust time offers them" in said


def test_the_flag_it_names_offers_the_tools_and_the_question_runs(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn("I cannot tell the time without calling a tool.")

    fake_server.add(answer)
    proc = ask(fake_server, tmp_path, TOKYO, "--mcp-trust", "time")
    assert proc.returncode == 0, proc.stderr
    assert "tools_withheld" not in proc.stderr
    assert {"get_current_time", "convert_time"} <= set(offered(seen[0]))


def test_a_question_an_offered_tool_fits_runs_as_before(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """A question about the project (no word of the time tools), one that names a file of
    it (the file tools take it), and one that words cannot place (Chinese, English tools)."""
    for question in (
        "What does the daily report say?",
        "What time does reports/daily-2026-09-06.json give?",
        "东京现在几点？",
    ):
        fake_server.add(Turn("I cannot tell."))
        proc = ask(fake_server, tmp_path, question)
        assert proc.returncode == 0, (question, proc.stderr)
        assert "tools_withheld" not in proc.stderr
    assert fake_server.posts == 3


def test_a_chinese_run_says_it_in_chinese(fake_server: FakeServer, tmp_path: Path) -> None:
    proc = ask(fake_server, tmp_path, "用 get_current_time 查一下东京现在几点")
    assert proc.returncode == 2, proc.stderr
    assert fake_server.posts == 0
    said = proc.stderr[proc.stderr.index("tools_withheld") :]
    assert said.startswith("tools_withheld：问题只与本次运行未提供的工具相符")
    assert "未提供：get_current_time, convert_time" in said
    assert "--mcp-trust time 会提供" in said
    assert "offers" not in said


def test_a_tool_that_may_change_things_names_approve_ask(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    proc = ask(fake_server, tmp_path, "Set an alarm for seven", tools=[ALARM])
    assert proc.returncode == 2, proc.stderr
    assert fake_server.posts == 0
    said = proc.stderr[proc.stderr.index("tools_withheld") :]
    assert "set_alarm" in said
    assert "--approve ask offers them" in said
    assert "--mcp-trust" not in said


def test_a_chat_question_only_withheld_tools_fit_is_not_sent(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.add(Turn("I cannot tell."))
    base = ("--project", str(SAMPLE), "--base-url", fake_server.base_url, "--model", "fake-model")
    mcp = ("--mcp-config", str(config(tmp_path, TIME_TOOLS)))
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    stdin = f"{TOKYO}\nWhat does the daily report say?\n"
    proc = minipi("chat", *base, *mcp, stdin=stdin, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = proc.stderr[proc.stderr.index("tools_withheld") :]
    assert "--mcp-trust time offers them" in said
    assert fake_server.posts == 1  # only the second question was asked
