"""The end codes: one table in the code, the same table in the README."""

from __future__ import annotations

import re
from pathlib import Path

from minipi.agent.decisions import End
from minipi.agent.ends import END_CODES, EXIT_CODES, status_of

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
