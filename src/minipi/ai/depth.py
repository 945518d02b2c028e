"""How deep a reply's JSON may nest: deep enough for any real reply, shallow enough that every
later step (the session's and the trace's ``json.dumps``, which recurse and add levels of
their own) can still handle it.

Python's ``json.loads`` parses up to ~1000 levels, so a field nested 968 deep parses, but
saving it inside a session entry (a few levels more) raised ``RecursionError``. A reply is
checked once, where it is decoded, and refused if deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

from typing import Any

from minipi.errors import ModelProtocolError

__all__ = ["MAX_DEPTH", "check_depth"]

MAX_DEPTH = 100
"""Levels of nested objects and arrays a reply may have (real ones have about 10)."""


def check_depth(value: Any, what: str = "the answer") -> None:
    """``ModelProtocolError`` if ``value`` nests lists and dicts deeper than ``MAX_DEPTH``
    (an iterative walk: no recursion of its own)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            raise ModelProtocolError(
                f"{what} nests JSON more than {MAX_DEPTH} levels deep: not a model reply "
                "minipi can use (is --base-url the model API?)",
                code="protocol_error",
            )
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
