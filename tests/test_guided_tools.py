"""Guided replies for tools that do not explore the project (an MCP server's, a library
user's, a benchmark's functions): their declared arguments, a question no tool fits, and
several calls in one reply.

The grammar is checked with ``test_guided_grammar.matches`` (the same rules llama.cpp reads)
against what JSON Schema accepts; the loop and the client are the real ones, the model the
library's ``ScriptedModel``. That llama.cpp takes these grammars is in ``test_guided_engine``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from minipi.agent import AgentConfig, AgentTool, run_agent
from minipi.ai.testing import ScriptedModel
from minipi.ai.types import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    JsonObject,
    Message,
    ModelRequest,
    ModelResponse,
    ToolSpec,
)
from minipi.guided import GuidedClient, guided_instructions
from minipi.guided.arguments import (
    MAX_SPAN_WORDS,
    MAX_SPANS,
    MAX_TEXT,
    offered_arguments,
    question_numbers,
    question_spans,
)
from minipi.guided.fit import fit, question_words, tool_words
from minipi.guided.grammar import Facts, guided_grammar
from minipi.guided.schema import ANSWER_BRANCH, MAX_CALLS, guided_schema
from test_guided_grammar import matches

WEATHER: JsonObject = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city, e.g. San Francisco, CA."},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "description": "Days ahead."},
        "details": {"type": "array", "items": {"type": "string", "enum": ["wind", "rain"]}},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        },
    },
    "required": ["city"],
}
TRIANGLE: JsonObject = {
    "type": "object",
    "properties": {"base": {"type": "number"}, "height": {"type": "number"}},
    "required": ["base", "height"],
}


def spec(name: str, description: str, parameters: JsonObject) -> ToolSpec:
    return ToolSpec(name, description, parameters)


def weather() -> ToolSpec:
    return spec("get_weather", "Get the weather forecast of a city.", WEATHER)


def clock() -> ToolSpec:
    """mcp-server-time's ``get_current_time``, in its own words."""
    zone = "IANA timezone name (e.g., 'Europe/London'). Use 'UTC' if the user gave none."
    timezone = {"type": "string", "description": zone}
    parameters = {"type": "object", "properties": {"timezone": timezone}, "required": ["timezone"]}
    return spec("get_current_time", "Get current time in a specific timezone.", parameters)


def triangle() -> ToolSpec:
    return spec("triangle_area", "Calculate the area of a triangle.", TRIANGLE)


def grammar_of(schema: JsonObject) -> Any:
    return guided_grammar(schema, Facts(), "facts")


def reply(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- the arguments as declared -------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "valid"),
    [
        ({"city": "Paris"}, True),
        ({"city": "Paris", "unit": "celsius"}, True),
        ({"city": "Paris", "days": 3, "details": ["wind", "rain"]}, True),
        ({"city": "Paris", "where": {"lat": 48.85, "lon": 2.35}}, True),
        ({"city": "Paris", "details": []}, True),
        ({"unit": "celsius"}, False),  # the required city is missing
        ({"city": "Paris", "unit": "kelvin"}, False),  # not one of the enum
        ({"city": "Paris", "days": "3"}, False),  # a string for an integer
        ({"city": "Paris", "details": ["snow"]}, False),  # an item outside its enum
        ({"city": "Paris", "where": {"lat": 1}}, False),  # a required member missing
        ({"city": "Paris", "mood": "sunny"}, False),  # not declared
        ({"city": "P" * (MAX_TEXT + 1)}, False),  # longer than the bound
        ({"unit": "celsius", "city": "Paris"}, False),  # not in the declared order
    ],
)
def test_the_grammar_writes_the_declared_arguments_and_only_them(
    arguments: JsonObject, valid: bool
) -> None:
    schema = guided_schema([weather()], [Message("user", "weather in Paris?")])
    text = reply({"tool": "get_weather", "arguments": arguments})
    assert matches(grammar_of(schema), text) is valid
    if valid:  # what the grammar writes, the tool's own schema accepts
        assert Draft202012Validator(WEATHER).is_valid(arguments)


def test_hostile_schemas_stay_small_and_open_where_they_cannot_be_read() -> None:
    deep: JsonObject = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    offered = offered_arguments(deep)
    assert "{}" in json.dumps(offered)  # deeper than the bound: any value
    assert offered_arguments({"type": "object", "properties": {"r": {"$ref": "#/x"}}}) == {
        "type": "object",
        "properties": {"r": {}},
        "required": [],
        "additionalProperties": False,
    }
    assert offered_arguments({"type": "string"}) == {"type": "object"}  # not an object
    either = offered_arguments(
        {"type": "object", "properties": {"v": {"type": ["integer", "null"]}}, "required": ["v"]}
    )
    grammar = grammar_of(
        {
            "type": "object",
            "properties": {"a": either},
            "required": ["a"],
            "additionalProperties": False,
        }
    )
    assert matches(grammar, '{"a": {"v": null}}')
    assert matches(grammar, '{"a": {"v": 3}}')
    assert not matches(grammar, '{"a": {"v": "3"}}')


# --- a question no tool fits -----------------------------------------------------------------


def test_fit_counts_shared_content_words_and_says_when_words_cannot_tell() -> None:
    words = question_words("Calculate the area of a triangle with base 10 and height 5.")
    assert fit(words, tool_words(triangle())) == 5  # calculate, area, triangle, base, height
    assert fit(words, tool_words(weather())) == 0
    assert fit(question_words("东京现在几点？"), tool_words(weather())) is None  # no shared script
    assert fit(question_words("q"), tool_words(weather())) is None  # no content word
    asked = "What are the server port and the database name, and which user runs it?"
    assert fit(question_words(asked), tool_words(clock())) == 0  # schema words are no fit


def test_a_question_no_tool_fits_is_answered_without_a_call() -> None:
    tools = [triangle(), weather()]
    question = [Message("user", "Who wrote Pride and Prejudice?")]
    assert guided_schema(tools, question) == ANSWER_BRANCH


def test_only_the_tools_the_question_fits_are_offered_before_and_after_a_result() -> None:
    tools = [triangle(), weather()]
    asked = [Message("user", "What is the weather forecast for the city of Paris?")]
    schema = guided_schema(tools, asked)
    text = json.dumps(schema)
    assert '"const": "get_weather"' in text
    assert '"const": "triangle_area"' not in text
    assert ANSWER_BRANCH not in schema.get("anyOf", [schema])  # it fits: call first
    after: list[Item] = [
        *asked,
        FunctionCall("c1", "get_weather", '{"city": "Paris"}'),
        FunctionCallOutput("c1", "ok"),
    ]
    later = json.dumps(guided_schema(tools, after))
    assert '"const": "get_weather"' in later
    assert '"const": "triangle_area"' not in later  # a result does not make it fit


def test_a_tool_the_question_does_not_fit_is_not_offered_beside_the_file_tools(
    specs_of_files: list[ToolSpec],
) -> None:
    """Qwen2.5-Coder-1.5B with a time server configured, asked how many ERROR lines a log
    has, called ``get_current_time`` and ``convert_time`` after its search had counted them
    (the suite through ``minipi ask``: 50-60 s a question instead of 15)."""
    asked = [Message("user", "How many ERROR lines does logs/build.log have?")]
    after: list[Item] = [
        *asked,
        FunctionCall("c1", "search_files", '{"query": "ERROR"}'),
        FunctionCallOutput("c1", "logs/build.log:5: ERROR step 4\n[1 matching line in 1 file]"),
    ]
    # Qwen2.5-Coder-0.5B, asked for a config's database name, called it: "timezone name"
    named = [Message("user", "What are the server port and the database name?")]
    for items in (asked, after, named):
        offered = json.dumps(guided_schema([*specs_of_files, clock()], items, parallel=True))
        assert '"const": "list_files"' in offered
        assert '"const": "get_current_time"' not in offered
    timely = [Message("user", "What time is it in Tokyo?")]
    assert '"const": "get_current_time"' in json.dumps(guided_schema([clock()], timely))


def test_a_question_that_shares_one_word_may_be_answered_or_call() -> None:
    schema = guided_schema([weather()], [Message("user", "Which city has the most museums?")])
    assert ANSWER_BRANCH in schema["anyOf"]
    assert any(b.get("properties", {}).get("tool") for b in schema["anyOf"])


def test_the_file_tools_fit_every_question(specs_of_files: list[ToolSpec]) -> None:
    schema = guided_schema(specs_of_files, [Message("user", "Who wrote Pride and Prejudice?")])
    assert ANSWER_BRANCH not in schema.get("anyOf", [schema])


@pytest.fixture
def specs_of_files(tmp_path: Any) -> list[ToolSpec]:
    from minipi.files import ProjectFiles, create_project_tools

    with ProjectFiles(tmp_path) as files:
        return [t.spec() for t in create_project_tools(files)]


# --- several calls in one reply --------------------------------------------------------------


def test_with_parallel_calls_a_reply_is_a_list_of_calls() -> None:
    """After each call, one more or the end (Qwen2.5-Coder-1.5B on BFCL's parallel dev
    entries: 0 of 15 right when a list was only an alternative to one call, 5 as the form)."""
    asked = [Message("user", "Area of triangles with base 3 height 4, and base 5 height 6?")]
    schema = guided_schema([triangle()], asked, parallel=True)
    grammar = grammar_of(schema)
    one = {"tool": "triangle_area", "arguments": {"base": 3, "height": 4}}
    two = {"tool": "triangle_area", "arguments": {"base": 5, "height": 6}}
    assert matches(grammar, reply([one]))
    assert matches(grammar, reply([one, two]))
    assert not matches(grammar, reply(one))
    assert not matches(grammar, reply([]))
    assert not matches(grammar, reply([one] * (MAX_CALLS + 1)))
    alone = grammar_of(guided_schema([triangle()], asked))  # without: one call, no list
    assert matches(alone, reply(one))
    assert not matches(alone, reply([one, two]))


def area_tool(areas: list[JsonObject]) -> AgentTool:
    """``triangle_area``, recording each call's arguments in ``areas``."""

    def area(arguments: Mapping[str, Any]) -> str:
        areas.append(dict(arguments))
        return str(arguments["base"] * arguments["height"] / 2)

    return AgentTool("triangle_area", "Calculate the area of a triangle.", TRIANGLE, area)


def test_several_calls_run_and_go_back_to_the_model_as_one_reply() -> None:
    areas: list[JsonObject] = []
    tool = area_tool(areas)
    one = {"tool": "triangle_area", "arguments": {"base": 3, "height": 4}}
    two = {"tool": "triangle_area", "arguments": {"base": 5, "height": 6}}
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse((Message("assistant", reply({"answer": "6 and 15"})),))

    inner = ScriptedModel([ModelResponse((Message("assistant", reply([one, two])),)), answer])
    client = GuidedClient(inner)
    question = "What are the areas of the triangles with base 3 height 4 and base 5 height 6?"
    result = run_agent(client, [tool], AgentConfig(max_turns=2), question)
    assert result.status == "succeeded", result.error
    assert areas == [{"base": 3, "height": 4}, {"base": 5, "height": 6}]
    assistant = [m.text for m in seen[0].items if isinstance(m, Message) and m.role == "assistant"]
    assert assistant == [reply([one, two])]  # one reply, as the model wrote it
    results = [m.text for m in seen[0].items if isinstance(m, Message) and m.role == "user"]
    assert results[1:] == [
        'Result of triangle_area {"base": 3, "height": 4}:\n6.0',
        'Result of triangle_area {"base": 5, "height": 6}:\n15.0',
    ]


def test_a_call_the_list_repeats_identically_is_made_once() -> None:
    """Qwen2.5-Coder-1.5B listed the same call twice for one question (BFCL multiple_73);
    the same arguments in another order are the same call, other arguments another."""
    areas: list[JsonObject] = []
    tool = area_tool(areas)
    one = {"tool": "triangle_area", "arguments": {"base": 3, "height": 4}}
    again = {"tool": "triangle_area", "arguments": {"height": 4, "base": 3}}
    two = {"tool": "triangle_area", "arguments": {"base": 5, "height": 6}}
    listed = ModelResponse((Message("assistant", reply([one, two, again, two])),))
    inner = ScriptedModel([listed, ModelResponse((Message("assistant", reply({"answer": "6"})),))])
    question = "What are the areas of the triangles with base 3 height 4 and base 5 height 6?"
    result = run_agent(GuidedClient(inner), [tool], AgentConfig(max_turns=2), question)
    assert result.status == "succeeded", result.error
    assert areas == [{"base": 3, "height": 4}, {"base": 5, "height": 6}]


def test_the_prompt_declares_optional_parameters_and_the_list_form() -> None:
    text = guided_instructions(None, [weather()])
    assert "- get_weather(city: string, unit?: string, days?: integer, details?: array," in text
    assert "  days: Days ahead." in text
    assert '  unit: One of: "celsius", "fahrenheit".' in text  # the values, without a description


def test_the_prompt_shows_a_parameters_values_and_default() -> None:
    """Qwen2.5-Coder-1.5B chose the default-looking "basic" for "in detail" not shown the
    values, and kept an unseen default of 7 days for "upcoming month" (BFCL simple 161, 214)."""
    level = {"type": "string", "enum": ["basic", "detailed"], "description": "How detailed."}
    days = {"type": "integer", "description": "Days from now.", "default": 7}
    parameters = {"type": "object", "properties": {"level": level, "days": days}}
    text = guided_instructions(None, [ToolSpec("lookup", "Look up.", parameters)])
    assert '  level: How detailed. One of: "basic", "detailed".' in text
    assert "  days: Days from now. Default: 7." in text
    many = {"type": "string", "enum": [f"v{n}" for n in range(1000)], "default": "x" * 500}
    listed = {"type": "object", "properties": {"code": many}}
    text = guided_instructions(None, [ToolSpec("lookup", "Look up.", listed)])
    assert '"v15" and 984 more. Default: "xxx' in text
    assert len(text) < 1500  # a server's thousand values do not fill the prompt
    assert '[{"tool": "<tool name>", "arguments": {...}}] calls tools (one, or several' in text
    assert "If no tool fits the question, answer it directly." in text


def test_without_optional_a_small_model_writes_and_sees_the_required_parameters_only() -> None:
    """``optional=False`` (models under ``assemble.FULL_OFFER_FROM``): SmolLM2-135M filled
    optional parameters with values nobody asked for; the tool applies its defaults."""
    schema = guided_schema([weather()], [Message("user", "weather in Paris?")], optional=False)
    assert matches(grammar_of(schema), reply({"tool": "get_weather", "arguments": {"city": "P"}}))
    both = {"city": "Paris", "unit": "celsius"}
    assert not matches(grammar_of(schema), reply({"tool": "get_weather", "arguments": both}))
    text = guided_instructions(None, [weather()], optional=False)
    assert "- get_weather(city: string): Get the weather" in text
    assert "days" not in text


def test_question_spans_are_runs_of_its_words() -> None:
    spans = question_spans("Weather in New York, and in 北京 for 3 days?")
    assert spans[:4] == ("Weather", "in", "New", "York")
    assert "New York" in spans
    assert "北京" in spans
    assert "York and" in spans  # punctuation between words is not kept
    assert "New York," not in spans
    many = question_spans(" ".join(f"w{n}" for n in range(200)))
    assert len(many) == MAX_SPANS
    assert many[:200] == tuple(f"w{n}" for n in range(200))  # the shortest first
    assert many[200] == "w0 w1"
    assert max(len(s.split()) for s in question_spans("a b c d e f g h")) == MAX_SPAN_WORDS


def test_with_spans_a_small_models_strings_come_from_the_question() -> None:
    """``spans`` (models under ``assemble.FULL_OFFER_FROM``): SmolLM2-135M wrote a
    parameter's description, or a sentence of its own, where a name from the question was
    asked for."""
    question = [Message("user", "What is the weather in New York?")]
    schema = guided_schema([weather()], question, optional=False, spans=True)
    grammar = grammar_of(schema)
    assert matches(grammar, reply({"tool": "get_weather", "arguments": {"city": "New York"}}))
    invented = {"city": "The city, e.g. San Francisco, CA."}
    assert not matches(grammar, reply({"tool": "get_weather", "arguments": invented}))
    arguments = offered_arguments(WEATHER, spans=("New York", "NY"))["properties"]
    assert arguments["city"] == {"enum": ["New York", "NY"]}
    assert arguments["unit"] == {"enum": ["celsius", "fahrenheit"]}  # declared values stay
    assert arguments["details"]["items"] == {"enum": ["wind", "rain"]}
    for longest, offered in ((3, {"enum": ["NY"]}), (1, {"type": "string", "maxLength": 1})):
        code = {"type": "object", "properties": {"c": {"type": "string", "maxLength": longest}}}
        assert offered_arguments(code, spans=("New York", "NY"))["properties"]["c"] == offered


def test_question_numbers_are_the_numbers_it_writes() -> None:
    asked = "Split 1,000 by -3, then 2.5% at 300K for two years (2020-2021), not v1.2."
    assert question_numbers(asked) == (1000, -3, 2.5, 300, 2020, 2021, 2)
    assert question_numbers("How do deer populations grow?") == ()
    scientific = "charges of 1e-9 C and 2.5E+3 V, 12eggs"
    assert question_numbers(scientific) == (1e-9, 2500.0, 12)
    assert len(question_numbers(" ".join(map(str, range(1000))))) == MAX_SPANS


def test_with_spans_a_small_models_numbers_come_from_the_question() -> None:
    """SmolLM2-135M wrote 5.243987654321 for a rate the question gave as 5; asked a question
    that holds no value for a required number, no call of that tool can be made."""
    asked = [Message("user", "Triangle area with base 3 and height 4.5?")]
    grammar = grammar_of(guided_schema([triangle()], asked, optional=False, spans=True))
    given = {"tool": "triangle_area", "arguments": {"base": 3, "height": 4.5}}
    assert matches(grammar, reply(given))
    invented = {"tool": "triangle_area", "arguments": {"base": 3, "height": 4.25}}
    assert not matches(grammar, reply(invented))
    counted = {**WEATHER, "required": ["city", "days"]}
    days = spec("get_weather", "Get the weather forecast of a city.", counted)
    half = [Message("user", "Weather in Paris for 2.5 days")]
    assert guided_schema([days], half, spans=True) == ANSWER_BRANCH  # no integer: no call
    unasked = [Message("user", "What area does a triangle have?")]
    assert guided_schema([triangle()], unasked, optional=False, spans=True) == ANSWER_BRANCH
    free = guided_schema([triangle()], unasked, optional=False)  # a larger model: any number
    assert free != ANSWER_BRANCH


def test_a_small_models_client_offers_the_questions_words_through_the_real_loop() -> None:
    """``GuidedClient(small=True)``, as ``assemble`` builds it under ``FULL_OFFER_FROM``: one
    call a reply, the required city only, and a run of the question's words for it."""
    cities: list[str] = []

    def forecast(arguments: Mapping[str, Any]) -> str:
        cities.append(arguments["city"])
        return "sunny"

    tool = AgentTool("get_weather", "Get the weather forecast of a city.", WEATHER, forecast)
    call = {"tool": "get_weather", "arguments": {"city": "New York"}}
    question = "What is the weather in New York?"
    for small in (True, False):
        replies = [reply(call if small else [call]), reply({"answer": "Sunny."})]
        inner = ScriptedModel([ModelResponse((Message("assistant", r),)) for r in replies])
        client = GuidedClient(inner, answer="plain", small=small)
        result = run_agent(client, [tool], AgentConfig(max_turns=2), question)
        assert result.status == "succeeded", result.error
        schema = inner.requests[0].options["response_format"]["schema"]
        branch = next(b for b in schema.get("anyOf", [schema]) if b != ANSWER_BRANCH)
        if small:
            offered = branch["properties"]["arguments"]["properties"]
            assert branch["properties"]["tool"] == {"const": "get_weather"}  # one call
            assert set(offered) == {"city"}
            assert "New York" in offered["city"]["enum"]
            assert "The city, e.g. San Francisco, CA." not in offered["city"]["enum"]
        else:
            offered = branch["items"]["properties"]["arguments"]["properties"]
            assert branch["type"] == "array"  # a list of calls, each as declared
            assert offered["city"] == {"type": "string", "maxLength": MAX_TEXT}
    assert cities == ["New York", "New York"]


def test_a_small_model_asked_without_the_numbers_a_tool_needs_answers_without_a_call() -> None:
    """``GuidedClient(small=True)`` through the real loop: asked for a triangle's area with
    no sides given, the reply may only be the answer; given them, the call takes them."""
    areas: list[JsonObject] = []
    tool = area_tool(areas)
    for question, first in (
        ("What is the area of a triangle?", {"answer": "Half the base times the height."}),
        (
            "Area of a triangle with base 3 and height 4?",
            {"tool": "triangle_area", "arguments": {"base": 3, "height": 4}},
        ),
    ):
        replies = [reply(first), reply({"answer": "6."})]
        inner = ScriptedModel([ModelResponse((Message("assistant", r),)) for r in replies])
        client = GuidedClient(inner, answer="plain", small=True)
        result = run_agent(client, [tool], AgentConfig(max_turns=2), question)
        assert result.status == "succeeded", result.error
        schema = inner.requests[0].options["response_format"]["schema"]
        if "tool" in first:
            branch = next(b for b in schema.get("anyOf", [schema]) if b != ANSWER_BRANCH)
            offered = branch["properties"]["arguments"]["properties"]
            assert offered == {"base": {"enum": [3, 4]}, "height": {"enum": [3, 4]}}
        else:
            assert schema == ANSWER_BRANCH
    assert areas == [{"base": 3, "height": 4}]


def test_consecutive_calls_are_one_list_only_where_replies_are_lists() -> None:
    """A file run's opening calls (list the root, read a named file) follow each other like
    one reply's: each stays its own message there (one list of both cost Qwen2.5-Coder-1.5B
    both clue hunts of the dev half); with a tool that does not explore, one list."""
    from minipi.files import ProjectFiles, create_project_tools

    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse((Message("assistant", reply({"answer": "done"})),))

    def assistant(request: ModelRequest) -> list[str]:
        return [m.text for m in request.items if isinstance(m, Message) and m.role == "assistant"]

    listed = {"tool": "list_files", "arguments": {"path": "."}}
    read = {"tool": "read_file", "arguments": {"path": "a.txt"}}
    with_tool = [AgentTool("triangle_area", "Area of a triangle.", TRIANGLE, lambda a: "1")]
    for extra, expected in (
        ([], [reply(listed), reply(read)]),
        (with_tool, [reply([listed, read])]),
    ):
        with ProjectFiles(_project()) as files:
            tools = [*create_project_tools(files), *extra]
            opening = (("list_files", {"path": "."}), ("read_file", {"path": "a.txt"}))
            config = AgentConfig(max_turns=1, opening_calls=opening)
            run_agent(GuidedClient(ScriptedModel([answer])), tools, config, "What is in a.txt?")
        assert assistant(seen[-1]) == expected


def _project() -> Any:
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp())
    (root / "a.txt").write_text("alpha\n", encoding="utf-8")
    return root


def test_the_answer_waits_for_a_leading_fact_whether_or_not_replies_are_lists() -> None:
    """After the opening listing, the answer waits for a read that bears on the question:
    with a tool that does not explore beside the file tools too, where the reply's calls are
    a list (an MCP server configured for a model from 400M weights)."""
    from minipi.files import ProjectFiles, create_project_tools

    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse((Message("assistant", reply({"answer": "done"})),))

    with_tool = [AgentTool("triangle_area", "Area of a triangle.", TRIANGLE, lambda a: "1")]
    for extra in ([], with_tool):
        with ProjectFiles(_project()) as files:
            tools = [*create_project_tools(files), *extra]
            config = AgentConfig(max_turns=1, opening_calls=(("list_files", {"path": "."}),))
            client = GuidedClient(ScriptedModel([answer]), answer="plain")
            run_agent(client, tools, config, "What revenue does the project report?")
        schema = seen[-1].options["response_format"]["schema"]
        assert ANSWER_BRANCH not in schema.get("anyOf", [schema]), extra
