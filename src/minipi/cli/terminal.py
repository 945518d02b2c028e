"""Terminal safety: text from files, names and the model is shown, never interpreted."""

from __future__ import annotations

import re

__all__ = ["safe"]

# C0/C1 controls (but tab and newline), bidi overrides/isolates, zero-width characters.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def safe(text: str) -> str:
    """``text`` with characters that could fool a terminal shown as ``\\uXXXX`` escapes."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
