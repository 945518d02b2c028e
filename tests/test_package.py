"""The package's shape: one-way layer imports, the public API, a light `import minipi`."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import minipi

SRC = Path(minipi.__file__).resolve().parent

# What each layer may NOT import (DESIGN.md: ai -> agent -> files -> cli; local sits beside
# files, under cli). agent never names a concrete wire module; files knows nothing of HTTP.
_WIRES = (
    "minipi.ai.chat",
    "minipi.ai.responses",
    "minipi.ai.http",
    "minipi.ai.answers",
    "minipi.ai.wire",
    "minipi.ai.client",
    "minipi.ai.chain",
    "httpx",
)
"""The HTTP side of the model layer: only ``minipi.ai`` itself and the CLI/engine reach it."""

FORBIDDEN = {
    "ai": ("minipi.agent", "minipi.files", "minipi.cli", "minipi.local"),
    "agent": ("minipi.files", "minipi.cli", "minipi.local", *_WIRES),
    "files": ("minipi.cli", "minipi.local", *_WIRES),
    "local": ("minipi.cli", "minipi.files"),
    "session": ("minipi.cli", "minipi.files", "minipi.local", *_WIRES),
    "mcp": ("minipi.cli", "minipi.files", "minipi.local", "minipi.session", *_WIRES),
    "batch": ("minipi.cli", *_WIRES),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_flow_one_way(layer: str) -> None:
    edges = []
    for path in sorted((SRC / layer).rglob("*.py")):
        for name in _imports(path):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                edges.append(f"{path.relative_to(SRC)} imports {name}")
    assert edges == []


def test_every_public_name_resolves() -> None:
    assert minipi.__all__ == sorted(minipi.__all__)
    for name in minipi.__all__:
        assert getattr(minipi, name) is not None


def test_import_minipi_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, minipi, minipi.ai, minipi.agent, minipi.files; "
        "print(sorted(m for m in ('httpx', 'fastjsonschema', 'jsonschema', 'llama_cpp', 'click', "
        "'mcp', 'anyio', 'huggingface_hub', 'minipi.evidence.check') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_cli_loads_the_session_store_only_when_a_session_is_used() -> None:
    code = (
        "import sys, minipi.cli.app; "
        "print(sorted(m for m in ('sqlite3', 'minipi.session') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
