"""Gates on the source itself (STYLE 4, 17, 22): what ``src/`` may name, how complex it may
grow, how long the loop may be. ``.ci/run`` runs pytest, so a gate is a test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "minipi"

# Model families and benchmark entry ids (STYLE 22: src/ names no model and no benchmark
# entry; what was measured on which lives in bench/TUNING.md).
NAMED = re.compile(
    r"qwen|smollm|bfcl|llama-?3|gemma|mistral|phi-?3|gpt-?(?:\d|oss)"
    r"|(?:simple|multiple|parallel|irrelevance)(?:_python)?_\d+",
    re.IGNORECASE,
)
# The product's documented environment variables (QWEN_BASE_URL, QWEN_MODEL, ...).
ENV_NAME = re.compile(r"\bQWEN_[A-Z_]+")
# The model catalog: the default model's resolution and its download name the files they load.
CATALOG = frozenset({"local/models.py", "local/download.py"})

MAX_COMPLEX_BLOCKS = 30
"""Functions, methods and classes of rank C (complexity 11) or worse that src/ may hold."""
LOOP_LINES = 220
"""The loop fits on a screen (STYLE 4)."""


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_src_names_no_model_or_benchmark_entry() -> None:
    found = []
    for path in _sources():
        where = path.relative_to(SRC).as_posix()
        if where in CATALOG:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = NAMED.search(ENV_NAME.sub("", line))
            if match:
                found.append(f"src/minipi/{where}:{number}: {match.group()!r}: {line.strip()}")
    print("\n".join(found))
    assert not found, (
        f"{len(found)} lines of src/ name a model or a benchmark entry (state the rule's "
        "principle; the measurements go in bench/TUNING.md):\n" + "\n".join(found)
    )


def test_complexity_budget() -> None:
    complexity = pytest.importorskip(
        "radon.complexity", reason="radon is not installed (pip install -e '.[dev]')"
    )
    over = []
    for path in _sources():
        for block in complexity.cc_visit(path.read_text(encoding="utf-8")):
            rank = str(complexity.cc_rank(block.complexity))
            if rank >= "C":
                name = f"{path.relative_to(SRC).as_posix()}:{block.lineno} {block.fullname}"
                over.append((int(block.complexity), rank, name))
    over.sort(key=lambda item: (-item[0], item[2]))
    listed = "\n".join(f"{rank} ({score}) {name}" for score, rank, name in over)
    print(listed)
    assert len(over) <= MAX_COMPLEX_BLOCKS, (
        f"{len(over)} blocks of rank C or worse, at most {MAX_COMPLEX_BLOCKS} allowed "
        f"(split the most complex first):\n{listed}"
    )


def test_loop_fits_on_a_screen() -> None:
    lines = len((SRC / "agent" / "loop.py").read_text(encoding="utf-8").splitlines())
    assert lines <= LOOP_LINES, f"agent/loop.py has {lines} lines, at most {LOOP_LINES}"
