"""Traces: the seam the turn engine and the session layer record spans through.

Theory of operation
-------------------
Off unless configured: with neither ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` nor
``OTEL_EXPORTER_OTLP_ENDPOINT`` set (or with ``OTEL_SDK_DISABLED=true``, or
``OTEL_TRACES_EXPORTER=none``), the process's tracer is ``Tracer()``, whose every span is
``NO_SPAN``: methods that do nothing, no time taken, nothing of ``opentelemetry`` imported
(``tests/telemetry/test_off.py``). So callers need not ask whether tracing is on; they start
a span per turn, per model request, per tool call, per subagent, never per streamed chunk.

Configured (``configure``, once, by the process's owner after logging is set up: the stdio
door and ``serve --listen`` in ``acp_agent/process/``; ``acp_agent.api.Agent.open`` for the
Python API), ``otel.OtelTracer`` builds the SDK's ``TracerProvider`` with a
``BatchSpanProcessor`` around the OTLP/HTTP exporter, which reads the standard ``OTEL_*``
variables itself (endpoint, headers, timeout, compression; ``OTEL_BSP_*`` for the batches).
Spans are exported from the SDK's own thread: a slow or unreachable collector never holds a
turn. Without the ``otel`` extra (or with variables the SDK cannot be set up from) the process
gets one warning in the log, ``traces_unavailable``, and tracing stays off.

``shutdown`` (``process.life.finish``, and ``atexit`` for a host of the Python API) exports
what is left within ``SHUTDOWN_S`` at most: an unreachable collector's retries are abandoned
then (the SDK's thread is a daemon), so the process still exits promptly.

A span's parent is given explicitly (``Span.child``), or, for code that cannot be handed one
(a subagent, deep in a tool's run), is ``current()``: the span ``inside`` entered in this task
(the tool call). The OpenTelemetry context is not used for that: the actor's workers run in
tasks of their own, and an explicit parent cannot be lost between them.

If you add a span or an attribute, list it in docs/contract.md §14 ("Traces").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from acp_agent.telemetry.spans import (
    ENDPOINT as ENDPOINT,
    NO_SPAN as NO_SPAN,
    SESSION_ID as SESSION_ID,
    SHUTDOWN_S as SHUTDOWN_S,
    TRACES_ENDPOINT as TRACES_ENDPOINT,
    Attributes as Attributes,
    EventName as EventName,
    Span as Span,
    SpanName as SpanName,
    Tracer as Tracer,
)

EXTRA_HINT = "pip install 'acp-agent-server[otel]'"

_tracer = Tracer()
_unavailable = False
"""``configure`` warned once already: it does not again (a host opening many ``Agent``s)."""
_current: ContextVar[Span] = ContextVar("acp_agent_span", default=NO_SPAN)


def start(name: SpanName, attributes: Attributes, parent: Span | None = None) -> Span:
    """A new span, child of ``parent`` (by default ``current()``; a root span if none)."""
    return _tracer.start(name, attributes, current() if parent is None else parent)


def current() -> Span:
    return _current.get()


@contextmanager
def inside(span: Span) -> Iterator[None]:
    """``current()`` is ``span`` in this task (and in the tasks it starts) while this lasts."""
    token = _current.set(span)
    try:
        yield
    finally:
        _current.reset(token)


def wanted(environ: Mapping[str, str]) -> bool:
    """Is an OTLP endpoint configured, and tracing not disabled?"""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return bool(environ.get(TRACES_ENDPOINT, "").strip() or environ.get(ENDPOINT, "").strip())


def enabled() -> bool:
    return type(_tracer) is not Tracer


def configure(environ: Mapping[str, str] | None = None) -> bool:
    """Tracing on if ``environ`` (the process's) asks for it; once per process. Without the
    ``otel`` extra, or if the SDK cannot be set up: one warning, and tracing stays off (the
    agent runs as ever). True when it is on."""
    global _tracer
    environ = os.environ if environ is None else environ
    if enabled() or _unavailable or not wanted(environ):
        return enabled()
    try:
        from acp_agent.telemetry.otel import OtelTracer
    except ImportError as exc:
        return _off(f"the otel extra is not installed ({exc.name} is missing)", EXTRA_HINT)
    try:
        _tracer = OtelTracer.from_environment(environ)
    except Exception as exc:  # traces are never worth the server
        return _off(f"the OpenTelemetry SDK could not be set up: {exc!r}")
    return True


def _off(reason: str, hint: str | None = None) -> bool:
    global _unavailable
    from acp_agent.logs import get_logger

    _unavailable = True
    hinted = {"hint": hint} if hint else {}
    get_logger("acp_agent.telemetry").warning("traces_unavailable", reason=reason, **hinted)
    return False


def flush(within_s: float = SHUTDOWN_S) -> None:
    """Export the spans ended so far (``within_s`` at most); tracing stays on."""
    _tracer.flush(within_s)


def shutdown(within_s: float = SHUTDOWN_S) -> None:
    """Export what is left (``within_s`` at most) and turn tracing off."""
    global _tracer
    tracer, _tracer = _tracer, Tracer()
    tracer.close(within_s)
