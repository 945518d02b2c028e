"""Issue 23, keys and configuration, through the real command: the key command never runs
in the project nor from a file others can write; a base URL's credentials never reach
``batch.json`` nor a message; the config file's ``approve = "all"`` reaches no batch; what a
batch writes is the user's alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from batch_tasks.scripted import ByQuestion, batch_cli, read_results, serve, task_rows, write_tasks
from support.cli import EXAMPLES, clean_env, copy_example
from support.fake import FakeServer, Turn

SAMPLE = EXAMPLES / "sample_project"


def _config(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "config"
    folder.mkdir(mode=0o700)
    path = folder / "config.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def test_the_key_command_runs_in_the_config_folder_not_in_the_project(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    project = copy_example("sample_project", tmp_path)
    # a project's own module that a `python3 -m ...` helper would import from the project
    (project / "keyhelper.py").write_text("print('sk-from-the-project')\n", encoding="utf-8")
    command = f"{sys.executable} -c 'import os; print(\"sk-\" + os.path.basename(os.getcwd()))'"
    config = _config(
        tmp_path,
        f'base_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        f'api_key_command = "{command.replace(chr(34), chr(92) + chr(34))}"\n',
    )
    fake_server.add(Turn("ok"))
    proc = subprocess.run(
        [sys.executable, "-m", "minipi", "ask", "q", "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        env=clean_env(MINIPI_CONFIG=str(config)),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert fake_server.requests[-1].headers.get("authorization") == "Bearer sk-config"


def test_a_config_file_others_can_write_does_not_run_its_command(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    marker = tmp_path / "ran"
    config = _config(
        tmp_path,
        f'base_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        f'api_key_command = "touch {marker}"\n',
    )
    config.chmod(0o666)
    proc = subprocess.run(
        [sys.executable, "-m", "minipi", "ask", "q", "-p", str(SAMPLE)],
        capture_output=True,
        text=True,
        env=clean_env(MINIPI_CONFIG=str(config)),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "can be written by someone else" in proc.stderr
    assert f"chmod go-w {config}" in proc.stderr
    assert not marker.exists()
    assert fake_server.requests == []


def test_base_url_credentials_never_reach_batch_json_nor_a_message(tmp_path: Path) -> None:
    server = serve(ByQuestion())
    tasks = write_tasks(tmp_path / "tasks.jsonl", task_rows(1, SAMPLE))
    out = tmp_path / "out"
    host = server.base_url.removeprefix("http://")
    try:
        for password in ("old-pw-1234", "new-pw-5678"):
            url = f"http://me:{password}@{host}"
            proc = batch_cli(
                str(tasks), "--out", str(out), "--base-url", url, "--model", "fake-model"
            )
            assert proc.returncode == 0, proc.stderr
        again = [str(tasks), "--out", str(out), "--base-url", url, "--model", "fake-model"]
        proc = batch_cli(*again, "--max-turns", "9")  # changed: the differences are shown
        forced = batch_cli(*again, "--max-turns", "9", "--force")
    finally:
        server.stop()
    assert proc.returncode == 2
    assert forced.returncode == 0, forced.stderr
    written = (out / "batch.json").read_text(encoding="utf-8")
    for text in (written, proc.stderr, proc.stdout, forced.stderr):
        assert "pw-" not in text
    assert json.loads(written)["config"]["base_url"] == server.base_url
    for name in ("batch.json", "results.jsonl", "summary.json"):
        assert (out / name).stat().st_mode & 0o077 == 0, name
    assert out.stat().st_mode & 0o077 == 0
    assert len(read_results(out)) == 1


def test_approve_all_from_the_config_file_reaches_no_batch(tmp_path: Path) -> None:
    server = serve(ByQuestion())
    shelter = copy_example("shelter", tmp_path)
    config = _config(tmp_path, 'approve = "all"\n')
    rows = [{"id": "cat", "question": "adopt the cat [move]", "project": str(shelter)}]
    tasks = write_tasks(tmp_path / "tasks.jsonl", rows)
    args = [str(tasks), "--out", str(tmp_path / "out"), "--base-url", server.base_url]
    try:
        proc = batch_cli(*args, "--model", "fake-model", env=clean_env(MINIPI_CONFIG=str(config)))
    finally:
        server.stop()
    assert f'approve = "all" in the config file {config} is not used' in proc.stderr
    assert (shelter / "inbox" / "猫咪小花.txt").exists()  # read-only: nothing moved
