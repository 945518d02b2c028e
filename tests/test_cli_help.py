"""Help a person can scan, and messages that name what they looked at, through the real
command: ``ask --help`` and ``chat --help`` in sections ending with examples, ``-p`` given the
question, ``sessions list --project`` of a folder that is not there, ``minipi config`` with no
config file, and ``sessions show``'s seconds."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from minipi.cli.main import ask, chat, cli
from support.cli import EXAMPLES, clean_env, minipi
from support.fake import Call, FakeServer, Turn

HEADINGS = (
    "Model:",
    "Project and tools:",
    "Budgets:",
    "Evidence:",
    "Output:",
    "Sessions:",
    "MCP servers:",
    "Other:",
    "Examples:",
)
"""The sections of ``ask --help``, in the order a newcomer needs them."""

WHERE = {
    "--model": "Model:",
    "--base-url": "Model:",
    "--model-file": "Model:",
    "--project": "Project and tools:",
    "--approve": "Project and tools:",
    "--max-turns": "Budgets:",
    "--max-seconds": "Budgets:",
    "--evidence": "Evidence:",
    "--json": "Output:",
    "--quiet": "Output:",
    "--session": "Sessions:",
    "--continue": "Sessions:",
    "--mcp": "MCP servers:",
    "--mcp-trust": "MCP servers:",
    "--help": "Other:",
}
"""Where a newcomer looks for some of the flags."""


def _sections(text: str) -> dict[str, list[str]]:
    """The help's lines under each heading (a heading is a line that starts in column 0)."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line and not line.startswith(" "):
            current = sections.setdefault(line, [])
        else:
            current.append(line)
    return sections


def _terms(command: click.Command) -> list[str]:
    """Each option's first column in the help (``-m, --model TEXT``)."""
    parent = click.Context(cli, info_name="minipi", **cli.context_settings)
    ctx = click.Context(command, info_name=command.name, parent=parent)
    records = [
        p.get_help_record(ctx) for p in command.get_params(ctx) if isinstance(p, click.Option)
    ]
    return [record[0] for record in records if record is not None]


@pytest.mark.parametrize("command", [ask, chat], ids=["ask", "chat"])
def test_help_is_in_sections_in_order_and_ends_with_examples(command: click.Command) -> None:
    proc = minipi(str(command.name), "--help")
    assert proc.returncode == 0, proc.stderr
    headings = [line for line in proc.stdout.splitlines() if line.endswith(":") and line[0] != " "]
    assert headings == list(HEADINGS)
    sections = _sections(proc.stdout)
    for term in _terms(command):  # each option once, in one section
        pattern = re.compile(rf"^  {re.escape(term)}(  |$)")
        found = [title for title, lines in sections.items() for ln in lines if pattern.match(ln)]
        assert len(found) == 1, (term, found)
        flag = next((word for word in term.replace(",", " ").split() if word in WHERE), None)
        if flag is not None:
            assert found == [WHERE[flag]], term
    examples = [line.strip() for line in sections["Examples:"] if line.strip()]
    assert examples
    assert all(line.startswith(("#", "minipi ", "--", "cat ")) for line in examples)


def test_ask_examples_are_commands_that_run_as_written() -> None:
    """The examples name the sample project, a Chinese question, a GGUF file, an endpoint
    and --json; the project they name exists."""
    text = "\n".join(_sections(minipi("ask", "--help").stdout)["Examples:"])
    assert "-p examples/sample_project" in text
    assert re.search(r'minipi ask "[^"]*[\u4e00-\u9fff][^"]*"', text)
    for flag in ("--model-file", "--base-url http://127.0.0.1:8021/v1", "-m ", "--json"):
        assert flag in text
    assert (EXAMPLES / "sample_project").is_dir()
    assert (EXAMPLES / "shelter" / "inbox").is_dir()


def test_dash_p_given_the_question_says_that_p_is_the_project() -> None:
    proc = minipi("ask", "-p", "what is this?")
    assert proc.returncode == 2
    assert "-p is --project" in proc.stderr
    assert "minipi ask 'what is this?'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_dash_p_naming_a_folder_with_a_space_is_a_project(tmp_path: Path) -> None:
    folder = tmp_path / "my project"
    folder.mkdir()
    proc = minipi("ask", "-p", str(folder))  # no question on stdin either
    assert proc.returncode == 2
    assert "-p is --project" not in proc.stderr
    assert "question is empty" in proc.stderr


def test_sessions_list_of_a_project_that_is_not_there_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    proc = minipi("sessions", "list", "--project", str(missing))
    assert proc.returncode == 0
    assert f"the project {missing} does not exist" in proc.stderr


def test_minipi_config_without_a_config_file_names_the_path_it_looked_for(
    tmp_path: Path,
) -> None:
    env = clean_env(XDG_CONFIG_HOME=str(tmp_path))
    del env["MINIPI_CONFIG"]
    proc = minipi("config", env=env)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("# config file: none")
    assert str(tmp_path / "minipi" / "config.toml") in first


def test_sessions_show_rounds_seconds(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.add(
        Turn(calls=[Call("list_files", {"path": "reports"}, call_id="c1")]),
        Turn("one report"),
    )
    env = clean_env(MINIPI_DATA_DIR=str(tmp_path / "data"))
    endpoint = ("--base-url", fake_server.base_url, "-m", "fake-model")
    project = ("-p", str(EXAMPLES / "sample_project"))
    asked = minipi("ask", "which reports?", *project, *endpoint, "--session", "s", env=env)
    assert asked.returncode == 0, asked.stderr
    show = minipi("sessions", "show", "s", env=env)
    assert show.returncode == 0, show.stderr
    durations = re.findall(r"(\d+(?:\.\d+)?) s$", show.stdout, re.MULTILINE)
    assert len(durations) >= 3  # each request, the call, the total
    for shown in durations:
        decimals = shown.partition(".")[2]
        assert len(decimals) == (1 if float(shown) >= 1 else 2), shown
