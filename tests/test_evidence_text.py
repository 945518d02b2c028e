"""The searches made fast find what the plain way does: the loose text search (``str.find``
of the figure's lowered text or of its run without letters, the regex tried only there), and
the search for a date without a year (the regex tried only where such a date may start)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.evidence.match import TextMatcher
from minipi.evidence.match_dates import DateMatcher
from minipi.evidence.types import DateFigure, TextFigure

NEEDLE_CHARS = "aBk-_.7 1北Ｘ７"
NOISE = "x9Ｂ－İK"  # İ lowers to two characters; the Kelvin sign to k


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
            pieces.append(draw(st.text(alphabet=NEEDLE_CHARS + NOISE, max_size=5)))
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


@st.composite
def _dates(draw: st.DrawFn) -> tuple[DateFigure, str]:
    month, day = draw(st.integers(1, 12)), draw(st.integers(1, 31))
    forms = [
        f"2026-{month}-{day}",
        f"1999/{month:02d}/{day:02d}",
        f"2026.0{month}.{day}",
        f"{month}月{day}日",
        f"2026年 {month} 月{day}号",
        f"0{month}\u3000月0{day}日",
        f"12026-{month}-{day}",
        f"{month + 1}月{day}日",
    ]
    noise = st.text(alphabet="0123456789-/.年月日号 \n", max_size=4)
    pieces = [draw(st.sampled_from(forms) | noise) for _ in range(draw(st.integers(0, 6)))]
    return DateFigure(None, month, day, f"{month}月{day}日"), "".join(pieces)


@settings(max_examples=600, deadline=None)
@given(case=_dates())
def test_a_date_without_a_year_is_found_where_the_regex_finds_it(
    case: tuple[DateFigure, str],
) -> None:
    figure, text = case
    matcher = DateMatcher(figure)
    found = [m.span() for m in matcher._matches(text)]  # the fast way
    assert found == [m.span() for m in matcher._regex.finditer(text)], text
