"""The suite's hypothesis profile (tests/conftest.py): a property test gives the same verdict on
every run, however loaded the machine is."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st


def drawn() -> list[str]:
    """The examples a 50-example property test is given."""
    seen: list[str] = []

    @settings(max_examples=50)
    @given(st.text())
    def record(text: str) -> None:
        seen.append(text)

    record()
    return seen


def test_every_run_draws_the_same_examples() -> None:
    first = drawn()
    assert len(first) == 50
    assert drawn() == first


def test_a_slow_example_is_not_a_failure() -> None:
    """What a loaded machine does to a test: each example takes longer than hypothesis's
    default 200 ms deadline."""

    @settings(max_examples=2)
    @given(st.integers())
    def slow(number: int) -> None:
        time.sleep(0.25)

    slow()
