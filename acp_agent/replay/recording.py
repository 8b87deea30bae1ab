"""A ``ModelProvider`` wrapper that writes what the provider streamed as script-model lines.

Any provider works: ``RecordingProvider(inner, sink)`` passes every request to ``inner`` and
every event back unchanged, and turns each request's stream into one ``ScriptLine``
(docs/contract.md §5), so the recorded fixture replays key-free through ``script:``:

- thought deltas -> ``thought`` (joined; the script model streams its thought first, so a
  thought that came after text moves before it);
- text deltas -> ``text`` (one delta) or ``chunks`` (several, as streamed);
- ready tool calls -> ``toolCalls``; ``Finish`` -> ``stopReason`` (omitted for ``end_turn``);
- a ``ModelError`` -> ``error``; other events (token usage ...) are not recorded; a stream that never finished (cancelled, or the process was
  killed) -> ``hang: true`` after what it streamed.

Lines are kept in the order the requests *started* (the script model takes its next line when
a request starts), even when streams of two sessions overlap. The sink rewrites its whole file
after every event (atomically), so a SIGKILL leaves every request seen so far on disk, an
unfinished one as a ``hang`` line.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from acp_agent.model.base import (
    Finish,
    ModelError,
    ModelProvider,
    ModelRequest,
    StopKind,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
)
from acp_agent.model.script import ScriptError, ScriptLine, ScriptModel, ScriptToolCall

_ENCODER = msgspec.json.Encoder()

PROVIDER_ENV = "ACP_AGENT_RECORD_PROVIDER"
"""``MODULE:FACTORY`` of a provider the recording server uses instead of its spec's."""


@dataclass
class StreamCapture:
    """One request's stream, as it arrives."""

    thoughts: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    calls: list[ScriptToolCall] = field(default_factory=list)
    stop: StopKind | None = None
    error: str | None = None

    def add(self, event: StreamEvent) -> None:
        match event:
            case ThoughtDelta(text):
                self.thoughts.append(text)
            case TextDelta(text):
                self.texts.append(text)
            case ToolCallReady(call):
                self.calls.append(ScriptToolCall(call.id, call.name, dict(call.arguments)))
            case Finish(stop):
                self.stop = stop
            case _:
                pass  # e.g. token usage: the script format has no place for it

    def line(self) -> ScriptLine:
        return ScriptLine(
            text=self.texts[0] if len(self.texts) == 1 else None,
            chunks=self.texts if len(self.texts) > 1 else None,
            thought="".join(self.thoughts) if self.thoughts else None,
            tool_calls=self.calls or None,
            stop_reason="max_tokens" if self.stop is StopKind.MAX_TOKENS else "end_turn",
            hang=self.stop is None and self.error is None,
            error=ScriptError(self.error) if self.error is not None else None,
        )


class ScriptSink:
    """The recorded lines, in request-start order, mirrored to ``path`` after every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.captures: list[StreamCapture] = []

    def open_request(self) -> StreamCapture:
        capture = StreamCapture()
        self.captures.append(capture)
        self.save()
        return capture

    def lines(self) -> list[ScriptLine]:
        return [capture.line() for capture in self.captures]

    def save(self) -> None:
        data = b"".join(_ENCODER.encode(line) + b"\n" for line in self.lines())
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_bytes(data)
        os.replace(partial, self.path)


class RecordingProvider:
    """``inner``, unchanged, with every stream captured into ``sink``."""

    def __init__(self, inner: ModelProvider, sink: ScriptSink) -> None:
        self.inner = inner
        self.sink = sink
        self.name = f"recording:{inner.name}"
        self.capabilities = ScriptModel.capabilities
        """The script model's, not ``inner``'s: the session recorded must behave as the one
        that replays it on the script model will (no title requests, no model selector, the
        process-wide window), or the replay would not see the same frames."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        capture = self.sink.open_request()
        try:
            async for event in self.inner.stream(request):
                capture.add(event)
                self.sink.save()
                yield event
        except ModelError as exc:
            capture.error = str(exc)
            raise
        finally:
            self.sink.save()
