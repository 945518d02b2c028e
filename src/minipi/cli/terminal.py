"""Terminal safety: text from files, names and the model is shown, never interpreted."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["UNSAFE_CATEGORIES", "columns", "pad", "safe", "safe_json"]

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""Control characters (C0, DEL, C1), format characters (bidi controls such as U+202E and
U+061C, zero-width U+200B-U+200D, U+2060, U+FEFF, the soft hyphen, the invisible tag characters
U+E0000-U+E007F), line and paragraph separators, and lone surrogates (which cannot even be
encoded). Tab and newline are kept."""

# Everything outside these ranges is looked up; inside them no character is in an unsafe
# category (a test checks this against the running Python's Unicode database).
_CANDIDATE = re.compile(
    "[^\t\n\x20-\x7e\xa0-\xac\xae-\u05ff\u0710-\u088f\u08e3-\u180d\u180f-\u200a"
    "\u2070-\ud7ff\ue000-\ufefe\uff00-\ufff8]"
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def safe(text: str) -> str:
    """``text`` with characters that could fool a terminal shown as ``\\uXXXX`` (or
    ``\\UXXXXXXXX``) escapes; tab, newline and ordinary Unicode are kept."""
    return _CANDIDATE.sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a JSON string escapes an astral character as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with the same characters written as
    JSON escapes: the same data for a program, nothing a terminal would act on, and no lone
    surrogate that cannot be encoded. (Such characters only occur inside JSON strings.)"""
    return _CANDIDATE.sub(_json_escape, text)


def columns(text: str) -> int:
    """How many terminal columns ``text`` takes: wide (CJK, full-width) characters take two,
    combining marks none."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


def pad(text: str, width: int) -> str:
    """``text`` with spaces after it up to ``width`` columns."""
    return text + " " * max(width - columns(text), 0)
