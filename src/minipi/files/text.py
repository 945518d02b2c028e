"""Bounded reads, strict UTF-8 decoding, and line ranges."""

from __future__ import annotations

import os
import re

from minipi.errors import FileAccessError
from minipi.files.paths import RelPath, show

__all__ = ["BOM", "check_range", "decode_utf8", "read_bounded", "select_lines", "too_large"]

BOM = b"\xef\xbb\xbf"
_CHUNK = 64 * 1024
_LINE_END = re.compile(r"(?<=\n)")


def read_bounded(fd: int, limit: int) -> bytes | None:
    """Up to ``limit`` bytes from ``fd``, or None if there are more.

    Never asks for more than ``limit + 1`` bytes in all, so a file that is larger than its
    ``fstat`` said (it grew, or lied) costs at most one byte beyond the limit.
    """
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return None if total > limit else b"".join(chunks)


def too_large(where: RelPath, size: int | None, limit: int) -> FileAccessError:
    """The ``too_large`` refusal, with the size (when known) and the limit."""
    measured = f"is {size} bytes" if size is not None else "grew while being read and is"
    over = "" if size is not None else f" over {limit} bytes"
    return FileAccessError(
        f"{show(where.text)} {measured}{over}; read_file reads files of at most {limit} bytes. "
        "Ask the user for a smaller excerpt of it, or read a smaller file",
        code="too_large",
        path=where.text,
    )


def decode_utf8(data: bytes, where: RelPath) -> tuple[str, bool]:
    """Strict UTF-8 text of ``data`` and whether a leading BOM was removed.

    The BOM is dropped so that the text starts where the author's text starts; the refusal
    gives the byte offset in the file (BOM included). Nothing is ever replaced by U+FFFD.
    """
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    try:
        return body.decode("utf-8", errors="strict"), bom
    except UnicodeDecodeError as error:
        offset = error.start + (len(BOM) if bom else 0)
        raise FileAccessError(
            f"{show(where.text)} is not UTF-8 text (invalid byte 0x{data[offset]:02x} at byte "
            f"offset {offset}); read_file only reads UTF-8 text files",
            code="not_utf8",
            path=where.text,
        ) from None


def check_range(offset: object, limit: object) -> None:
    """Refuse an ``offset``/``limit`` that is not None or a positive integer."""
    for name, value in (("offset", offset), ("limit", limit)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FileAccessError(
                f"{name} must be a whole number of at least 1 (offset is the first line to "
                f"read, limit the number of lines); got {value!r}",
                code="invalid_range",
            )


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (a ``\\r`` before it stays in the line)."""
    return [line for line in _LINE_END.split(text) if line]


def select_lines(
    text: str, offset: int | None, limit: int | None, where: RelPath
) -> tuple[str, int, int, int]:
    """``(selected text, first line, last line, total lines)`` for a 1-based line range."""
    lines = split_lines(text)
    total = len(lines)
    if offset is None and limit is None:
        return text, 1, total, total
    first = offset or 1
    if total and first > total:
        raise FileAccessError(
            f"offset {first} is past the end of {show(where.text)}, which has {total} lines; "
            f"use an offset from 1 to {total}",
            code="invalid_range",
            path=where.text,
        )
    last = total if limit is None else min(total, first - 1 + limit)
    return "".join(lines[first - 1 : last]), first, last, total
