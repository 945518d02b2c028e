"""Issue 37, item 4: minipi's own files never reach the model.

minipi's config directory (``$XDG_CONFIG_HOME/minipi``, else ``~/.config/minipi``), its data
directory (``$MINIPI_DATA_DIR``, else ``$XDG_DATA_HOME/minipi``, else
``~/.local/share/minipi``) and the folders between them and the home directory are refused as
a project root by ``ask``, ``chat`` and a batch task, with the message of ``~/.aws``; with
``--allow-broad-root`` on the home directory their files stay out of the file tools. A
``MINIPI_CONFIG`` must be absolute: a relative one was read from whatever the current
directory was, and its ``api_key_command`` ran. Before, all of these were accepted, and the
config file (a base URL password), the chat history and the MCP logs went to the model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batch_tasks.scripted import batch_cli, endpoint_args, read_results, write_tasks
from support.cli import EXAMPLES, clean_env, minipi
from support.fake import Call, FakeServer, Turn

PASSWORD = "hunter2-own-dirs"
OWN = ("MINIPI_CONFIG", "MINIPI_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME")


def home_env(tmp_path: Path, **extra: str) -> tuple[Path, dict[str, str]]:
    """A fresh home holding minipi's config file (a password in its base URL) and data
    (a chat history), and the environment that finds them there."""
    home = tmp_path / "home"
    env = clean_env(HOME=str(home))
    for name in OWN:
        env.pop(name, None)
    env.update(extra)
    config = Path(env.get("XDG_CONFIG_HOME", home / ".config")) / "minipi"
    data = Path(env.get("MINIPI_DATA_DIR", Path(env.get("XDG_DATA_HOME", home / ".local/share"))))
    data = data if "MINIPI_DATA_DIR" in env else data / "minipi"
    for folder in (config, data, data / "mcp"):
        folder.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        f'base_url = "http://me:{PASSWORD}@127.0.0.1:9/v1"\nmodel = "fake-model"\n'
    )
    (data / "chat_history").write_text(f"what is the password? {PASSWORD}\n")
    (data / "mcp" / "server.log").write_text(f"token {PASSWORD}\n")
    return home, env


def ask(
    root: Path, server: FakeServer, env: dict[str, str], *more: str
) -> subprocess.CompletedProcess[str]:
    return minipi("ask", "q", "-p", str(root), *endpoint_args(server), *more, env=env)


@pytest.mark.parametrize(
    "where",
    [".config/minipi", ".config/minipi/sub", ".local/share/minipi", ".local/share/minipi/mcp"],
)
def test_minipis_own_directories_are_refused_as_the_root_like_aws(
    tmp_path: Path, fake_server: FakeServer, where: str
) -> None:
    home, env = home_env(tmp_path)
    (home / where).mkdir(parents=True, exist_ok=True)
    proc = ask(home / where, fake_server, env)
    assert proc.returncode == 2, proc.stderr
    assert "a directory of secrets, which the sensitive-path guard then cannot cover" in (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr
    assert fake_server.requests == []


@pytest.mark.parametrize("where", [".config", ".local", ".local/share"])
def test_the_folders_between_home_and_minipis_own_are_refused(
    tmp_path: Path, fake_server: FakeServer, where: str
) -> None:
    home, env = home_env(tmp_path)
    proc = ask(home / where, fake_server, env)
    assert proc.returncode == 2, proc.stderr
    assert "minipi's own" in proc.stderr
    assert fake_server.requests == []
    flagged = ask(home / where, fake_server, env, "--allow-broad-root")  # the guard cannot
    assert flagged.returncode == 2, flagged.stderr  # cover minipi/ from there: still refused
    assert fake_server.requests == []


def test_the_xdg_and_minipi_data_dir_locations_are_the_ones_refused(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    _, env = home_env(
        tmp_path,
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
        MINIPI_DATA_DIR=str(tmp_path / "store"),
    )
    refused = [
        tmp_path / "xdg-config",
        tmp_path / "xdg-config" / "minipi",
        tmp_path / "store",
        tmp_path,
    ]
    for root in refused:
        proc = ask(root, fake_server, env)
        assert proc.returncode == 2, (root, proc.stderr)
    assert fake_server.requests == []
    project = tmp_path / "project"
    project.mkdir()
    fake_server.add(Turn("fine"))
    assert ask(project, fake_server, env).returncode == 0  # a project beside them is fine


def test_chat_refuses_minipis_config_directory(tmp_path: Path, fake_server: FakeServer) -> None:
    home, env = home_env(tmp_path)
    proc = minipi(
        "chat", "-p", str(home / ".config" / "minipi"), *endpoint_args(fake_server),
        stdin="read config.toml\nexit\n", env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "a directory of secrets" in proc.stderr
    assert fake_server.requests == []


def test_a_batch_task_rooted_in_minipis_own_directories_is_refused(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    home, env = home_env(tmp_path)
    rows = [
        {"id": "config", "question": "q", "project": str(home / ".config" / "minipi")},
        {"id": "data", "question": "q", "project": str(home / ".local" / "share" / "minipi")},
        {"id": "parent", "question": "q", "project": str(home / ".config")},
    ]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    proc = batch_cli(str(tasks), "--out", str(out), *endpoint_args(fake_server), env=env)
    assert proc.returncode == 1, proc.stderr
    results = {r["id"]: r for r in read_results(out)}
    assert {r["code"] for r in results.values()} == {"bad_project"}
    assert "directory of secrets" in results["config"]["error"]
    assert "directory of secrets" in results["data"]["error"]
    assert "minipi's own" in results["parent"]["error"]
    assert fake_server.requests == []


def _nosy(body: dict[str, Any]) -> Turn:
    """Reads minipi's own files through each tool, then answers."""
    if not any(m.get("role") == "tool" for m in body.get("messages", [])):
        return Turn(
            calls=[
                Call("read_file", {"path": ".config/minipi/config.toml"}),
                Call("read_file", {"path": ".local/share/minipi/chat_history"}),
                Call("read_file", {"path": ".local/share/minipi/mcp/server.log"}),
                Call("list_files", {"path": ".config/minipi"}),
                Call("search_files", {"query": "base_url", "path": ".config"}),
                Call("search_files", {"query": "token", "path": ".local"}),
                Call("search_files", {"query": "password", "path": "."}),
            ]
        )
    return Turn("nothing there")


def test_with_the_home_directory_allowed_minipis_files_stay_out_of_the_tools(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    home, env = home_env(tmp_path)
    fake_server.add(_nosy)
    fake_server.add(_nosy)
    proc = ask(home, fake_server, env, "--allow-broad-root", "--json")
    assert proc.returncode == 0, proc.stderr
    sent = [json.dumps(r.body) for r in fake_server.requests if r.body is not None]
    assert len(sent) == 2
    assert PASSWORD not in "".join(sent)
    assert sent[1].count("error [sensitive_path]") == 4  # three reads and the listing
    assert sent[1].count("[not searched: sensitive: 1]") == 2  # the searches skipped them


def test_a_relative_minipi_config_is_refused_and_its_key_command_not_run(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    command = f"sh -c 'touch {marker}; echo sk-planted'"
    (tmp_path / "planted.toml").write_text(
        f'base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_command = "{command}"\n'
    )
    env = clean_env(MINIPI_CONFIG="planted.toml")
    for args in (["ask", "q", "-p", str(EXAMPLES / "sample_project")], ["config"]):
        proc = subprocess.run(
            [sys.executable, "-m", "minipi", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert "MINIPI_CONFIG" in proc.stderr
        assert "absolute" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not marker.exists()


def test_the_guard_knows_minipis_own_directories_at_their_usual_places() -> None:
    from minipi.files.paths import is_sensitive

    assert is_sensitive([".config", "minipi", "config.toml"])
    assert is_sensitive(["home", "u", ".Local", "share", "MiniPi", "sessions.db"])
    assert is_sensitive([".local", "share", "minipi"])
    assert not is_sensitive([".config", "minipi-docs", "a.md"])
    assert not is_sensitive(["minipi", "config.toml"])  # a project of that name is not minipi's
    assert not is_sensitive([".config", "minipi", "x"], allow=[".config/minipi"])
