"""The shape a reply's JSON may have: how deep it nests, and how many objects and arrays it
holds. Generous for any real reply, tight enough that every later step can handle it.

- Depth: Python's ``json.loads`` parses up to ~1000 levels, so a field nested 968 deep
  parsed, but saving it in a session entry (a few levels more) raised ``RecursionError``.
  Checked once the reply is parsed: deeper than ``MAX_DEPTH`` is refused.
- Count: a body within ``max_response_bytes`` can still hold millions of tiny values
  (16 MiB of ``{},`` is 5.6 million dicts: measured 846 MiB of memory and 30 s for one run
  that then succeeded; 16 MiB of ``"ab",`` 293 MiB). Checked before parsing, by counting
  ``,``, ``{`` and ``[`` in the text (an upper bound of the values: those inside strings
  count too), against ``MAX_VALUES``.
"""

from __future__ import annotations

from typing import Any

from minipi.errors import ModelProtocolError

__all__ = ["MAX_DEPTH", "MAX_VALUES", "check_depth", "check_values"]

MAX_DEPTH = 100
"""Levels of nested objects and arrays a reply may have (real ones have about 10)."""
MAX_VALUES = 1_000_000
"""JSON values one reply (or one stream frame) may hold, counted as ``,`` + ``{`` + ``[``: a
real reply has tens to thousands (prose has a comma every ~50 characters: 16 MiB of it is
about 300,000); a million tiny values take 60-100 MiB once parsed. Replies with
``logprobs`` (about 40 per token) reach it at about 25,000 tokens."""


def check_values(text: str | bytes, what: str = "the answer") -> None:
    """``ModelProtocolError`` if ``text`` (JSON not parsed yet) may hold more than
    ``MAX_VALUES`` values (three C-speed counts, no parsing)."""
    if isinstance(text, str):
        count = text.count(",") + text.count("{") + text.count("[")
    else:
        count = text.count(b",") + text.count(b"{") + text.count(b"[")
    if count > MAX_VALUES:
        raise ModelProtocolError(
            f"{what} holds more than {MAX_VALUES:,} JSON values: not a reply minipi reads "
            "(is --base-url the model API? a reply with logprobs: ask for fewer tokens)",
            code="protocol_error",
        )


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
