"""Closing a turn that a crash left open. Pure: entries in, events to append out.

A journal whose last ``turn/start`` has no ``turn/end`` was cut off mid-turn. Loading it closes
that turn, so the invariant holds again and the model history stays well formed:

1. a synthetic error ``tool/result`` for every ``tool/call`` of the turn that has none, in call
   order, with the call's own turn and step;
2. ``step/end`` if a step is open;
3. ``turn/end {reason: {kind: "interrupted"}}``.

A trailing ``user/message`` after the last ``turn/end`` (or with no turn at all) is an idle
injection: committed history, not an interrupted turn. Nothing is repaired for it. The caller
appends the returned events with fresh seqs (and flushes them before serving the session).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import (
    Entry,
    Event,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
)

INTERRUPTED_TOOL_TEXT: Final = "interrupted: the agent stopped before this tool finished"


def interrupted_turn_repair(entries: Sequence[Entry]) -> list[Event]:
    """The events that close the journal's open turn; ``[]`` when no turn is open."""
    start = _open_turn_start(entries)
    if start is None:
        return []
    turn_events = [entry.event for entry in entries[start:]]
    turn = entries[start].event
    assert isinstance(turn, TurnStart)
    repair: list[Event] = [_interrupted_result(call) for call in _unanswered_calls(turn_events)]
    step = _open_step(turn_events)
    if step is not None:
        repair.append(StepEnd(turn=step.turn, step=step.step))
    repair.append(TurnEnd(turn=turn.turn, reason=TurnEndReason(kind=TurnEndKind.INTERRUPTED)))
    return repair


def _open_turn_start(entries: Sequence[Entry]) -> int | None:
    """The index of the last ``turn/start`` if no ``turn/end`` follows it."""
    for index in range(len(entries) - 1, -1, -1):
        event = entries[index].event
        if isinstance(event, TurnEnd):
            return None
        if isinstance(event, TurnStart):
            return index
    return None


def _unanswered_calls(events: Sequence[Event]) -> list[ToolCall]:
    answered = {e.call_id for e in events if isinstance(e, ToolResult)}
    return [e for e in events if isinstance(e, ToolCall) and e.call_id not in answered]


def _open_step(events: Sequence[Event]) -> StepStart | None:
    step: StepStart | None = None
    for event in events:
        if isinstance(event, StepStart):
            step = event
        elif isinstance(event, StepEnd):
            step = None
    return step


def _interrupted_result(call: ToolCall) -> ToolResult:
    content: list[ContentBlock] = [TextContent(text=INTERRUPTED_TOOL_TEXT)]
    return ToolResult(
        turn=call.turn, step=call.step, call_id=call.call_id, content=content, is_error=True
    )
