"""OpenTelemetry spans of a run (the ``otel`` extra: ``pip install 'minipi[otel]'``).

A run is one ``invoke_agent minipi`` span; each model request a ``chat MODEL`` span and each
tool call an ``execute_tool TOOL`` span, both children of the run's, named and attributed as
the OpenTelemetry GenAI semantic conventions say (``gen_ai.*``, ``server.*``, ``error.type``),
with minipi's own ``minipi.*`` (how the run ended, its verdict). The spans are made by an
event sink, from the loop's events, with the times the events give: the loop itself knows
nothing of tracing::

    from minipi.otel import span_sink

    sink = span_sink(tracer_provider, base_url=endpoint.base_url)   # None: the global one
    result = run_agent(client, tools, config, question, sink)       # or fan_out(sink, mine)

No prompt, answer, tool argument or tool output is put in a span (the conventions' content
capture stays off); the server is named by host and port only, cleaned of secrets. One sink
traces one run at a time (runs one after another may share it).

``minipi ask --otel`` and ``minipi chat --otel`` export over OTLP/HTTP (``tracing``), set up
by the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``..._TRACES_ENDPOINT``,
``..._HEADERS``, ``OTEL_SERVICE_NAME``...), and flush at exit. Nothing of OpenTelemetry is
imported until one of these is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minipi.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from minipi.otel.spans import SpanSink

__all__ = ["MISSING_EXTRA", "span_sink", "tracing"]

MISSING_EXTRA = (
    "--otel needs the `otel` extra (OpenTelemetry's SDK and OTLP/HTTP exporter), which is not "
    "installed: pip install 'minipi[otel]'"
)


def span_sink(
    tracer_provider: TracerProvider | None = None,
    *,
    base_url: str | None = None,
    provider_name: str = "openai",
) -> SpanSink:
    """An event sink that turns a run's events into spans of ``tracer_provider`` (None: the
    global one). ``base_url``: the endpoint, for ``server.address`` / ``server.port``;
    ``provider_name``: ``gen_ai.provider.name`` (minipi speaks the OpenAI API)."""
    from minipi.otel.spans import SpanSink

    return SpanSink(tracer_provider, base_url=base_url, provider_name=provider_name)


def tracing() -> TracerProvider:
    """The CLI's tracer provider: one a process, exporting over OTLP/HTTP as the ``OTEL_*``
    variables say, flushed at exit. ``ConfigError`` (a usage error) when the extra is not
    installed."""
    try:
        from minipi.otel.export import otlp_provider
    except ImportError:
        raise ConfigError(MISSING_EXTRA, code="missing_extra") from None
    return otlp_provider()
