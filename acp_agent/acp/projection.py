"""The one translator from session history to ACP ``session/update`` payloads.

Live streaming and ``session/load`` replay both go through ``project``, so the two can never
disagree about how an event looks on the wire. The only difference is ``live``: while a turn
runs, assistant text arrives as streamed deltas (``text_chunk`` / ``thought_chunk``) instead of
from the finished ``assistant/message``, and direct prompts are not echoed back to the client
that sent them. Every ``user/message`` whose source is not ``user`` is reported live, one
``user_message_chunk`` per content block, tagged with ``_meta.acp_agent.source``.

A ``session/compaction`` event reaches a client that advertised ``session.compaction`` as a
``compaction_update`` (``completed``, with the summary), live and on replay; its start, failure or
cancellation comes from ``compaction_progress``. Other clients get nothing live (ACP forbids them
the compaction updates) and, on replay, the summary as ``agent_message_chunk``s tagged
``_meta.acp_agent.compaction`` — so the user can always see what was summarized. Both carry
``{id, reason, throughSeq, keptFromSeq}`` in ``_meta.acp_agent.compaction``.

A tool call is known to the client by its client id (``toolCallId``; ``journal/callids.py``):
the model's ``callId``, or the unique id the journal gave a call whose model reused an id. The
entry carries it, so live updates and replays agree; a running call's updates (``in_progress``,
views, permission requests) get it from the actor, which hands tools the call under that id.

Every ``tool_call`` carries the tool's ``name``, and so does every ``tool_call_update``: a
running call's from the call the actor hands over, a result's from its call, which the caller's
``names`` (one per session: ``ToolNames``) remembers from the ``tool_call`` until the result.

A tool result block carrying a view (``tools/display.py``) becomes richer tool-call content: a
``diff`` item next to its text; a ``terminal`` item live (the text on replay, the terminal being
long released); a ``plan`` update after the tool call's final update.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from acp_agent.acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    CompactionUpdate,
    PlanEntry,
    PlanUpdate,
    SessionUpdate,
    ToolCallContent,
    ToolCallContentItem,
    ToolCallDiff,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallTerminal,
    UnstructuredCommandInput,
    UserMessageChunk,
)
from acp_agent.commands.words import SlashCommand
from acp_agent.content import ContentBlock, JsonObject, TextContent
from acp_agent.journal.callids import client_id
from acp_agent.journal.events import (
    AssistantMessage,
    Compaction,
    Entry,
    Event,
    Source,
    SourceKind,
    SteeringMessage,
    TextPart,
    ThoughtPart,
    ToolCall,
    ToolResult,
    UserMessage,
    source_kind,
)
from acp_agent.tools.display import (
    ChildView,
    DiffView,
    PlanView,
    TerminalView,
    View,
    view_of,
    without_view,
)
from acp_agent.turn.compaction import CompactionProgress


class ToolCatalog(Protocol):
    """What the projection needs to know about a tool to present a call."""

    def present(self, name: str, arguments: dict[str, object]) -> tuple[str, str, list[str]]:
        """(title, ACP kind, location paths)"""
        ...


def source_meta(src: Source) -> dict[str, object]:
    return {"acp_agent": {"source": src}}


def user_chunks(message_id: str, content: list[ContentBlock], src: Source) -> list[SessionUpdate]:
    meta = source_meta(src)
    return [UserMessageChunk(block, message_id, meta) for block in content]


def text_chunk(message_id: str, text: str) -> SessionUpdate:
    return AgentMessageChunk(TextContent(text=text), message_id)


def thought_chunk(message_id: str, text: str) -> SessionUpdate:
    return AgentThoughtChunk(TextContent(text=text), message_id)


ToolNames = dict[str, str]
"""A session's tool names by ``toolCallId``, of the calls whose result is still to come."""


def tool_in_progress(call_id: str, name: str | None = None) -> SessionUpdate:
    return ToolCallProgress(call_id, name, status="in_progress")


def _tool_call(event: ToolCall, catalog: ToolCatalog, names: ToolNames) -> SessionUpdate:
    title, kind, paths = catalog.present(event.name, event.arguments)
    locations = [ToolCallLocation(path) for path in paths] or None
    call_id = client_id(event)
    names[call_id] = event.name
    return ToolCallStart(
        call_id,
        title,
        kind,
        "pending",
        event.name,
        locations=locations,
        raw_input=event.arguments,
    )


def _tool_result(event: ToolResult, *, live: bool, name: str | None) -> list[SessionUpdate]:
    content: list[ToolCallContent] = []
    plans: list[SessionUpdate] = []
    meta: JsonObject | None = None
    for block in event.content:
        view = view_of(block)
        if view is None or not isinstance(block, TextContent):
            content.append(ToolCallContentItem(block))
            continue
        text = ToolCallContentItem(without_view(block))
        match view:
            case DiffView():
                content += [view_content(view), text]
            case TerminalView():
                content.append(view_content(view) if live else text)
            case PlanView():
                content.append(text)
                plans.append(plan_update(view))
            case ChildView():
                content.append(text)
                meta = child_meta(view)
    status = "failed" if event.is_error else "completed"
    progress = ToolCallProgress(client_id(event), name, status, content, meta)
    return [progress, *plans]


def view_content(view: DiffView | TerminalView) -> ToolCallContent:
    match view:
        case DiffView(path=path, new_text=new_text, old_text=old_text):
            return ToolCallDiff(path, new_text, old_text)
        case TerminalView(terminal_id=terminal_id):
            return ToolCallTerminal(terminal_id)


def plan_update(view: PlanView) -> SessionUpdate:
    return PlanUpdate([PlanEntry(e.content, str(e.priority), str(e.status)) for e in view.entries])


def child_meta(view: ChildView) -> JsonObject:
    return {"acp_agent": {"childSessionId": view.session_id}}


def tool_views(call_id: str, views: list[View], name: str | None = None) -> SessionUpdate:
    """A running call shows ``views`` (a client terminal, at once, before it is released; the
    child session of a subagent, as soon as it exists)."""
    content = [view_content(v) for v in views if isinstance(v, DiffView | TerminalView)]
    child = next((child_meta(v) for v in views if isinstance(v, ChildView)), None)
    return ToolCallProgress(call_id, name, content=content or None, meta=child)


def tool_output(call_id: str, text: str) -> SessionUpdate:
    """A running call's output so far (a local command's tail), replacing its card's content;
    its final result replaces it in turn. Live only: the journal keeps the result."""
    return ToolCallProgress(call_id, content=[ToolCallContentItem(TextContent(text=text))])


def _assistant(event: AssistantMessage) -> list[SessionUpdate]:
    updates: list[SessionUpdate] = []
    for part in event.content:
        if isinstance(part, TextPart):
            updates.append(text_chunk(event.id, part.text))
        elif isinstance(part, ThoughtPart):
            updates.append(thought_chunk(event.id, part.text))
    return updates


def available_commands(commands: Sequence[SlashCommand]) -> SessionUpdate:
    """``commands`` (``commands/words.py``: the built-ins, then the skills); one with no hint
    takes no input."""
    return AvailableCommandsUpdate(
        [
            AvailableCommand(
                str(c.name), c.description, UnstructuredCommandInput(c.hint) if c.hint else None
            )
            for c in commands
        ]
    )


_PROGRESS_STATUS: dict[CompactionProgress, str] = {
    CompactionProgress.STARTED: "in_progress",
    CompactionProgress.FAILED: "failed",
    CompactionProgress.CANCELLED: "cancelled",
}


def compaction_progress(
    compaction_id: str, progress: CompactionProgress, error: str | None
) -> SessionUpdate:
    """For clients with the ``session.compaction`` capability only."""
    return CompactionUpdate(compaction_id, _PROGRESS_STATUS[progress], error=error)


def _compaction(event: Compaction, *, live: bool, updates: bool) -> list[SessionUpdate]:
    about = {
        "id": event.id,
        "reason": str(event.reason),
        "throughSeq": event.through_seq,
        "keptFromSeq": event.kept_from_seq,
    }
    meta: dict[str, object] = {"acp_agent": {"compaction": about}}
    if updates:
        return [CompactionUpdate(event.id, "completed", summary=event.summary, meta=meta)]
    if live:
        return []
    return [AgentMessageChunk(block, event.id, meta) for block in event.summary]


def project(
    entry: Entry,
    catalog: ToolCatalog,
    *,
    live: bool,
    compaction_updates: bool = False,
    names: ToolNames | None = None,
) -> list[SessionUpdate]:
    """``compaction_updates``: the client advertised ``session.compaction``. ``names``: the
    session's ``ToolNames`` (a call's name is added, a result's taken out)."""
    names = {} if names is None else names
    how = _BY_TYPE.get(type(entry.event))
    return [] if how is None else how(entry.event, catalog, live, compaction_updates, names)


def replay(
    entries: Iterable[Entry],
    catalog: ToolCatalog,
    *,
    compaction_updates: bool = False,
    names: ToolNames | None = None,
) -> Iterator[list[SessionUpdate]]:
    """``project(entry, live=False)`` of each entry in turn (``session/load``), without the
    per-entry call: the same table, looked up in one loop."""
    names = {} if names is None else names
    by_type = _BY_TYPE
    for entry in entries:
        event = entry.event
        how = by_type.get(type(event))
        if how is not None:
            yield how(event, catalog, False, compaction_updates, names)


def replay_numbered(
    entries: Iterable[Entry],
    catalog: ToolCatalog,
    *,
    compaction_updates: bool = False,
    names: ToolNames | None = None,
) -> Iterator[tuple[int, list[SessionUpdate]]]:
    """``replay`` with each entry's ``seq`` (``cursor.py`` numbers the updates by it); the
    entries that project to nothing are left out."""
    names = {} if names is None else names
    by_type = _BY_TYPE
    for entry in entries:
        event = entry.event
        how = by_type.get(type(event))
        if how is not None:
            updates = how(event, catalog, False, compaction_updates, names)
            if updates:
                yield entry.seq, updates


# -- the table: one function per projected event type, (event, catalog, live, compaction
# updates, names) -> updates; an event type without one projects to nothing ----------------


def _user(
    event: UserMessage | SteeringMessage,
    catalog: ToolCatalog,
    live: bool,
    compaction_updates: bool,
    names: ToolNames,
) -> list[SessionUpdate]:
    if live and source_kind(event.source) == SourceKind.USER:
        return []
    return user_chunks(event.id, event.content, event.source)


def _assistant_message(
    event: AssistantMessage,
    catalog: ToolCatalog,
    live: bool,
    compaction_updates: bool,
    names: ToolNames,
) -> list[SessionUpdate]:
    return [] if live else _assistant(event)


def _tool_call_update(
    event: ToolCall, catalog: ToolCatalog, live: bool, compaction_updates: bool, names: ToolNames
) -> list[SessionUpdate]:
    return [_tool_call(event, catalog, names)]


def _tool_result_updates(
    event: ToolResult,
    catalog: ToolCatalog,
    live: bool,
    compaction_updates: bool,
    names: ToolNames,
) -> list[SessionUpdate]:
    return _tool_result(event, live=live, name=names.pop(client_id(event), None))


def _compaction_updates(
    event: Compaction,
    catalog: ToolCatalog,
    live: bool,
    compaction_updates: bool,
    names: ToolNames,
) -> list[SessionUpdate]:
    return _compaction(event, live=live, updates=compaction_updates)


_Projection = Callable[[Any, ToolCatalog, bool, bool, ToolNames], list[SessionUpdate]]
_BY_TYPE: dict[type[Event], _Projection] = {
    UserMessage: _user,
    SteeringMessage: _user,
    AssistantMessage: _assistant_message,
    ToolCall: _tool_call_update,
    ToolResult: _tool_result_updates,
    Compaction: _compaction_updates,
}
