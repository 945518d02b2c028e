"""The end codes: one table in the code, the same table in the README."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from minipi.agent.ends import END_CODES, EXIT_CODES, RunStatus, status_of
from minipi.agent.types import End

README = Path(__file__).resolve().parents[1] / "README.md"
ROW = re.compile(r"^\| `(\w+)` \| `(\w+)` \| (\d+) \| (.+) \|$")


def test_the_readme_shows_every_end_code_with_its_status_and_exit() -> None:
    rows = {
        m[1]: (m[2], int(m[3]), m[4]) for m in map(ROW.match, README.read_text().splitlines()) if m
    }
    expected = {
        code: (status, EXIT_CODES[status], meaning) for code, (status, meaning) in END_CODES.items()
    }
    assert rows == expected


def test_an_unknown_code_fails_and_a_known_one_has_its_status() -> None:
    assert status_of("http_418") == "failed"
    assert End("max_turns", "").status == "budget_exhausted"
    assert End("cancelled", "").status == "cancelled"
    assert {status for status, _ in END_CODES.values()} <= set(EXIT_CODES) - {"succeeded"}


def test_a_run_in_chinese_says_every_end_in_chinese() -> None:
    """One language per run: each end code has its Chinese meaning (a new code without one
    fails here); a detail not worded by ``minipi.said`` follows it in brackets, as made, and
    one worded there is said in Chinese with the same facts."""
    from minipi.agent.result import RunResult
    from minipi.ai.types import Usage
    from minipi.cli.words import _END_ZH, Words

    assert set(_END_ZH) == set(END_CODES) - {"cancelled"}

    def ran(status: RunStatus, code: str, error: str) -> RunResult:
        return RunResult(status, "", (), Usage(), 8, 3, code=code, error=error)

    result = ran("budget_exhausted", "max_turns", "no final answer")
    chinese, english = Words(True).summary(result), Words(False).summary(result)
    assert chinese.endswith(
        "\nmax_turns：模型请求次数已用完，仍未作答（no final answer）（可用 --max-turns 调高）"
    )
    assert english.endswith("\nmax_turns: no final answer (raise it with --max-turns)")
    worded = End.saying("max_turns", turns=8)
    result = replace(result, error=worded.detail, said=worded.said)
    chinese, english = Words(True).summary(result), Words(False).summary(result)
    assert chinese.endswith("\nmax_turns：8 次模型请求后仍未作答（可用 --max-turns 调高）")
    assert english.endswith(
        "\nmax_turns: no final answer after 8 model requests (raise it with --max-turns)"
    )
    cancelled = ran("cancelled", "cancelled", "cancelled by the user")
    assert "\n" not in Words(True).summary(cancelled)  # [已取消] says it all
