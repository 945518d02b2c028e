"""Properties of the evidence check on generated answers and tool outputs: it never raises,
every span is the claim's text, every source's range holds the source's text and its line and
column say where that is, and every JSON Pointer names a member that holds that text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minipi.ai.types import FunctionCall, Item, Message
from minipi.evidence import Source, check_evidence
from minipi.evidence.locate import line_column
from test_evidence_cases import tool_output

# Characters that reach every finder: digits of both widths, separators, units, magnitudes,
# Chinese numerals and date words, quotes, letters, JSON punctuation, line breaks.
ALPHABET = (
    "0123456789０１２,.，-−/:%年月日号点分元万k千百十一二两九〇 '\"`「」“”ABSKUagent_Loop\n{}[]①[]"
)
TEXT = st.text(alphabet=ALPHABET, max_size=120)
SCALARS = st.one_of(
    st.integers(-20000, 20000),
    st.floats(-1e5, 1e5, allow_nan=False, allow_infinity=False),
    st.text(alphabet=ALPHABET, max_size=20),
    st.booleans(),
    st.none(),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(alphabet=ALPHABET, max_size=8), inner, max_size=4),
    ),
    max_leaves=12,
)
OUTPUT = st.one_of(TEXT, JSON.map(lambda v: json.dumps(v, ensure_ascii=False, indent=1)))
TOOLS = st.sampled_from(["read_file", "list_files", "search_files", "get_report"])


def history_of(question: str, results: list[tuple[str, str, str, bool]]) -> list[Item]:
    items: list[Item] = [Message("user", question)]
    for index, (tool, path, output, error) in enumerate(results):
        items.append(FunctionCall(f"c{index}", tool, json.dumps({"path": path})))
        items.append(tool_output(f"c{index}", tool, output, is_error=error))
    return items


def _where(source: Source, question: str, results: list[tuple[str, str, str, bool]]) -> str:
    if source.origin == "question":
        return question
    assert source.call_id is not None
    _, path, output, _ = results[int(source.call_id[1:])]
    # a path argument's source has no line; a listed name's has none either, and is in the output
    argument = source.line is None and output[source.range[0] : source.range[1]] != source.text
    return path if argument else output


def _member(document: Any, pointer: str) -> str:
    """The JSON text of the member a pointer names (its name and value)."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    value = document
    for token in tokens:
        value = value[int(token)] if isinstance(value, list) else value[token]
    return json.dumps(tokens[-1:], ensure_ascii=False) + json.dumps(value, ensure_ascii=False)


@st.composite
def generated_runs(draw: st.DrawFn) -> tuple[str, str, list[tuple[str, str, str, bool]]]:
    """A question, tool results, and an answer made of pieces of them and of other text (so
    that claims are found, not only missed)."""
    question = draw(TEXT)
    results = draw(st.lists(st.tuples(TOOLS, TEXT, OUTPUT, st.booleans()), max_size=3))
    texts = [question] + [r[2] for r in results] + [r[1] for r in results]
    pieces = []
    for _ in range(draw(st.integers(0, 4))):
        source = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(source)))
        pieces.append(source[start : start + draw(st.integers(0, 30))])
        pieces.append(draw(st.text(alphabet=ALPHABET, max_size=6)))
    return "".join(pieces) or draw(TEXT), question, results


@settings(max_examples=500, deadline=None)
@given(run=generated_runs())
def test_every_locator_points_at_its_text(
    run: tuple[str, str, list[tuple[str, str, str, bool]]],
) -> None:
    answer, question, results = run
    evidence = check_evidence(answer, history_of(question, results))
    assert evidence.tool_results == sum(1 for r in results if not r[3])
    json.dumps(evidence.to_json())
    for checked in evidence.claims:
        start, end = checked.claim.span
        assert answer[start:end] == checked.claim.text
        sources = list(checked.sources) + ([checked.nearest.source] if checked.nearest else [])
        for source in sources:
            where = _where(source, question, results)
            assert where[source.range[0] : source.range[1]] == source.text
            if source.column is not None:  # no offset argument here: output lines are file lines
                assert line_column(where, source.range[0]) == (source.line, source.column)
            elif source.line is not None:  # a search hit: the line its own line says
                start = where.rfind("\n", 0, source.range[0]) + 1
                assert f":{source.line}: " in where[start : source.range[0]]
            if source.pointer:
                try:
                    document = json.loads(where)
                except ValueError:
                    continue  # generated text that starts like JSON and stops: a cut document
                assert source.text in _member(document, source.pointer)
