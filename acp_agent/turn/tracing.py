"""One session's spans (``acp_agent/telemetry``): its turns, their model requests and tool calls.

The actor tells ``TurnTrace`` what it appends and what it starts; the machine knows nothing of
it. A ``turn`` span opens with the journal's ``turn/start`` and ends with its ``turn/end``;
``model.request`` and ``tool.call`` are its children, and what the turn drains in (an
injection, a hook's context, steering, a compaction) is an event on it. An injection appended
while no turn is open has no span to go on: it gets one of its own, ``injection``, that starts
and ends with it. A session run as a subagent has the ``subagent`` span as its turns' parent
(``parent``: ``telemetry.current()`` when the actor was made, inside the ``agent`` call).

While traces are off every span is ``telemetry.NO_SPAN`` and ``appended`` returns at once; a
model stream is watched for its first token only when its span records (``first_token``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from acp_agent import telemetry
from acp_agent.journal.events import (
    Compaction,
    Event,
    Source,
    SourceKind,
    SteeringMessage,
    ToolCallPart,
    TurnEnd,
    TurnEndKind,
    TurnStart,
    UserMessage,
    source_kind,
)
from acp_agent.model.base import StreamEvent, TextDelta, ThoughtDelta, ToolCallReady, Usage
from acp_agent.telemetry import NO_SPAN, SESSION_ID, Attributes, EventName, Span, SpanName
from acp_agent.turn.parts import aclose_stream
from acp_agent.turn.toolrun import ToolRunOutcome
from acp_agent.turn.vocabulary import ModelStop, TurnUsage

TURN_NUMBER = "turn.number"
STEP = "turn.step"
SOURCE_KIND = "source.kind"
MODEL = "gen_ai.request.model"
OPERATION = "gen_ai.operation.name"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning_tokens"
CACHED_TOKENS = "gen_ai.usage.cached_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
FIRST_TOKEN_MS = "gen_ai.response.time_to_first_token_ms"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_STATUS = "tool.status"
END_REASON = "turn.end_reason"

_CONTENT = (TextDelta, ThoughtDelta, ToolCallReady)


class TurnTrace:
    def __init__(self, session_id: str, parent: Span) -> None:
        self.session_id = session_id
        self.parent = parent
        self.turn: Span = NO_SPAN

    def appended(self, event: Event, usage: TurnUsage | None) -> None:
        """The actor appended ``event``; ``usage``: the open turn's so far."""
        if not telemetry.enabled():
            return
        match event:
            case TurnStart(turn=number):
                attributes: Attributes = {SESSION_ID: self.session_id, TURN_NUMBER: number}
                self.turn = telemetry.start(SpanName.TURN, attributes, self.parent)
            case TurnEnd(reason=reason):
                self._end_turn(reason.kind, reason.message, usage)
            case UserMessage(source=src) if source_kind(src) != SourceKind.USER:
                self._injected(EventName.INJECTION, src)
            case SteeringMessage(source=src):
                self.turn.event(EventName.STEERING, _source_attributes(src))
            case Compaction(reason=reason):
                self.turn.event(EventName.COMPACTION, {"compaction.reason": str(reason)})
            case _:
                pass

    def _injected(self, name: EventName, src: Source) -> None:
        attributes = _source_attributes(src)
        if self.turn.recording:
            self.turn.event(name, attributes)
            return
        alone = telemetry.start(
            SpanName.INJECTION, {SESSION_ID: self.session_id, **attributes}, self.parent
        )
        alone.end()

    def _end_turn(self, kind: TurnEndKind, message: str | None, usage: TurnUsage | None) -> None:
        span, self.turn = self.turn, NO_SPAN
        span.set({END_REASON: str(kind), **(_usage_attributes(usage) if usage else {})})
        if kind is TurnEndKind.ERROR:
            span.fail(message or "the turn failed")
        span.end()

    def model_request(self, model: str, turn: int, step: int) -> Span:
        attributes: Attributes = {
            SESSION_ID: self.session_id,
            OPERATION: "chat",
            MODEL: model,
            TURN_NUMBER: turn,
            STEP: step,
        }
        return self.turn.child(SpanName.MODEL_REQUEST, attributes)

    def tool_call(self, call: ToolCallPart) -> Span:
        attributes = {SESSION_ID: self.session_id, TOOL_NAME: call.name, TOOL_CALL_ID: call.id}
        return self.turn.child(SpanName.TOOL_CALL, attributes)


def counted(span: Span, usage: Usage) -> None:
    span.set(_usage_attributes(usage))


def finished(span: Span, stop: ModelStop) -> None:
    span.set({FINISH_REASONS: (str(stop),)})


def tool_ended(span: Span, outcome: ToolRunOutcome | None) -> None:
    """``outcome`` None: the run was cancelled (or raised)."""
    status = "cancelled" if outcome is None else "error" if outcome.is_error else "ok"
    span.set({TOOL_STATUS: status})
    if outcome is not None and outcome.is_error:
        span.fail("the tool answered with an error")
    span.end()


def first_token(events: AsyncIterator[StreamEvent], span: Span) -> AsyncIterator[StreamEvent]:
    """``events``, noting on ``span`` how long the first text, thought or call took."""
    return _timed(events, span) if span.recording else events


async def _timed(events: AsyncIterator[StreamEvent], span: Span) -> AsyncIterator[StreamEvent]:
    started = time.monotonic()
    try:
        async for item in events:
            if isinstance(item, _CONTENT):
                span.set({FIRST_TOKEN_MS: round((time.monotonic() - started) * 1000, 1)})
                yield item
                break
            yield item
        async for item in events:
            yield item
    finally:
        await aclose_stream(events)


def _usage_attributes(usage: Usage | TurnUsage) -> Attributes:
    counts = {INPUT_TOKENS: usage.input_tokens, OUTPUT_TOKENS: usage.output_tokens}
    if usage.reasoning_tokens is not None:
        counts[REASONING_TOKENS] = usage.reasoning_tokens
    if usage.cached_tokens is not None:
        counts[CACHED_TOKENS] = usage.cached_tokens
    return counts


def _source_attributes(src: Source) -> Attributes:
    """The source tag: its kind, and its other scalar fields as ``source.<field>``."""
    attributes: dict[str, str | int | float | bool] = {SOURCE_KIND: source_kind(src)}
    for key, value in src.items():
        if key != "kind" and isinstance(value, str | int | float | bool):
            attributes[f"source.{key}"] = value
    return attributes
