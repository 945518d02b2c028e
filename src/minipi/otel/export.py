"""The CLI's exporter (``--otel``): OTLP/HTTP, set up by the standard ``OTEL_*`` variables.

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``,
else ``http://localhost:4318/v1/traces``), ``..._HEADERS``, ``..._TIMEOUT``,
``..._COMPRESSION``, the certificates, ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``
are read by the SDK itself; ``OTEL_SDK_DISABLED=true`` turns it off. The service is
``minipi`` unless they name another. Spans leave in batches, in the background; what is left
is sent when the process exits (the provider's own exit hook).
"""

from __future__ import annotations

import functools

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from minipi import __version__

__all__ = ["otlp_provider", "resource"]


@functools.cache
def otlp_provider() -> TracerProvider:
    """The process's provider, exporting over OTLP/HTTP, flushed and shut down at exit."""
    provider = TracerProvider(resource=resource(), shutdown_on_exit=True)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def resource() -> Resource:
    """The SDK's resource (from its variables); a service they do not name is ``minipi``,
    of minipi's version."""
    found = Resource.create()
    if not str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        return found
    ours = {"service.name": "minipi"}
    if "service.version" not in found.attributes:
        ours["service.version"] = __version__
    return found.merge(Resource(ours))
