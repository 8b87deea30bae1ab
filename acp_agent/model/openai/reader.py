"""From SSE ``data`` payloads to ``StreamEvent``s: pure, no I/O (tests feed it strings).

- ``delta.content`` → ``TextDelta``; ``delta.reasoning_content`` (or ``reasoning``) →
  ``ThoughtDelta``, each at once, in arrival order. ``delta.refusal`` counts as text.
- ``delta.tool_calls`` are fragments keyed by ``index``: the first fragment of an index brings
  ``id`` and ``function.name``, later ones append to ``function.arguments``. Parallel calls
  interleave their fragments. The whole batch is emitted at the end of the stream, in index
  order, each call's arguments parsed as one JSON object.
- ``usage`` (the last chunk, with ``choices: []``) → ``Usage``.
- ``finish_reason``: ``stop`` / ``tool_calls`` / ``function_call`` → ``end_turn``, ``length`` →
  ``max_tokens``, ``content_filter`` → ``end_turn`` (logged); any other reason (DeepSeek's
  ``insufficient_system_resource`` …) fails the request.
- The stream is complete at ``[DONE]``, or at the end of the body once a ``finish_reason`` was
  seen. A body that ends before either is ``IncompleteStream``: the connection broke.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import msgspec
import structlog

from acp_agent.journal.events import ToolCallPart
from acp_agent.model.base import (
    Finish,
    ModelError,
    StopKind,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    Usage,
)
from acp_agent.model.openai.wire import CHUNK, Chunk, ChunkUsage, ToolCallDelta, error_text

log = structlog.get_logger("acp_agent.model")

DONE = "[DONE]"

_STOPS = {
    "stop": StopKind.END_TURN,
    "tool_calls": StopKind.END_TURN,
    "function_call": StopKind.END_TURN,
    "length": StopKind.MAX_TOKENS,
    "content_filter": StopKind.END_TURN,
}

_ARGUMENTS = msgspec.json.Decoder(dict[str, object])


class IncompleteStream(ModelError):
    """The body ended before ``[DONE]`` or a ``finish_reason``: the connection broke."""


@dataclass
class _PartialCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatStreamReader:
    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._calls: dict[int, _PartialCall] = {}
        self._last_index: int | None = None
        self._finish: str | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, data: str) -> list[StreamEvent]:
        """One SSE ``data`` payload; raises ``ModelError`` for an error or a broken chunk."""
        if self._done:
            return []
        if data.strip() == DONE:
            self._done = True
            return []
        try:
            chunk = CHUNK.decode(data)
        except msgspec.DecodeError as exc:
            raise ModelError(f"{self.provider}: unreadable stream chunk: {exc}") from exc
        return self._chunk(chunk)

    def end(self) -> list[StreamEvent]:
        """The body ended: the tool-call batch, then ``Finish``."""
        if not self._done and self._finish is None:
            raise IncompleteStream(
                f"{self.provider}: the connection closed before the answer was complete"
            )
        events: list[StreamEvent] = [ToolCallReady(call) for call in self._batch()]
        events.append(Finish(self._stop()))
        return events

    def _chunk(self, chunk: Chunk) -> list[StreamEvent]:
        if chunk.error is not None:
            raise ModelError(f"{self.provider} reported an error: {error_text(chunk.error)}")
        events: list[StreamEvent] = []
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                if thought := delta.reasoning_content or delta.reasoning:
                    events.append(ThoughtDelta(thought))
                if text := delta.content or delta.refusal:
                    events.append(TextDelta(text))
                for fragment in delta.tool_calls or ():
                    self._tool_fragment(fragment)
            if choice.finish_reason:
                self._finish = choice.finish_reason
        if chunk.usage is not None:
            events.append(usage_of(chunk.usage))
        return events

    def _tool_fragment(self, fragment: ToolCallDelta) -> None:
        index = fragment.index
        if index is None:  # some servers omit it: a new id opens a new call
            known = self._last_index is not None and fragment.id in (None, self._slot_id())
            index = self._last_index if known else len(self._calls)
        assert index is not None
        call = self._calls.setdefault(index, _PartialCall())
        self._last_index = index
        if fragment.id:
            call.id = fragment.id
        if fragment.function is not None:
            call.name += fragment.function.name or ""
            if fragment.function.arguments:
                call.arguments.append(fragment.function.arguments)

    def _slot_id(self) -> str | None:
        return None if self._last_index is None else self._calls[self._last_index].id

    def _batch(self) -> list[ToolCallPart]:
        return [self._assembled(self._calls[index]) for index in sorted(self._calls)]

    def _assembled(self, call: _PartialCall) -> ToolCallPart:
        call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
        text = "".join(call.arguments).strip() or "{}"
        try:
            arguments = _ARGUMENTS.decode(text)
        except msgspec.DecodeError as exc:
            raise ModelError(
                f"{self.provider}: the arguments of tool call {call_id} ({call.name}) "
                f"are not a JSON object: {exc}"
            ) from exc
        return ToolCallPart(call_id, call.name, arguments)

    def _stop(self) -> StopKind:
        reason = self._finish or "stop"
        stop = _STOPS.get(reason)
        if stop is None:
            raise ModelError(f"{self.provider} stopped the answer early: {reason}")
        if reason == "content_filter":
            log.warning("model_content_filtered", provider=self.provider)
        return stop


def usage_of(usage: ChunkUsage) -> Usage:
    details, prompt = usage.completion_tokens_details, usage.prompt_tokens_details
    cached = prompt.cached_tokens if prompt is not None else None
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        reasoning_tokens=details.reasoning_tokens if details is not None else None,
        cached_tokens=cached if cached is not None else usage.prompt_cache_hit_tokens,
    )
