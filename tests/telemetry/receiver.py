"""A loopback OTLP/HTTP trace receiver: ``POST /v1/traces``, protobuf bodies, decoded.

A ``ThreadingHTTPServer`` on 127.0.0.1 in a daemon thread. Each request's body is decoded with
the protocol's own message (``ExportTraceServiceRequest`` of ``opentelemetry-proto``, which the
exporter brings) and its spans kept as ``Received``: what a collector would store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

Value = str | int | float | bool | tuple[object, ...] | None


def value_of(any_value: AnyValue) -> Value:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(value_of(v) for v in any_value.array_value.values)
    found: Value = getattr(any_value, kind)
    return found


def attributes_of(pairs: Iterator[KeyValue] | list[KeyValue]) -> dict[str, Value]:
    return {pair.key: value_of(pair.value) for pair in pairs}


@dataclass(frozen=True)
class Received:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Value]
    events: tuple[tuple[str, dict[str, Value]], ...]
    status: int
    """``Status.StatusCode``: 0 unset, 1 ok, 2 error."""
    resource: dict[str, Value]
    start_ns: int
    end_ns: int


@dataclass
class Receiver:
    url: str = ""
    spans: list[Received] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    content_types: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, path: str, content_type: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            self.paths.append(path)
            self.content_types.append(content_type)
            for resource_spans in request.resource_spans:
                resource = attributes_of(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend(_received(s, resource) for s in scope_spans.spans)

    def named(self, name: str) -> list[Received]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def wait_for(self, ready: Callable[[Receiver], bool], timeout: float = 10.0) -> None:
        """Until ``ready(self)`` (the exporter sends from its own thread, in batches)."""
        deadline = time.monotonic() + timeout
        while not ready(self):
            if time.monotonic() > deadline:
                names = sorted(s.name for s in self.spans)
                raise AssertionError(f"the spans expected did not come; received: {names}")
            time.sleep(0.02)


def _received(span: object, resource: dict[str, Value]) -> Received:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    assert isinstance(span, Span)
    return Received(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        attributes=attributes_of(list(span.attributes)),
        events=tuple((e.name, attributes_of(list(e.attributes))) for e in span.events),
        status=span.status.code,
        resource=resource,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
    )


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 (an ephemeral port) while this lasts."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            receiver.take(self.path, self.headers.get("Content-Type", ""), body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
