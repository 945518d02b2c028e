"""Structured answers (``run_agent(output=...)``, ``minipi ask --schema``): the answer is a JSON
value of the caller's shape, each leaf traced to the file, JSON Pointer and line it was read
from, checked in its field's context; over real HTTP against the fake model, through the
real CLI, on files no suite holds.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from minipi.agent import AgentConfig, RunResult, run_agent
from minipi.ai import Endpoint, connect
from minipi.ai.types import Wire
from minipi.errors import ConfigError
from minipi.files import ProjectFiles, create_project_tools
from minipi.structured import shape_of
from support.cli import json_lines, minipi
from support.fake import Call, FakeServer, Turn
from support.faults import error_status

STATION = {
    "weather/station-7.json": (
        '{\n  "station": "Kiel Nord",\n  "day": "2026-02-11",\n'
        '  "rain_mm": 14.2,\n  "gust_kmh": 87\n}\n'
    ),
    "weather/notes.yaml": "crew: 4\nreported_by: Hanne Vogel\nnext_visit: 2026-03-02\n",
}
SCHEMA = "station, day, rain_mm:number, gust_kmh:int"
QUESTION = "What did station 7 record on its last day: rain and gusts?"
RIGHT = {"station": "Kiel Nord", "day": "2026-02-11", "rain_mm": 14.2, "gust_kmh": 87}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in STATION.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def _reads(*paths: str) -> list[Turn]:
    return [Turn(calls=[Call("read_file", {"path": path})]) for path in paths]


def _ask(
    server: FakeServer,
    project: Path,
    output: object,
    config: AgentConfig | None = None,
    wire: Wire = "chat",
) -> RunResult:
    endpoint = Endpoint(server.base_url, "fake-model", wire=wire)
    with closing(connect(endpoint)) as client, ProjectFiles(project) as files:
        tools = create_project_tools(files)
        return run_agent(client, tools, config or AgentConfig(), QUESTION, output=output)


def _fields(result: RunResult) -> dict[str, tuple[str, list[tuple[Any, ...]]]]:
    assert result.output is not None
    return {
        f.pointer: (f.status, [(s.path, s.pointer, s.line) for s in f.sources])
        for f in result.output.fields
    }


# --- the shape ------------------------------------------------------------------------------


def test_the_shape_is_read_from_each_form_the_caller_may_give(tmp_path: Path) -> None:
    """The compact form, the shorthand, a JSON Schema inline or in a file, a dataclass and a
    pydantic model give the same object schema; each field of the short forms is required."""

    @dataclasses.dataclass
    class Reading:
        station: str
        gust_kmh: int

    pydantic = pytest.importorskip("pydantic")
    model = pydantic.create_model("Reading", station=(str, ...), gust_kmh=(int, ...))
    full = {
        "type": "object",
        "properties": {"station": {"type": "string"}, "gust_kmh": {"type": "integer"}},
        "required": ["station", "gust_kmh"],
    }
    (tmp_path / "shape.json").write_text(json.dumps(full), encoding="utf-8")
    forms: list[object] = [
        "station, gust_kmh:int",
        "station\ngust_kmh int",
        '{"station": "string", "gust_kmh": "integer"}',
        json.dumps(full),
        str(tmp_path / "shape.json"),
        Reading,
        model,
    ]
    for form in forms:
        shape = shape_of(form)
        assert shape.problem({"station": "Kiel", "gust_kmh": 87}) is None, form
        assert shape.problem({"station": "Kiel", "gust_kmh": "87"}) is not None, form
        assert shape.problem({"gust_kmh": 87}) is not None, form
    built = shape_of(Reading).build({"station": "Kiel", "gust_kmh": 87})
    assert built == Reading("Kiel", 87)


@pytest.mark.parametrize("bad", ["", "gust km/h int", '{"a": ', '{"a": "colour"}', "[1, 2]"])
def test_a_shape_that_cannot_be_read_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        shape_of(bad)
    assert caught.value.code == "invalid_schema"


# --- the run --------------------------------------------------------------------------------


def test_each_field_names_the_file_pointer_and_line_it_came_from(
    fake_server: FakeServer, project: Path
) -> None:
    fake_server.add(
        *_reads("weather/station-7.json"),
        Turn("Kiel Nord had 14.2 mm of rain and gusts of 87 km/h on 2026-02-11."),
        Turn(json.dumps(RIGHT)),
    )
    result = _ask(fake_server, project, SCHEMA)
    assert result.status == "succeeded", result.error
    assert json.loads(result.answer) == RIGHT
    assert result.verdict is not None
    assert result.verdict.backed
    source = "weather/station-7.json"
    assert _fields(result) == {
        "/station": ("supported", [(source, "/station", 2)]),
        "/day": ("supported", [(source, "/day", 3)]),
        "/rain_mm": ("supported", [(source, "/rain_mm", 4)]),
        "/gust_kmh": ("supported", [(source, "/gust_kmh", 5)]),
    }
    body = fake_server.requests[-1].body or {}
    assert body["response_format"]["json_schema"]["schema"] == shape_of(SCHEMA).schema
    assert body["tool_choice"] == "none"


def test_the_responses_wire_asks_for_the_schema_as_its_text_format(
    fake_server: FakeServer, project: Path
) -> None:
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(RIGHT)))
    result = _ask(fake_server, project, SCHEMA, wire="responses")
    assert result.status == "succeeded", result.error
    body = fake_server.requests[-1].body or {}
    assert body["text"]["format"]["schema"] == shape_of(SCHEMA).schema
    assert "response_format" not in body


def test_a_field_holding_another_fields_value_is_flagged(
    fake_server: FakeServer, project: Path
) -> None:
    """The field's name is its label: a value read under another key of its record is
    ``mislabeled``; a value in no read is ``unsupported``; the verdict is the worst."""
    swapped = {**RIGHT, "rain_mm": 87, "gust_kmh": 14}
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(swapped)))
    result = _ask(fake_server, project, SCHEMA)
    assert _fields(result)["/rain_mm"][0] == "mislabeled"
    assert result.verdict is not None
    assert result.verdict.kind == "weak"
    invented = {**RIGHT, "gust_kmh": 91}
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(invented)))
    result = _ask(fake_server, project, SCHEMA)
    assert _fields(result)["/gust_kmh"] == ("unsupported", [])
    assert result.verdict is not None
    assert result.verdict.kind == "unbacked"


def test_a_word_value_is_found_whole_and_a_yes_or_no_cannot_tell(
    fake_server: FakeServer, project: Path
) -> None:
    shape = "reported_by, crew:int, visited:bool"
    said = {"reported_by": "Hanne Vogel", "crew": 4, "visited": True}
    fake_server.add(*_reads("weather/notes.yaml"), Turn("Hanne, 4."), Turn(json.dumps(said)))
    fields = _fields(_ask(fake_server, project, shape))
    assert fields["/reported_by"] == ("supported", [("weather/notes.yaml", None, 2)])
    assert fields["/visited"] == ("weak", [])
    part = {"reported_by": "Hanne", "crew": 4, "visited": True}
    fake_server.add(*_reads("weather/notes.yaml"), Turn("Hanne."), Turn(json.dumps(part)))
    assert _fields(_ask(fake_server, project, shape))["/reported_by"][0] == "supported"
    wrong = {"reported_by": "Hanne Berg", "crew": 4, "visited": True}
    fake_server.add(*_reads("weather/notes.yaml"), Turn("Hanne."), Turn(json.dumps(wrong)))
    assert _fields(_ask(fake_server, project, shape))["/reported_by"] == ("unsupported", [])


def test_require_refuses_a_field_no_read_backs(fake_server: FakeServer, project: Path) -> None:
    invented = {**RIGHT, "rain_mm": 3.5}
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(invented)))
    result = _ask(fake_server, project, SCHEMA, AgentConfig(evidence="require"))
    assert (result.status, result.code) == ("failed", "unsupported_fields")
    assert "/rain_mm=3.5" in (result.error or "")


def test_a_reply_that_does_not_fit_is_told_why_once(fake_server: FakeServer, project: Path) -> None:
    fake_server.add(
        *_reads("weather/station-7.json"),
        Turn("Done."),
        Turn('```json\n{"station": "Kiel Nord", "day": "2026-02-11", "rain_mm": "14.2"}\n```'),
        Turn(json.dumps(RIGHT)),
    )
    result = _ask(fake_server, project, SCHEMA)
    assert result.status == "succeeded", result.error
    told = (fake_server.requests[-1].body or {})["messages"][-1]["content"]
    assert "does not match the schema" in told
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn("not json"), Turn("[]"))
    result = _ask(fake_server, project, SCHEMA)
    assert (result.status, result.code) == ("failed", "invalid_output")


def test_a_server_that_refuses_response_format_is_asked_without_it(
    fake_server: FakeServer, project: Path
) -> None:
    fake_server.add(
        *_reads("weather/station-7.json"),
        Turn("Done."),
        error_status(400, "response_format is not supported"),
        Turn(json.dumps(RIGHT)),
    )
    result = _ask(fake_server, project, SCHEMA)
    assert result.status == "succeeded", result.error
    assert "response_format" not in (fake_server.requests[-1].body or {})


# --- the command ----------------------------------------------------------------------------


def _cli(server: FakeServer, project: Path, *flags: str) -> Iterator[Any]:
    yield minipi(
        "ask",
        QUESTION,
        "-p",
        str(project),
        "--base-url",
        server.base_url,
        "-m",
        "fake-model",
        "--schema",
        SCHEMA,
        *flags,
    )


def test_the_command_prints_the_json_alone_and_json_carries_the_sources(
    fake_server: FakeServer, project: Path
) -> None:
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(RIGHT)))
    (proc,) = _cli(fake_server, project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == RIGHT
    assert proc.stdout == json.dumps(RIGHT, ensure_ascii=False) + "\n"
    assert "weather/station-7.json:5  /gust_kmh" in proc.stderr
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(RIGHT)))
    (proc,) = _cli(fake_server, project, "--json")
    end = json_lines(proc.stdout)[-1]
    assert end["output"]["value"] == RIGHT
    gust = end["output"]["fields"][3]
    assert (gust["pointer"], gust["status"]) == ("/gust_kmh", "supported")
    assert gust["sources"][0]["path"] == "weather/station-7.json"
    assert (gust["sources"][0]["pointer"], gust["sources"][0]["line"]) == ("/gust_kmh", 5)


def test_the_command_exits_4_for_a_field_no_read_backs(
    fake_server: FakeServer, project: Path
) -> None:
    wrong = {**RIGHT, "gust_kmh": 91}
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(wrong)))
    (proc,) = _cli(fake_server, project)
    assert proc.returncode == 4, proc.stderr
    assert json.loads(proc.stdout) == wrong


def test_a_bad_schema_is_a_usage_error_before_anything_starts(project: Path) -> None:
    proc = minipi("ask", QUESTION, "-p", str(project), "--schema", '{"a": "colour"}')
    assert proc.returncode == 2
    assert "schema: " in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_batch_task_with_a_schema_writes_its_traced_value(
    fake_server: FakeServer, project: Path
) -> None:
    """Extraction from many folders into a table: each task's value in results.jsonl with
    each field's sources; a task whose schema cannot be read is that line's problem."""
    rows = [
        {"id": "kiel", "question": QUESTION, "project": str(project), "schema": SCHEMA},
        {"id": "bad", "question": QUESTION, "project": str(project), "schema": {"a": "colour"}},
    ]
    tasks = project.parent / f"{project.name}-tasks.jsonl"  # outside the project: its own
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    fake_server.add(*_reads("weather/station-7.json"), Turn("Done."), Turn(json.dumps(RIGHT)))
    out = project.parent / f"{project.name}-out"
    args = ["--base-url", fake_server.base_url, "-m", "fake-model", "--workers", "1"]
    proc = minipi("batch", str(tasks), "--out", str(out), *args)
    assert f"{tasks}:2: " in proc.stderr
    assert '"schema"' in proc.stderr
    (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert record["status"] == "succeeded", record
    assert (record["id"], record["status"], record["verdict"]["kind"]) == (
        "kiel",
        "succeeded",
        "backed",
    )
    assert record["output"]["value"] == RIGHT
    rain = record["output"]["fields"][2]
    assert (rain["pointer"], rain["sources"][0]["line"]) == ("/rain_mm", 4)
    shown = minipi("batch", "show", str(out))
    assert shown.returncode == 0, shown.stderr


@dataclasses.dataclass
class Gust:
    kmh: int


@dataclasses.dataclass
class Day:
    station: str
    gust: Gust
    notes: list[str]
    rain_mm: float | None


def test_a_nested_dataclass_is_read_as_tool_parameters_are() -> None:
    """One rule reads type hints for a tool's parameters and for a structured answer: a
    nested dataclass, a list, an optional field; the value is built back into the classes."""
    shape = shape_of(Day)
    value: dict[str, Any] = {"station": "Kiel", "gust": {"kmh": 87}, "notes": [], "rain_mm": None}
    assert shape.problem(value) is None
    assert shape.problem({**value, "gust": {"kmh": "87"}}) is not None
    assert shape.build(value) == Day("Kiel", Gust(87), [], None)
