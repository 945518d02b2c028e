"""Issue 37, item 8: the command line beats the config file, the endpoint/model-file pair too.

An endpoint (``base_url``) and a local model file (``model_file``) exclude each other. Given in
different layers, the higher one is used (flag > environment > config file) and the other is
set aside, which ``minipi config`` says with its source; only a pair within one layer (both
flags, both variables, both in the file) is a usage error. Before, ``--base-url`` with a
``model_file`` in the config file (or ``--model-file`` with its ``base_url``) was one.
"""

from __future__ import annotations

from pathlib import Path

from support.cli import EXAMPLES, clean_env, minipi
from support.fake import FakeServer, Turn

SAMPLE = EXAMPLES / "sample_project"


def write_config(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    return config


def test_base_url_flag_beats_the_config_files_model_file(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, f'model_file = "{tmp_path / "m.gguf"}"\n')
    env = clean_env(MINIPI_CONFIG=str(config))
    fake_server.add(Turn("the answer"))
    proc = minipi(
        "ask", "q", "-p", str(SAMPLE), "--base-url", fake_server.base_url, "-m", "fake-model",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "the answer" in proc.stdout
    assert len(fake_server.requests) == 1


def test_model_file_flag_beats_the_config_files_base_url(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, f'base_url = "{fake_server.base_url}"\nmodel = "m"\n')
    missing = tmp_path / "m.gguf"
    env = clean_env(MINIPI_CONFIG=str(config))
    proc = minipi("ask", "q", "-p", str(SAMPLE), "--model-file", str(missing), env=env)
    assert proc.returncode == 2
    assert f"model file {missing} (from --model-file) does not exist" in proc.stderr
    assert "names an endpoint" not in proc.stderr
    assert fake_server.requests == []  # the config file's endpoint was not used


def test_minipi_config_says_which_of_the_pair_is_in_effect_and_why(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    config = write_config(tmp_path, f'model_file = "{model}"\n')
    env = clean_env(MINIPI_CONFIG=str(config))
    flag = minipi("config", "--base-url", "http://127.0.0.1:9/v1", env=env)
    assert flag.returncode == 0, flag.stderr
    lines = flag.stdout.splitlines()
    assert 'base_url = "http://127.0.0.1:9/v1"  # --base-url' in lines
    assert f"# model_file is not set  # not used: --base-url given (config file {config})" in (
        lines
    )
    by_env = minipi("config", env={**env, "QWEN_BASE_URL": "http://127.0.0.1:9/v1"})
    assert by_env.returncode == 0, by_env.stderr
    assert (
        f"# model_file is not set  # not used: env QWEN_BASE_URL given (config file {config})"
        in by_env.stdout.splitlines()
    )
    endpoint = write_config(tmp_path, 'base_url = "http://127.0.0.1:9/v1"\n')
    reverse = minipi("config", "--model-file", str(model), env=env)
    assert reverse.returncode == 0, reverse.stderr
    assert f'model_file = "{model}"  # --model-file' in reverse.stdout.splitlines()
    assert (
        f"# base_url is not set  # not used: --model-file given (config file {endpoint})"
        in reverse.stdout.splitlines()
    )


def test_both_in_the_config_file_is_still_a_usage_error(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, f'base_url = "http://127.0.0.1:9/v1"\nmodel_file = "{tmp_path / "m.gguf"}"\n'
    )
    proc = minipi("config", env=clean_env(MINIPI_CONFIG=str(config)))
    assert proc.returncode == 2
    assert f"config file {config} names an endpoint" in proc.stderr
    assert "drop the one you do not mean" in proc.stderr


def test_every_flag_beats_the_config_file(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        'model = "from-file"\nwire = "responses"\nmax_turns = 12\ntimeout = 300\n'
        'approve = "all"\nevidence = "require"\ntemperature = 0.5\nsystem = "file"\n',
    )
    proc = minipi(
        "config", "-m", "from-flag", "--wire", "chat", "--max-turns", "3", "--timeout", "9",
        "--approve", "deny", "--evidence", "off", "--temperature", "0.1", "--system", "flag",
        env=clean_env(MINIPI_CONFIG=str(config)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for line in (
        'model = "from-flag"  # --model',
        'wire = "chat"  # --wire',
        "max_turns = 3  # --max-turns",
        "timeout = 9.0  # --timeout",
        'approve = "deny"  # --approve',
        'evidence = "off"  # --evidence',
        "temperature = 0.1  # --temperature",
        'system = "flag"  # --system',
    ):
        assert line in lines, (line, proc.stdout)
