"""How many parameters a GGUF model has, read from the file's own header.

The header (GGUF v2/v3: magic, version, tensor count, metadata count, the metadata key/value
pairs, then one record per tensor with its dimensions) is read with ``mmap``; the count is the
sum over the tensors of the product of their dimensions, whatever the quantization, so a
135M model is 135M in Q4 and in F16. Nothing else of the file is read. Used to choose the
default tool-calling mode per model size (``minipi.assemble``).
"""

from __future__ import annotations

import math
import mmap
import struct
from pathlib import Path

__all__ = ["parameter_count"]

_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""Byte size of each fixed-size GGUF value type (8 is a string, 9 an array)."""
_STRING, _ARRAY = 8, 9


class _Header:
    """A cursor over the mapped file; ``IndexError``/``struct.error`` past its end."""

    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.at = 0

    def number(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def skip_string(self) -> None:
        length = self.number("<Q")
        self.at += length

    def skip_value(self, kind: int) -> None:
        if kind in _FIXED:
            self.at += _FIXED[kind]
        elif kind == _STRING:
            self.skip_string()
        elif kind == _ARRAY:
            element, count = self.number("<I"), self.number("<Q")
            if element in _FIXED:
                self.at += _FIXED[element] * count
            else:
                for _ in range(count):
                    self.skip_value(element)
        else:
            raise ValueError(f"unknown GGUF value type {kind}")


def parameter_count(path: Path) -> int | None:
    """The number of weights in the GGUF at ``path``; None when it cannot be read as one
    (not a GGUF, an unknown version or value type, a truncated header)."""
    try:
        with (
            path.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            return _count(_Header(data))
    except (OSError, ValueError, IndexError, struct.error):
        return None


def _count(header: _Header) -> int | None:
    if header.data[:4] != b"GGUF":
        return None
    header.at = 4
    if header.number("<I") not in (2, 3):
        return None
    tensors, pairs = header.number("<Q"), header.number("<Q")
    for _ in range(pairs):
        header.skip_string()
        header.skip_value(header.number("<I"))
    total = 0
    for _ in range(tensors):
        header.skip_string()
        dims = [header.number("<Q") for _ in range(header.number("<I"))]
        header.at += 4 + 8  # the tensor's type and offset
        total += math.prod(dims)
    return total if header.at <= len(header.data) else None  # a skip went past the end
