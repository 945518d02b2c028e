"""The loose text search the fast way (``str.find`` of the figure's run without letters, the
regex tried only there) finds what the plain way does (the regex over the whole text)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.agent.evidence.match import TextMatcher
from minipi.agent.evidence.types import TextFigure

NEEDLE_CHARS = "aBk-_.7 1北Ｘ７"


def _variant(char: str, draw: st.DrawFn) -> str:
    """``char`` in another case or width, sometimes."""
    forms = {char, char.lower(), char.upper()}
    if "!" <= char <= "~":
        forms |= {chr(ord(f) + 0xFEE0) for f in set(forms) if "!" <= f <= "~"}
    return draw(st.sampled_from(sorted(forms)))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, str]:
    needle = draw(st.text(alphabet=NEEDLE_CHARS, min_size=1, max_size=6))
    pieces = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["needle", "variant", "part", "noise"]))
        if kind == "needle":
            pieces.append(needle)
        elif kind == "variant":
            pieces.append("".join(_variant(c, draw) for c in needle))
        elif kind == "part":
            pieces.append(needle[: draw(st.integers(0, len(needle)))])
        else:
            pieces.append(draw(st.text(alphabet=NEEDLE_CHARS + "x9Ｂ－", max_size=5)))
    return needle, "".join(pieces)


@settings(max_examples=600, deadline=None)
@given(case=_cases())
def test_the_fast_loose_search_agrees_with_the_regex(case: tuple[str, str]) -> None:
    needle, text = case
    matcher = TextMatcher(TextFigure(needle, needle))
    assert list(matcher.more_hits(text)) == list(matcher.plain_more_hits(text)), (needle, text)


def test_an_identifier_is_found_in_another_case_and_width() -> None:
    matcher = TextMatcher(TextFigure("SKU-7791", "SKU-7791"))
    text = "sku-7791, Sku-7791x, ＳＫＵ-7791 and sku-７７９１"
    spans = [(h.start, h.end) for h in matcher.more_hits(text)]
    assert [text[a:b] for a, b in spans] == ["sku-7791", "ＳＫＵ-7791", "sku-７７９１"]
    assert list(matcher.more_hits(text)) == list(matcher.plain_more_hits(text))
