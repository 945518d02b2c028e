"""One configuration: each setting resolved flag > environment > config file > default, its
source named (``minipi config``, messages), conflicting sources refused, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from minipi.agent import AgentConfig, AgentTool, ToolResult, run_agent
from minipi.ai.testing import ScriptedModel, reply_text
from minipi.assemble import ModelHandle, Settings, agent_config
from support.cli import EXAMPLES, clean_env, minipi
from support.fake import FakeServer, Turn

SAMPLE = EXAMPLES / "sample_project"


def write_config(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    return config


def test_base_url_and_model_file_flags_together_are_a_usage_error(tmp_path: Path) -> None:
    proc = minipi(
        "ask", "q", "-p", str(SAMPLE), "--base-url", "http://127.0.0.1:9/v1",
        "--model-file", str(tmp_path / "m.gguf"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--base-url names an endpoint" in proc.stderr
    assert "--model-file a local model file" in proc.stderr


def test_the_model_files_source_is_named_when_it_came_from_the_config_file(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "m.gguf"
    config = write_config(tmp_path, f'model_file = "{missing}"\n')
    proc = minipi("ask", "q", "-p", str(SAMPLE), env=clean_env(MINIPI_CONFIG=str(config)))
    assert proc.returncode == 2
    assert f"(from config file {config})" in proc.stderr
    assert "from --model-file" not in proc.stderr


def test_serve_honours_the_config_files_model_file(tmp_path: Path) -> None:
    missing = tmp_path / "m.gguf"
    config = write_config(tmp_path, f'model_file = "{missing}"\n')
    proc = minipi("serve", "--port", "0", env=clean_env(MINIPI_CONFIG=str(config)))
    assert proc.returncode == 2
    assert f"model file {missing} (from config file {config}) does not exist" in proc.stderr


def test_a_minipi_config_naming_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    proc = minipi("ask", "q", "-p", str(SAMPLE), env=clean_env(MINIPI_CONFIG=str(missing)))
    assert proc.returncode == 2
    assert f"MINIPI_CONFIG names {missing}, which does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_minipi_config_shows_each_setting_and_its_source_without_secrets(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "asked"
    script = tmp_path / "key.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho sk-from-the-command\n", encoding="utf-8")
    script.chmod(0o700)
    config = write_config(
        tmp_path, f'max_turns = 12\nevidence = "require"\napi_key_command = "{script}"\n'
    )
    env = clean_env(
        MINIPI_CONFIG=str(config),
        QWEN_BASE_URL="http://user:hunter2@127.0.0.1:9/v1",
        QWEN_MODEL="qwen3-0.6b",
    )
    proc = minipi("config", "--max-turns", "3", "--approve", "all", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"# config file: {config}" in lines
    assert "max_turns = 3  # --max-turns" in lines
    assert f'evidence = "require"  # config file {config}' in lines
    assert 'model = "qwen3-0.6b"  # env QWEN_MODEL' in lines
    assert 'approve = "all"  # --approve' in lines
    assert "max_calls_per_reply = 32  # default" in lines
    assert any(line.startswith('api_key = "***"  # config file') for line in lines)
    assert "hunter2" not in proc.stdout
    assert "sk-from-the-command" not in proc.stdout
    assert not marker.exists()  # the key command is not run to show the settings
    keyed = minipi("config", "--api-key", "sk-secret", env=env)
    assert 'api_key = "***"  # --api-key' in keyed.stdout.splitlines()
    assert "sk-secret" not in keyed.stdout


def test_the_command_line_beats_the_environment_for_endpoint_or_model_file(
    tmp_path: Path,
) -> None:
    env = clean_env(MINIPI_MODEL_FILE=str(tmp_path / "m.gguf"))
    proc = minipi("config", "--base-url", "http://127.0.0.1:9/v1", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "# model_file is not set  # not used: --base-url given" in proc.stdout
    both = clean_env(MINIPI_MODEL_FILE=str(tmp_path / "m.gguf"), QWEN_BASE_URL="http://h/v1")
    refused = minipi("config", env=both)
    assert refused.returncode == 2
    assert "env QWEN_BASE_URL names an endpoint" in refused.stderr
    assert "env MINIPI_MODEL_FILE a local model file" in refused.stderr


def test_a_config_file_value_is_checked_as_the_flag_is(tmp_path: Path) -> None:
    config = write_config(tmp_path, "max_calls_per_reply = 0\n")
    proc = minipi("config", env=clean_env(MINIPI_CONFIG=str(config)))
    assert proc.returncode == 2
    assert f"max_calls_per_reply in the config file {config}" in proc.stderr


def test_batch_refuses_approve_ask_from_the_config_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'approve = "ask"\n')
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "t1", "question": "q", "project": "."}\n', encoding="utf-8")
    env = clean_env(MINIPI_CONFIG=str(config))
    proc = minipi("batch", str(tasks), "-o", str(tmp_path / "out"), env=env)
    assert proc.returncode == 2
    assert "--approve ask needs a person at a terminal" in proc.stderr


def test_flags_of_the_table_keep_their_config_file_keys(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path, f'base_url = "{fake_server.base_url}"\nmodel = "fake-model"\nmax_turns = 1\n'
    )
    fake_server.add(Turn("ok"))
    proc = minipi("ask", "q", "-p", str(SAMPLE), env=clean_env(MINIPI_CONFIG=str(config)))
    assert proc.returncode == 0, proc.stderr


def test_agent_config_takes_keywords_only() -> None:
    with pytest.raises(TypeError):
        AgentConfig("qwen3-0.6b")  # type: ignore[call-arg]
    assert AgentConfig(evidence="require").instructions is None


def test_a_guided_run_without_list_files_gets_no_opening_call() -> None:
    def hello(arguments: object) -> ToolResult:
        return ToolResult("hello")

    tool = AgentTool("hello", "Says hello.", {"type": "object", "properties": {}}, hello)
    model = ScriptedModel([reply_text("done")])
    handle = ModelHandle(model, "http://127.0.0.1:9/v1", embedded=False, guided=True)
    config = agent_config(Settings(), handle, [tool])
    assert config.opening_calls == ()
    assert config.answer_on_last_turn  # guided: the last request asks for the answer
    unguided = ModelHandle(model, "http://127.0.0.1:9/v1", embedded=False)
    assert not agent_config(Settings(), unguided, [tool]).answer_on_last_turn  # the seed's way
    result = run_agent(model, [tool], config, "q")
    assert result.succeeded, result.error
