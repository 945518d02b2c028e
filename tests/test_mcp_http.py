"""Streamable HTTP: the toolbox served by the SDK on 127.0.0.1, behind a bearer token."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import http_toolbox
from minipi.agent import AgentConfig, run_agent
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.errors import ConfigError
from minipi.mcp import McpConfig, McpServer, open_mcp_tools

TOKEN = "s3cret-token"


def test_an_http_server_with_headers_serves_a_run(tmp_path: Path) -> None:
    with http_toolbox("--token", TOKEN) as served:
        server = McpServer(
            "web", url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}, trust=True
        )
        with open_mcp_tools([server], McpConfig(log_dir=tmp_path)) as mcp:
            tools = {t.name: t for t in mcp.tools}
            assert not tools["echo"].mutating
            assert tools["add"].mutating
            assert mcp.servers[0].log_path is None  # no process, no log
            model = ScriptedModel([reply_calls(("echo", {"text": "over http"})), reply_text("ok")])
            result = run_agent(model, mcp.with_approval(lambda r: False), AgentConfig(), "echo")
            assert result.status == "succeeded"
            assert model.requests[1].items[-1].output == "over http"  # type: ignore[union-attr]
            assert tools["fail"].execute({"reason": "no"}).code == "tool_error"


def test_a_refused_token_fails_the_start_naming_the_server(tmp_path: Path) -> None:
    with http_toolbox("--token", TOKEN) as served:
        server = McpServer("web", url=served.url, headers={"Authorization": "Bearer wrong"})
        with (
            pytest.raises(ConfigError) as raised,
            open_mcp_tools([server], McpConfig(log_dir=tmp_path)),
        ):
            pass
    message = str(raised.value)
    assert "MCP server 'web' (http: http://127.0.0.1:" in message
    assert "refused the Authorization header it was given (HTTP 401): check the token" in message
    assert "minipi does not support OAuth" in message
    assert "wrong" not in message  # headers are never shown


def test_a_server_that_is_not_there_fails_the_start_quickly(tmp_path: Path) -> None:
    from minipi.local.ports import free_port

    server = McpServer("gone", url=f"http://127.0.0.1:{free_port()}/mcp")
    started = time.monotonic()
    with (
        pytest.raises(ConfigError, match=r"MCP server 'gone'.*could not be connected"),
        open_mcp_tools([server], McpConfig(log_dir=tmp_path)),
    ):
        pass
    assert time.monotonic() - started < 10


def test_a_server_that_goes_away_mid_run_is_a_tool_error(tmp_path: Path) -> None:
    with http_toolbox() as served:
        config = McpConfig(log_dir=tmp_path, call_timeout=5)
        with open_mcp_tools([McpServer("web", url=served.url)], config) as mcp:
            tools = {t.name: t for t in mcp.tools}
            assert tools["echo"].execute({"text": "1"}).content == "1"
            served.stop()
            started = time.monotonic()
            result = tools["echo"].execute({"text": "2"})
            assert time.monotonic() - started < 3
            assert (result.is_error, result.code) == (True, "server_unreachable")
            assert "MCP server 'web' (http: http://127.0.0.1:" in result.content
