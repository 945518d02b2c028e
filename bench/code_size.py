"""Lines per folder and the largest functions of src/minipi (a size report, no timing).

python bench/code_size.py [--top 5]
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--top", type=int, default=5, help="largest functions to list")
    args = parser.parse_args()
    lines: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    functions: list[tuple[int, str]] = []
    for base in ("src/minipi", "tests", "bench", "examples"):
        for path in sorted((ROOT / base).rglob("*.py")):
            rel = path.relative_to(ROOT)
            folder = str(rel.parent)
            text = path.read_text(encoding="utf-8")
            lines[folder] += len(text.splitlines())
            modules[folder] += 1
            if base != "src/minipi":
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    size = (node.end_lineno or node.lineno) - node.lineno + 1
                    functions.append((size, f"{rel}:{node.lineno} {node.name}"))
    print(f"{'folder':<28} {'modules':>7} {'lines':>7}")
    for folder in sorted(lines):
        print(f"{folder:<28} {modules[folder]:>7} {lines[folder]:>7}")
    print(f"\nthe {args.top} largest functions in src/minipi (lines, docstring included):")
    for size, where in sorted(functions, reverse=True)[: args.top]:
        print(f"{size:>5}  {where}")


if __name__ == "__main__":
    main()
