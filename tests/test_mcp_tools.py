"""MCP tools against a real SDK server (tests/mcp_servers/toolbox.py over stdio): names,
schemas, read-only and trust, approvals, results (isError, every content block, bounds), and a
whole run through ``run_agent`` with the scripted model."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minipi.ai.declare import declare_tool

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from mcp_servers.helpers import toolbox
from minipi.agent import AgentConfig, AgentTool, ApprovalRequest, run_agent
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.errors import ConfigError
from minipi.mcp import McpConfig, McpTools, open_mcp_tools

BUILTINS = ("list_files", "read_file", "search_files", "move_file")


@pytest.fixture(scope="module")
def trusted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpTools]:
    """One trusted toolbox for the whole module (a server start costs about a second)."""
    config = McpConfig(log_dir=tmp_path_factory.mktemp("logs"), reserved_names=BUILTINS)
    with open_mcp_tools([toolbox(trust=True)], config) as mcp:
        yield mcp


def by_name(mcp: McpTools) -> dict[str, AgentTool]:
    return {tool.name: tool for tool in mcp.tools}


def test_tools_keep_their_names_descriptions_and_schemas(trusted: McpTools) -> None:
    tools = by_name(trusted)
    assert {"echo", "add", "fail", "media", "big", "sleep", "crash", "quit_later"} <= set(tools)
    echo = tools["echo"]
    assert echo.description == "Return the text unchanged."
    assert echo.parameters["properties"] == {"text": {"title": "Text", "type": "string"}}
    assert echo.parameters["required"] == ["text"]
    declared = declare_tool(echo.spec(), "responses")
    # the wire layer's rule, applied to the schema as is: no additionalProperties false
    assert declared["strict"] is False
    (server,) = trusted.servers
    assert server.protocol
    assert server.log_path is not None
    assert server.log_path.name == "toolbox.log"


def test_only_read_only_tools_of_a_trusted_server_skip_approval(
    trusted: McpTools, tmp_path: Path
) -> None:
    assert not by_name(trusted)["echo"].mutating  # readOnlyHint, trusted
    assert by_name(trusted)["add"].mutating  # no hint
    with open_mcp_tools([toolbox()], McpConfig(log_dir=tmp_path)) as untrusted:
        assert by_name(untrusted)["echo"].mutating  # the same hint, not trusted
        info = {t.name: t for t in untrusted.servers[0].tools}["echo"]
        assert info.read_only_hint
        assert info.mutating


def test_a_run_calls_the_mcp_tool_and_the_result_reaches_the_model(trusted: McpTools) -> None:
    model = ScriptedModel(
        [reply_calls(("echo", {"text": "ping 你好"}), ("add", {"a": 2, "b": 3})), reply_text("ok")]
    )
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    result = run_agent(model, trusted.with_approval(approve), AgentConfig(), "use the tools")
    assert result.status == "succeeded"
    outputs = [
        item.output for item in model.requests[1].items if item.type == "function_call_output"
    ]
    assert outputs == ["ping 你好", "5"]
    assert [r.tool for r in asked] == ["add"]  # echo is read-only on a trusted server
    assert dict(asked[0].details) == {
        "MCP server": "toolbox",
        "tool": "add",
        "argument a": "2",
        "argument b": "3",
    }


def test_a_change_lets_earlier_reads_run_again(trusted: McpTools) -> None:
    assert by_name(trusted)["add"].execute({"a": 1, "b": 2}).changed  # it may have changed things
    assert not by_name(trusted)["echo"].execute({"text": "a"}).changed  # read-only, trusted
    assert not by_name(trusted)["fail"].execute({"reason": "r"}).changed  # it failed


def test_read_only_calls_of_one_reply_run_together(trusted: McpTools) -> None:
    model = ScriptedModel(
        [reply_calls(*[("nap", {"seconds": 1.0 + n / 100}) for n in range(4)]), reply_text("ok")]
    )
    started = time.monotonic()
    result = run_agent(model, trusted.with_approval(lambda r: False), AgentConfig(), "nap")
    assert result.status == "succeeded"
    assert time.monotonic() - started < 2.5  # four 1 s naps, at once, over one session
    outputs = [i.output for i in model.requests[1].items if i.type == "function_call_output"]
    assert outputs == ["rested"] * 4


def test_a_refused_approval_runs_nothing(trusted: McpTools) -> None:
    before = json.loads(by_name(trusted)["calls"].execute({}).content)
    tools = {t.name: t for t in trusted.with_approval(lambda request: False)}
    result = tools["add"].execute({"a": 1, "b": 1})
    assert (result.is_error, result.code) == (True, "user_denied")
    assert json.loads(by_name(trusted)["calls"].execute({}).content) == before


def test_arguments_are_checked_before_the_server_sees_them(trusted: McpTools) -> None:
    before = json.loads(by_name(trusted)["calls"].execute({}).content).get("add", 0)
    model = ScriptedModel([reply_calls(("add", {"a": "two", "b": 3})), reply_text("gave up")])
    tools = trusted.with_approval(lambda request: True)
    run_agent(model, tools, AgentConfig(), "add")
    (output,) = [i.output for i in model.requests[1].items if i.type == "function_call_output"]
    assert output.startswith('error [invalid_arguments]: add: a: "two" must be integer')
    assert json.loads(by_name(trusted)["calls"].execute({}).content).get("add", 0) == before


def test_an_is_error_result_is_a_tool_error_with_the_servers_text(trusted: McpTools) -> None:
    result = by_name(trusted)["fail"].execute({"reason": "disk full"})
    assert result.is_error
    assert result.code == "tool_error"
    assert "fail on MCP server 'toolbox' failed" in result.content
    assert "refused: disk full" in result.content


def test_every_content_block_is_kept_binary_ones_as_a_note(trusted: McpTools) -> None:
    result = by_name(trusted)["media"].execute({})
    assert not result.is_error
    assert result.content.splitlines() == [
        "caption",
        "[image: image/png, 100 bytes, not shown]",
        "[audio: audio/wav, 300 bytes, not shown]",
        "[resource file:///notes.txt]",
        "inline note",
        "[resource file:///blob.bin: application/octet-stream, 3 bytes, not shown]",
        "[resource link: file:///elsewhere.txt, 42 bytes]",
    ]


def test_a_10_mb_result_is_bounded_and_says_so(trusted: McpTools) -> None:
    started = time.perf_counter()
    result = by_name(trusted)["big"].execute({"megabytes": 10})
    assert time.perf_counter() - started < 20
    limit = McpConfig().max_output_chars
    body, notice = result.content.rsplit("\n", 1)
    assert body == "x" * limit
    assert notice.startswith(f"[truncated: showing {limit:,} of 10,000,000 characters")
    assert by_name(trusted)["echo"].execute({"text": "after"}).content == "after"


def test_a_server_with_500_tools_lists_them_all(tmp_path: Path) -> None:
    with open_mcp_tools([toolbox("--many", "500")], McpConfig(log_dir=tmp_path)) as mcp:
        names = [tool.name for tool in mcp.tools]
        assert len([n for n in names if n.startswith("t")]) == 500
        assert {"t0000", "t0499"} <= set(names)
        assert by_name(mcp)["t0499"].execute({"value": 1}).content == "500"
        (server,) = mcp.servers
        assert all(tool.tokens > 10 for tool in server.tools)


def test_a_clash_with_a_built_in_is_refused_naming_both_and_the_option(tmp_path: Path) -> None:
    config = McpConfig(log_dir=tmp_path, reserved_names=BUILTINS)
    with (
        pytest.raises(ConfigError, match="--mcp-prefix") as raised,
        open_mcp_tools([toolbox("--name-clash", "read_file")], config),
    ):
        pass
    message = str(raised.value)
    assert "the tool 'read_file' of MCP server 'toolbox'" in message
    assert "minipi's built-in tool 'read_file'" in message
    assert "toolbox__read_file" in message
    assert raised.value.code == "mcp_name_clash"


def test_prefixed_names_resolve_a_clash_and_bad_declarations_are_left_out(
    tmp_path: Path,
) -> None:
    config = McpConfig(log_dir=tmp_path, reserved_names=BUILTINS, prefix_names=True)
    server = toolbox("--name-clash", "read_file", "--bad-schema")
    with open_mcp_tools([server], config) as mcp:
        tools = by_name(mcp)
        assert tools["toolbox__read_file"].execute({"text": "same"}).content == "same"
        assert "toolbox__echo" in tools
        assert "toolbox__bad_schema" not in tools
        ((name, why),) = mcp.servers[0].left_out
        assert name == "bad_schema"
        assert why == "its parameters are not a JSON Schema minipi can check (Unknown type)"


def test_two_servers_with_the_same_tool_are_refused_naming_both(tmp_path: Path) -> None:
    servers = [toolbox(name="first"), toolbox(name="second")]
    with (
        pytest.raises(ConfigError, match="the tool 'echo' of MCP server 'second'") as raised,
        open_mcp_tools(servers, McpConfig(log_dir=tmp_path)),
    ):
        pass
    assert "has the same name as the tool 'echo' of MCP server 'first'" in str(raised.value)
    assert "second__echo" in str(raised.value)
