"""Building the transcript (``view.py``) from a journal's entries, once, for both renderers.

The build is one pass over the entries, after one pass that indexes the tool results, so a
session of any size costs time in proportion to its events. It is lenient like ``turns.py``: a
journal that breaks the invariant still renders (a turn left open shows as open, a second
``turn/start`` closes the turn before it). ``tick`` is called once per entry, for a progress bar.

A turn's usage is what its events say: model requests, tool calls, failed calls, its duration,
and the tokens (and cost) its assistant messages recorded, where the provider reported them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from acp_agent.export.view import (
    Compacted,
    Failure,
    Item,
    Message,
    Other,
    Said,
    Thought,
    ToolRun,
    Transcript,
    Turn,
    TurnItem,
    TurnUsage,
)
from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    Compaction,
    Entry,
    SessionHeader,
    SteeringMessage,
    StepStart,
    StepUsage,
    TextPart,
    ThoughtPart,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    UnknownEvent,
    UserMessage,
)
from acp_agent.tools.display import DiffView, view_of

_ResultKey = tuple[int, int, str]


def _client_id(event: ToolCall | ToolResult) -> str:
    return event.tool_call_id or event.call_id


def _key(event: ToolCall | ToolResult) -> _ResultKey:
    return (event.turn, event.step, _client_id(event))


def _results(entries: Iterable[Entry]) -> dict[_ResultKey, Entry]:
    found: dict[_ResultKey, Entry] = {}
    for entry in entries:
        if isinstance(entry.event, ToolResult):
            found.setdefault(_key(entry.event), entry)
    return found


@dataclass(slots=True)
class _OpenTurn:
    start: Entry
    number: int
    prompt: Message | None = None
    items: list[TurnItem] = field(default_factory=list)
    requests: int = 0
    tokens: StepUsage | None = None

    def close(self, end: Entry | None) -> Turn:
        reason = end.event.reason if end is not None and isinstance(end.event, TurnEnd) else None
        runs = [item for item in self.items if isinstance(item, ToolRun)]
        ended = end.time if end is not None else None
        usage = TurnUsage(
            requests=self.requests,
            tool_calls=len(runs),
            failed_calls=sum(1 for run in runs if run.is_error or run.result is None),
            duration_ms=None if ended is None else ended - self.start.time,
            tokens=self.tokens,
        )
        return Turn(
            number=self.number,
            seq=self.start.seq,
            started=self.start.time,
            ended=ended,
            reason="open" if reason is None else str(reason.kind),
            reason_message=None if reason is None else reason.message,
            prompt=self.prompt,
            items=tuple(self.items),
            usage=usage,
        )


def build(
    header: SessionHeader,
    entries: Sequence[Entry],
    *,
    title: str | None = None,
    tick: Callable[[], None] | None = None,
) -> Transcript:
    """The transcript of ``entries`` (``tick``: called once per entry)."""
    results = _results(entries)
    items: list[Item] = []
    turn: _OpenTurn | None = None
    for entry in entries:
        if tick is not None:
            tick()
        event = entry.event
        if isinstance(event, TurnStart):
            if turn is not None:  # a start with no end: the journal is not valid; show both
                items.append(turn.close(None))
            turn = _OpenTurn(entry, event.turn)
        elif isinstance(event, TurnEnd):
            if turn is not None:
                items.append(turn.close(entry))
            turn = None
        elif turn is None:
            items.extend(_between(entry))
        else:
            _into_turn(turn, entry, results)
    if turn is not None:
        items.append(turn.close(None))
    parent = None if header.parent is None else (header.parent.session_id, header.parent.seq)
    return Transcript(
        header.id, title, header.cwd, header.created_at, parent, tuple(items), len(entries)
    )


def _between(entry: Entry) -> list[Item]:
    event = entry.event
    if isinstance(event, UserMessage):
        return [_message(entry, event)]
    if isinstance(event, Compaction):
        summary = tuple(event.summary)
        return [Compacted(entry.seq, entry.time, str(event.reason), event.through_seq, summary)]
    if isinstance(event, UnknownEvent):
        return [_other(entry, event)]
    # anything else between turns breaks the invariant; still shown, as its JSON
    return [Other(entry.seq, entry.time, entry.type, _json(event))]


def _into_turn(turn: _OpenTurn, entry: Entry, results: dict[_ResultKey, Entry]) -> None:
    event = entry.event
    match event:
        case UserMessage():
            message = _message(entry, event)
            if turn.prompt is None and not turn.items and message.kind == "user":
                turn.prompt = message
            else:
                turn.items.append(message)
        case SteeringMessage():
            content = tuple(event.content)
            turn.items.append(Message(entry.seq, entry.time, event.source, content, steering=True))
        case StepStart():
            turn.requests += 1
        case AssistantMessage(usage=used):
            turn.items.extend(_assistant(entry, event))
            if used is not None:
                turn.tokens = used if turn.tokens is None else turn.tokens.plus(used)
        case ToolCall():
            turn.items.append(_tool_run(entry, event, results.get(_key(event))))
        case AgentError():
            turn.items.append(Failure(entry.seq, entry.time, event.error.message))
        case UnknownEvent():
            turn.items.append(_other(entry, event))
        case ToolResult():
            if results.get(_key(event)) is not entry:  # a second result for one call: show it
                turn.items.append(Other(entry.seq, entry.time, entry.type, _json(event)))
        case _:
            pass  # step/end, and a compaction inside a turn (which no valid journal has)


def _message(entry: Entry, event: UserMessage) -> Message:
    return Message(entry.seq, entry.time, event.source, tuple(event.content))


def _assistant(entry: Entry, event: AssistantMessage) -> list[TurnItem]:
    parts: list[TurnItem] = []
    for part in event.content:
        if isinstance(part, TextPart) and part.text:
            parts.append(Said(entry.seq, entry.time, part.text))
        elif isinstance(part, ThoughtPart) and part.text:
            parts.append(Thought(entry.seq, entry.time, part.text))
    return parts  # tool-call parts: each has its own tool/call event


def _tool_run(entry: Entry, call: ToolCall, found: Entry | None) -> ToolRun:
    result = found.event if found is not None else None
    assert result is None or isinstance(result, ToolResult)
    content = None if result is None else tuple(result.content)
    diffs = tuple(v for b in content or () if isinstance(v := view_of(b), DiffView))
    return ToolRun(
        seq=entry.seq,
        time=entry.time,
        call_id=_client_id(call),
        name=call.name,
        arguments=call.arguments,
        result=content,
        is_error=result is not None and result.is_error,
        diffs=diffs,
        finished=None if found is None else found.time,
    )


def _other(entry: Entry, event: UnknownEvent) -> Other:
    return Other(entry.seq, entry.time, event.type, bytes(event.data).decode("utf-8", "replace"))


def _json(event: object) -> str:
    return msgspec.json.encode(event).decode()
