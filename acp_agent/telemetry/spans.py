"""What a span is, and the tracer that makes them: off by default (``Tracer``, ``NO_SPAN``).

The vocabulary (span and event names, the ``session.id`` attribute) is here too, so that
``otel.py`` and the package's callers share it; ``acp_agent/telemetry/__init__.py`` says how it
works.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar

Attribute = str | int | float | bool | tuple[str, ...]
Attributes = Mapping[str, Attribute]

TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
SHUTDOWN_S = 1.5
"""At the process's end, how long the last spans get to be exported."""
SERVICE_NAME = "acp-agent"
"""``service.name`` unless ``OTEL_SERVICE_NAME`` (or ``OTEL_RESOURCE_ATTRIBUTES``) names one."""


class SpanName(StrEnum):
    TURN = "turn"
    MODEL_REQUEST = "model.request"
    TOOL_CALL = "tool.call"
    SUBAGENT = "subagent"
    INJECTION = "injection"
    """An injection appended while no turn is open (with one open, it is an event on it)."""


class EventName(StrEnum):
    """Span events on a ``turn`` span."""

    INJECTION = "injection"
    STEERING = "steering"
    COMPACTION = "compaction"


SESSION_ID = "session.id"


class Span:
    """A span that records nothing: what every span is while tracing is off."""

    recording: ClassVar[bool] = False

    def child(self, name: SpanName, attributes: Attributes) -> Span:
        return self

    def set(self, attributes: Attributes) -> None:
        pass

    def event(self, name: EventName, attributes: Attributes) -> None:
        pass

    def fail(self, description: str) -> None:
        """The span's status is an error, ``description`` saying which."""

    def end(self) -> None:
        pass


NO_SPAN = Span()


class Tracer:
    """Tracing off: every span is ``NO_SPAN``."""

    def start(self, name: SpanName, attributes: Attributes, parent: Span) -> Span:
        return NO_SPAN

    def flush(self, within_s: float) -> None:
        pass

    def close(self, within_s: float) -> None:
        pass
