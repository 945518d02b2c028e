"""The reference servers from the package index: mcp-server-git on a repository this test
creates (a question about its history answered through ``run_agent``), and mcp-server-time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'minipi[mcp]')")

from minipi.agent import AgentConfig, run_agent
from minipi.ai.testing import ScriptedModel, reply_calls, reply_text
from minipi.mcp import McpConfig, McpServer, open_mcp_tools


def reference(module: str, *args: str, name: str) -> McpServer:
    pytest.importorskip(module, reason=f"{module} is not installed (pip install {module})")
    return McpServer(name, command=sys.executable, args=("-m", module, *args), trust=True)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for number, message in enumerate(["Add the daily report", "Fix the revenue total"]):
        (repo / "report.txt").write_text(f"version {number}\n", encoding="utf-8")
        git("add", "report.txt")
        git("commit", "-q", "-m", message)
    return repo


def test_a_question_about_a_repositorys_history_through_mcp_server_git(
    repository: Path, tmp_path: Path
) -> None:
    server = reference("mcp_server_git", "--repository", str(repository), name="git")
    with open_mcp_tools([server], McpConfig(log_dir=tmp_path / "logs")) as mcp:
        tools = {t.name: t for t in mcp.tools}
        assert not tools["git_log"].mutating  # read-only hint, trusted
        assert tools["git_commit"].mutating  # changes the repository: always asks
        model = ScriptedModel(
            [
                reply_calls(("git_log", {"repo_path": str(repository), "max_count": 5})),
                reply_text("The last commit fixed the revenue total."),
            ]
        )
        result = run_agent(model, mcp.with_approval(lambda r: False), AgentConfig(), "history?")
    assert result.status == "succeeded"
    output = model.requests[1].items[-1].output  # type: ignore[union-attr]
    assert "Fix the revenue total" in output
    assert "Add the daily report" in output
    assert output.index("Fix the revenue total") < output.index("Add the daily report")


def test_mcp_server_time_answers_in_the_timezone_asked(tmp_path: Path) -> None:
    server = reference("mcp_server_time", "--local-timezone", "UTC", name="time")
    with open_mcp_tools([server], McpConfig(log_dir=tmp_path)) as mcp:
        tools = {t.name: t for t in mcp.tools}
        assert set(tools) == {"get_current_time", "convert_time"}
        now = tools["get_current_time"].execute({"timezone": "Asia/Shanghai"})
        assert not now.is_error
        assert '"timezone": "Asia/Shanghai"' in now.content
        wrong = tools["get_current_time"].execute({"timezone": "Mars/Olympus"})
        assert wrong.is_error
