"""The tracer when traces are on: the OpenTelemetry SDK, exporting over OTLP/HTTP.

Imported only by ``telemetry.configure`` once an endpoint is configured (the ``otel`` extra:
``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http``). The exporter and the
batch processor read the standard variables themselves (``OTEL_EXPORTER_OTLP_*``,
``OTEL_BSP_*``); the resource reads ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``,
and ``service.name`` is ``acp-agent`` when neither names one.

The provider is this process's own, not the global one (``trace.set_tracer_provider``): a host
of the Python API that traces for itself keeps its provider, and these spans go to the
endpoint the variables name.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Mapping

from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME as SERVICE_NAME_KEY, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

from acp_agent import __version__
from acp_agent.logs import get_logger
from acp_agent.telemetry.spans import (
    ENDPOINT,
    SERVICE_NAME,
    SHUTDOWN_S,
    TRACES_ENDPOINT,
    Attributes,
    EventName,
    Span,
    SpanName,
    Tracer,
)

log = get_logger("acp_agent.telemetry")

SCOPE = "acp_agent"
"""The instrumentation scope the spans are recorded under."""


class OtelSpan(Span):
    recording = True

    def __init__(self, tracer: OtelTracer, span: trace.Span) -> None:
        self._tracer = tracer
        self.span = span

    def child(self, name: SpanName, attributes: Attributes) -> Span:
        return self._tracer.start(name, attributes, self)

    def set(self, attributes: Attributes) -> None:
        self.span.set_attributes(attributes)

    def event(self, name: EventName, attributes: Attributes) -> None:
        self.span.add_event(name, attributes)

    def fail(self, description: str) -> None:
        self.span.set_status(Status(StatusCode.ERROR, description))

    def end(self) -> None:
        self.span.end()


class OtelTracer(Tracer):
    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(SCOPE, __version__)
        self._closed = False
        atexit.register(self.close, SHUTDOWN_S)  # a host of the Python API; the server's
        # own ending (``process.life.finish``) closes it first

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> OtelTracer:
        provider = TracerProvider(resource=resource(), shutdown_on_exit=False)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        endpoint = environ.get(TRACES_ENDPOINT) or environ.get(ENDPOINT)
        log.info("traces_enabled", endpoint=endpoint, protocol="http/protobuf")
        return cls(provider)

    def start(self, name: SpanName, attributes: Attributes, parent: Span) -> Span:
        if isinstance(parent, OtelSpan):
            within = trace.set_span_in_context(parent.span)
        else:
            within = context.Context()  # a root: never the span of whatever runs around us
        return OtelSpan(self, self._tracer.start_span(name, within, attributes=attributes))

    def flush(self, within_s: float) -> None:
        _bounded(self._provider.force_flush, within_s, "flush")

    def close(self, within_s: float) -> None:
        if self._closed:
            return
        self._closed = True
        _bounded(self._provider.shutdown, within_s, "shutdown")


def resource() -> Resource:
    """The environment's resource, named ``acp-agent`` unless it names itself."""
    found = Resource.create({SERVICE_VERSION: __version__})
    named = str(found.attributes.get(SERVICE_NAME_KEY, ""))
    if named.startswith("unknown_service"):
        found = found.merge(Resource({SERVICE_NAME_KEY: SERVICE_NAME}))
    return found


def _bounded(step: Callable[[], object], within_s: float, what: str) -> None:
    """``step()`` in a daemon thread, waited for ``within_s`` at most: the SDK's flush retries
    an unreachable collector for ``OTEL_EXPORTER_OTLP_TIMEOUT`` (10 s by default)."""
    thread = threading.Thread(target=step, name=f"otel-{what}", daemon=True)
    thread.start()
    thread.join(within_s)
    if thread.is_alive():
        log.warning("traces_not_exported", step=what, waited_s=within_s)
