"""Closing a turn that a crash left open. Pure: entries in, events to append out.

A journal whose last ``turn/start`` has no ``turn/end`` (``turns.open_turn``) was cut off
mid-turn. Loading it closes that turn, so the invariant holds again and the model history stays
well formed:

1. a synthetic error ``tool/result`` for every ``tool/call`` of the turn that has none (in its
   own step: a model may reuse an id in the next step), in call order, with the call's own turn,
   step and client id (``toolCallId``, ``callids.py``);
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
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
)
from acp_agent.journal.turns import open_step, open_turn, open_turn_events

INTERRUPTED_TOOL_TEXT: Final = "interrupted: the agent stopped before this tool finished"


def interrupted_turn_repair(entries: Sequence[Entry]) -> list[Event]:
    """The events that close the journal's open turn; ``[]`` when no turn is open."""
    turn = open_turn(entries)
    if turn is None:
        return []
    turn_events = open_turn_events(entries)
    repair: list[Event] = [_interrupted_result(call) for call in _unanswered_calls(turn_events)]
    step = open_step(turn_events)
    if step is not None:
        repair.append(StepEnd(turn=step.turn, step=step.step))
    repair.append(TurnEnd(turn=turn.turn, reason=TurnEndReason(kind=TurnEndKind.INTERRUPTED)))
    return repair


def _unanswered_calls(events: Sequence[Event]) -> list[ToolCall]:
    """A call is answered by a result of its own step: a model may reuse its ids across steps."""
    answered = {(e.step, e.call_id) for e in events if isinstance(e, ToolResult)}
    return [e for e in events if isinstance(e, ToolCall) and (e.step, e.call_id) not in answered]


def _interrupted_result(call: ToolCall) -> ToolResult:
    content: list[ContentBlock] = [TextContent(text=INTERRUPTED_TOOL_TEXT)]
    return ToolResult(call.turn, call.step, call.call_id, content, True, call.tool_call_id)
