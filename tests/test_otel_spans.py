"""OpenTelemetry spans (issue 39, item 3): a run, its model requests and its tool calls as
GenAI-convention spans, through the library (an in-memory exporter) and through the real
``minipi ask --otel`` (a real OTLP/HTTP receiver on 127.0.0.1); nothing of OpenTelemetry is
imported without ``--otel``, and ``--otel`` without the extra is a usage error."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from minipi import AgentConfig, ClientConfig, Endpoint, connect, run_agent
from minipi.agent import RunResult
from minipi.files import ProjectFiles, create_project_tools
from minipi.otel import span_sink
from support.cli import EXAMPLES, clean_env, minipi, tool_outputs
from support.fake import Call, FakeServer, Turn

SAMPLE = EXAMPLES / "sample_project"
QUESTION = "What is the date of the daily report in reports/?"
FAST = ClientConfig(backoff_base=0.01, read_timeout=10.0)


def _answer_from_listing(body: dict[str, Any]) -> Turn:
    listed = tool_outputs(body)[-1]
    return Turn(f"The daily report is {listed}, dated 2026-09-06.")


def _script(server: FakeServer) -> None:
    server.add(Turn(calls=[Call("list_files", {"path": "reports"})]), _answer_from_listing)


def _spans(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    by_operation: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        operation = str((span.attributes or {})["gen_ai.operation.name"])
        by_operation.setdefault(operation, []).append(span)
    return by_operation


def _traced_run(server: FakeServer, base_url: str) -> tuple[RunResult, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    endpoint = Endpoint(server.base_url, "fake-model")
    with closing(connect(endpoint, FAST)) as client, ProjectFiles(SAMPLE) as files:
        sink = span_sink(provider, base_url=base_url)
        result = run_agent(client, create_project_tools(files), AgentConfig(), QUESTION, sink)
    return result, exporter


def test_a_run_is_one_agent_span_with_its_requests_and_calls_as_children() -> None:
    with FakeServer() as server:
        _script(server)
        result, exporter = _traced_run(server, server.base_url)
    assert result.status == "succeeded", result.error
    spans = _spans(exporter)
    (run,) = spans["invoke_agent"]
    chats, (tool,) = spans["chat"], spans["execute_tool"]
    assert run.name == "invoke_agent minipi"
    assert [c.name for c in chats] == ["chat fake-model", "chat fake-model"]
    assert tool.name == "execute_tool list_files"
    assert run.parent is None
    for child in (*chats, tool):  # children of the run's span, in its trace
        assert child.parent is not None
        assert child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
        assert run.start_time <= child.start_time <= child.end_time <= run.end_time  # type: ignore[operator]
    port = int(server.base_url.split(":")[2].split("/")[0])
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "fake-model"
    assert first["gen_ai.response.model"] == "fake-model"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert isinstance(first["gen_ai.usage.input_tokens"], int)
    assert isinstance(first["gen_ai.usage.output_tokens"], int)
    assert (first["server.address"], first["server.port"]) == ("127.0.0.1", port)
    assert chats[0].kind is SpanKind.CLIENT
    assert run.kind is tool.kind is SpanKind.INTERNAL
    called = dict(tool.attributes or {})
    assert called["gen_ai.tool.name"] == "list_files"
    assert called["gen_ai.tool.call.id"]
    assert "error.type" not in called
    ended = dict(run.attributes or {})
    assert ended["minipi.status"] == "succeeded"
    assert ended["minipi.verdict"] == result.verdict.kind  # type: ignore[union-attr]
    assert ended["minipi.tool_calls"] == 1
    assert "error.type" not in ended
    assert "minipi.end_code" not in ended


def test_no_content_and_no_credentials_in_any_attribute() -> None:
    """Content capture is off: the question, the answer and the tool's output are in no
    span; a password in the URL is not either."""
    with FakeServer() as server:
        _script(server)
        secret_url = server.base_url.replace("http://", "http://me:s3cret-pw@")
        result, exporter = _traced_run(server, secret_url)
    spans = exporter.get_finished_spans()
    values = " ".join(str(value) for span in spans for value in (span.attributes or {}).values())
    assert result.answer
    assert result.answer not in values
    for text in (QUESTION, "daily-2026-09-06", "s3cret-pw", "me:"):
        assert text not in values


def test_a_failed_request_marks_its_span_and_the_run_with_the_end_code() -> None:
    with FakeServer() as server:  # an empty script: a 400, not retried
        result, exporter = _traced_run(server, server.base_url)
    assert result.code == "bad_request"
    spans = _spans(exporter)
    (chat,), (run,) = spans["chat"], spans["invoke_agent"]
    assert (chat.attributes or {})["error.type"] == "bad_request"
    assert chat.status.status_code is StatusCode.ERROR
    assert run.status.status_code is StatusCode.ERROR
    ended = dict(run.attributes or {})
    assert (ended["error.type"], ended["minipi.end_code"]) == ("bad_request", "bad_request")
    assert ended["minipi.status"] == "failed"


# --- the CLI: minipi ask --otel, exporting to a real OTLP/HTTP receiver ----------------------


class _Receiver(ThreadingHTTPServer):
    requests: list[ExportTraceServiceRequest]


class _Traces(BaseHTTPRequestHandler):
    server: _Receiver

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    """An OTLP/HTTP trace receiver on 127.0.0.1 (``POST /v1/traces``, protobuf)."""
    server = _Receiver(("127.0.0.1", 0), _Traces)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _otel_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in clean_env().items() if not k.startswith("OTEL_")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra)
    return env


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind)


def _received(receiver: _Receiver) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The resource's attributes and every span received (name, ids, attributes)."""
    resource: dict[str, Any] = {}
    spans = []
    for request in receiver.requests:
        for resource_spans in request.resource_spans:
            resource.update({a.key: _value(a.value) for a in resource_spans.resource.attributes})
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    spans.append(
                        {
                            "name": span.name,
                            "id": span.span_id,
                            "parent": span.parent_span_id,
                            "trace": span.trace_id,
                            "attributes": attributes,
                        }
                    )
    return resource, spans


def test_ask_otel_exports_the_spans_over_otlp_http(receiver: _Receiver) -> None:
    with FakeServer() as server:
        _script(server)
        port = receiver.server_address[1]
        env = _otel_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
        proc = minipi(
            "ask", QUESTION, "-p", str(SAMPLE), "--base-url", server.base_url,
            "-m", "fake-model", "--otel", env=env,
        )  # fmt: skip
    assert proc.returncode in (0, 4), proc.stderr
    assert "Traceback" not in proc.stderr
    resource, spans = _received(receiver)  # flushed at exit: the process is gone
    assert resource["service.name"] == "minipi"
    by_name = {span["name"]: span for span in spans}
    assert sorted(by_name) == ["chat fake-model", "execute_tool list_files", "invoke_agent minipi"]
    assert len(spans) == 4  # two requests
    run = by_name["invoke_agent minipi"]
    assert run["parent"] == b""
    for span in spans:
        if span is not run:
            assert (span["parent"], span["trace"]) == (run["id"], run["trace"])
    assert run["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert run["attributes"]["minipi.status"] == "succeeded"
    assert "minipi.verdict" in run["attributes"]
    chat = by_name["chat fake-model"]["attributes"]
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == "fake-model"
    assert chat["server.address"] == "127.0.0.1"
    assert "gen_ai.usage.input_tokens" in chat
    tool = by_name["execute_tool list_files"]["attributes"]
    assert tool["gen_ai.tool.name"] == "list_files"
    assert tool["gen_ai.tool.call.id"]


def test_batch_otel_exports_each_tasks_run_as_its_own_trace(
    receiver: _Receiver, tmp_path: Path
) -> None:
    """``minipi batch --otel``: every task is one ``invoke_agent`` span with its requests and
    calls under it, in a trace of its own."""
    import json

    tasks = tmp_path / "tasks.jsonl"
    lines = [{"id": f"t{n}", "question": QUESTION, "project": str(SAMPLE)} for n in (1, 2)]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with FakeServer() as server:
        _script(server)
        _script(server)
        port = receiver.server_address[1]
        env = _otel_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
        proc = minipi(
            "batch", str(tasks), "-o", str(tmp_path / "out"), "-w", "1",
            "--base-url", server.base_url, "-m", "fake-model", "--otel", env=env,
        )  # fmt: skip
    assert proc.returncode in (0, 4), proc.stderr
    assert "Traceback" not in proc.stderr
    _, spans = _received(receiver)
    runs = [span for span in spans if span["name"] == "invoke_agent minipi"]
    assert len(runs) == 2
    assert runs[0]["trace"] != runs[1]["trace"]
    for run in runs:
        under = [s for s in spans if s["trace"] == run["trace"] and s is not run]
        assert sorted(s["name"] for s in under) == [
            "chat fake-model", "chat fake-model", "execute_tool list_files"
        ]  # fmt: skip
        assert all(s["parent"] == run["id"] for s in under)


def test_the_cli_without_otel_imports_no_opentelemetry() -> None:
    startup = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import minipi.cli.main"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "minipi.cli.main" in startup.stderr
    assert "opentelemetry" not in startup.stderr
    with FakeServer() as server:  # a whole run, its sinks built
        _script(server)
        ran = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "minipi", "ask", QUESTION, "-p",
             str(SAMPLE), "--base-url", server.base_url, "-m", "fake-model", "-q"],
            capture_output=True, text=True, env=_otel_env(), check=False, timeout=60,
        )  # fmt: skip
    assert ran.returncode in (0, 4), ran.stderr
    assert "minipi.cli.app" in ran.stderr
    assert "opentelemetry" not in ran.stderr


def test_otel_without_the_extra_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    """The extra missing, as Python sees it (``sys.modules[name] = None``: the import fails
    with ModuleNotFoundError): exit 2, the pip command, no traceback, no request sent."""
    blocked = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from minipi.cli.main import main\n"
        "sys.argv = ['minipi', *sys.argv[1:]]\n"
        "main()\n"
    )
    with FakeServer() as server:
        proc = subprocess.run(
            [sys.executable, "-c", blocked, "ask", QUESTION, "-p", str(SAMPLE),
             "--base-url", server.base_url, "-m", "fake-model", "--otel"],
            capture_output=True, text=True, env=_otel_env(), check=False, timeout=60,
        )  # fmt: skip
        assert server.posts == 0
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'minipi[otel]'" in proc.stderr
    assert "--otel" in proc.stderr
    assert "Traceback" not in proc.stderr
