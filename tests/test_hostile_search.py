"""Issue 14, item 5 (search's part): ``search_files`` is bounded in time as in visits.

On a tree with many matches the visit limit alone let one search run for a minute. The
walk now also stops after ``SearchLimits.max_seconds`` (10 s by default), with the same
"[search stopped ...; results are incomplete ...]" notice the visit limit gives.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minipi.files.paths import parse_path
from minipi.files.results import SearchResult
from minipi.files.search import SearchLimits, search_tree
from minipi.files.tools import format_search
from minipi.files.walk import Root

pytestmark = pytest.mark.reliability

LINE = "the needle is here, and the needle again\n"


@pytest.fixture(scope="module")
def haystack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 files of 16 KiB under 30 directories, every line a match."""
    base = tmp_path_factory.mktemp("haystack")
    content = LINE * (16 * 1024 // len(LINE))
    for d in range(30):
        folder = base / f"d{d:02}"
        folder.mkdir()
        for f in range(100):
            (folder / f"f{f:03}.txt").write_text(content, encoding="utf-8")
    return base


@pytest.fixture
def root(haystack: Path) -> Iterator[Root]:
    fd = os.open(haystack, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield Root(fd, os.fstat(fd).st_dev)
    finally:
        os.close(fd)


def search(root: Root, **limits: Any) -> tuple[SearchResult, float]:
    started = time.monotonic()
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=root.fd)
    config = SearchLimits(32 * 1024, **limits)
    result = search_tree(root, fd, parse_path("."), True, "needle", config)
    return result, time.monotonic() - started


def test_the_time_budget_stops_a_search_with_many_matches(root: Root) -> None:
    full, full_seconds = search(root)
    assert full.complete
    assert full.visited == 3030
    budget = min(0.2, full_seconds / 4)
    cut, seconds = search(root, max_seconds=budget)
    assert not cut.complete
    assert 0 < cut.visited < 3030
    assert seconds < budget + 0.5  # one file past the budget at most, plus the start
    text = format_search(cut)
    assert "[search stopped after visiting" in text
    assert "results are incomplete" in text
    assert "[truncated: at least" in text  # the count is a lower bound, and says so


def test_no_time_left_visits_nothing(root: Root) -> None:
    result, seconds = search(root, max_seconds=0.0)
    assert result.visited == 0
    assert not result.complete
    assert seconds < 0.5


def test_the_visit_limit_still_applies(root: Root) -> None:
    result, _ = search(root, max_visits=10, max_seconds=60.0)
    assert result.visited == 10
    assert not result.complete


def test_the_default_budget_is_ten_seconds() -> None:
    assert SearchLimits(1024).max_seconds == 10.0
