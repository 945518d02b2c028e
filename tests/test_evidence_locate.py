"""JSON Pointers the fast way (``JsonIndex``: the top level delimited whole, deeper levels as
far as asked, flat children stepped over) agree with the plain way (every level delimited
whole) at every position of valid, cut, broken and odd JSON, asked in any order."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.evidence.locate import JsonIndex, json_pointer, whole_pointer

KEYS = st.text(alphabet='ab/~"\\{}[]:, 9', max_size=4)
SCALARS = st.one_of(
    st.integers(-300, 300),
    st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    st.text(alphabet='xy"\\{}[],: 7\n', max_size=6),
    st.booleans(),
    st.none(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=16,
)


def _text(value: Any, indent: int | None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


@st.composite
def _documents(draw: st.DrawFn) -> str:
    """A JSON container as dumped, then maybe cut, broken in one place, or given a tail."""
    value = draw(st.one_of(st.lists(VALUES, max_size=5), st.dictionaries(KEYS, VALUES, max_size=5)))
    text = _text(value, draw(st.sampled_from([None, 1, 2])))
    change = draw(st.sampled_from(["none", "cut", "break", "tail"]))
    at = draw(st.integers(0, len(text)))
    if change == "cut":
        text = text[:at]
    elif change == "break":
        broken = draw(st.sampled_from(["", ",", "x", "}", "]", '"', "{", " 1"]))
        text = text[:at] + broken + text[at:]
    elif change == "tail":
        text += draw(st.sampled_from(["\n9600", " {", "]", "\n[truncated: x]"]))
    return text


@settings(max_examples=400, deadline=None)
@given(text=_documents(), order=st.randoms(use_true_random=False))
def test_the_index_agrees_with_delimiting_every_level_whole(text: str, order: Any) -> None:
    offsets = list(range(len(text) + 1))
    order.shuffle(offsets)
    index = JsonIndex(text)
    for offset in offsets:  # one index asked in any order: what it kept must not change answers
        assert index.pointer(offset) == whole_pointer(text, offset), (text, offset)


def test_a_flat_child_is_stepped_over_and_a_nested_one_scanned() -> None:
    text = json.dumps(
        {"rows": [{"a": "}", "b": 1}, {"c": {"d": 2}}, {"e": '"}'}, [3, "]"], {"f": 4}]},
        indent=1,
    )
    for needle, pointer in [("1", "/rows/0/b"), ("2", "/rows/1/c/d"), ("3", "/rows/3/0")]:
        assert json_pointer(text, text.index(needle)) == pointer
    assert json_pointer(text, text.index("4")) == "/rows/4/f"
    assert json_pointer(text, text.index('"e"')) == "/rows/2/e"
