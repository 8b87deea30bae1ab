"""``projection.project`` looks an event's projection up in a table by its type, and
``projection.replay`` runs the same table over a whole history (``session/load``). Both must
give what the translator gave when it was one ``match`` over the event (kept below as the
reference, as it was before the table): every event type, every content block kind, views,
errors, images, unknown events, compaction, live and on replay, for both kinds of client
(``acp/projection.py``; one translator for live updates and replays, ``style.md``)."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings, strategies as st

from acp_agent.acp import projection
from acp_agent.acp.schema import SessionUpdate
from acp_agent.content import ImageContent, TextContent
from acp_agent.journal.callids import client_id
from acp_agent.journal.events import (
    EVENT_TYPES,
    AssistantMessage,
    Compaction,
    CompactionReason,
    Entry,
    Event,
    SourceKind,
    SteeringMessage,
    StepEnd,
    StepStart,
    ThoughtPart,
    ToolCall,
    ToolResult,
    TurnStart,
    UnknownEvent,
    UserMessage,
    source_kind,
)
from acp_agent.tools.display import DiffView, PlanItem, PlanView, TerminalView, shown_as
from tests.journal.builders import assistant, call, end, error, result, steering, user
from tests.journal.test_format import EVERY_BLOCK


class Catalog:
    def present(self, name: str, arguments: dict[str, object]) -> tuple[str, str, list[str]]:
        path = arguments.get("path")
        return f"{name} {path}", "read", [f"/w/{path}"] if isinstance(path, str) else []


def reference(
    entry: Entry,
    catalog: Catalog,
    *,
    live: bool,
    compaction_updates: bool,
    names: projection.ToolNames,
) -> list[SessionUpdate]:
    """The translator as one ``match`` (before the table), from the same building blocks."""
    match entry.event:
        case UserMessage(id=message_id, content=content, source=src):
            if live and source_kind(src) == SourceKind.USER:
                return []
            return projection.user_chunks(message_id, content, src)
        case SteeringMessage(id=message_id, content=content, source=src):
            if live and source_kind(src) == SourceKind.USER:
                return []
            return projection.user_chunks(message_id, content, src)
        case AssistantMessage() as event:
            return [] if live else projection._assistant(event)
        case ToolCall() as event:
            return [projection._tool_call(event, catalog, names)]
        case ToolResult() as event:
            name = names.pop(client_id(event), None)
            return projection._tool_result(event, live=live, name=name)
        case Compaction() as event:
            return projection._compaction(event, live=live, updates=compaction_updates)
        case _:
            return []


POOL: list[Event] = [
    user("hi"),
    user("injected", kind=SourceKind.CLIENT),
    UserMessage("every-block", EVERY_BLOCK, {"kind": "session-ref", "sessionId": "s0"}),
    TurnStart(1),
    StepStart(1, 1),
    steering(1, "wait"),
    msgspec.structs.replace(
        assistant(1, 1, "text with \u2028 and é", ["c1"]),
        content=[ThoughtPart("hmm"), *assistant(1, 1, "text", ["c1"]).content],
    ),
    assistant(1, 2, "answer"),
    call(1, 1, "c1", {"path": "a.py", "n": [1, 2.5, None, True]}),
    msgspec.structs.replace(call(1, 1, "c1", {"path": "b.py"}), tool_call_id="c1#2"),
    result(1, 1, "c1"),
    result(1, 1, "c1", error=True),
    ToolResult(1, 1, "c1", [ImageContent(data="aGk=", mimeType="image/png")], False),
    ToolResult(1, 1, "c1", EVERY_BLOCK, False, "c1#2"),
    ToolResult(1, 1, "c1", [shown_as("Edited a.py", DiffView("/w/a.py", "new", "old"))], False),
    ToolResult(1, 1, "c1", [shown_as("$ ls", TerminalView("t1"))], False),
    ToolResult(1, 1, "c1", [shown_as("Plan", PlanView([PlanItem("a"), PlanItem("b")]))], True),
    ToolResult(1, 1, "c1", [TextContent(text="m", meta={"acp_agent": {"other": 1}})], False),
    error(1, 1),
    StepEnd(1, 1),
    end(1),
    Compaction("k1", [TextContent(text="summary")], 4, 5, CompactionReason.AUTO),
    UnknownEvent(type="future/thing", data=msgspec.Raw(b'{"x":1}')),
]


def wire(updates: list[SessionUpdate]) -> list[object]:
    return [msgspec.to_builtins(u) for u in updates]


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.sampled_from(POOL), max_size=40),
    live=st.booleans(),
    updates=st.booleans(),
)
def test_the_table_projects_every_history_as_the_match_did(
    picks: list[Event], live: bool, updates: bool
) -> None:
    entries = [Entry(i + 1, 1_700_000_000_000 + i, e) for i, e in enumerate(picks)]
    names: projection.ToolNames = {}
    ref_names: projection.ToolNames = {}
    for entry in entries:
        got = projection.project(
            entry, Catalog(), live=live, compaction_updates=updates, names=names
        )
        want = reference(entry, Catalog(), live=live, compaction_updates=updates, names=ref_names)
        assert wire(got) == wire(want)
        assert names == ref_names


@settings(max_examples=100, deadline=None)
@given(picks=st.lists(st.sampled_from(POOL), max_size=40), updates=st.booleans())
def test_replay_is_project_of_each_entry_on_replay(picks: list[Event], updates: bool) -> None:
    entries = [Entry(i + 1, 1_700_000_000_000 + i, e) for i, e in enumerate(picks)]
    names: projection.ToolNames = {}
    replayed = [
        u for us in projection.replay(entries, Catalog(), compaction_updates=updates) for u in us
    ]
    one_by_one = [
        u
        for entry in entries
        for u in projection.project(
            entry, Catalog(), live=False, compaction_updates=updates, names=names
        )
    ]
    assert wire(replayed) == wire(one_by_one)


def test_every_event_type_is_in_the_table_or_projects_to_nothing() -> None:
    """A new event type must be added to the table on purpose (``journal/events.py``'s list
    of what to change): these are the only ones with no update of their own."""
    silent = {"turn/start", "turn/end", "step/start", "step/end", "agent/error"}
    tabled = {str(name) for name, cls in EVENT_TYPES.items() if cls in projection._BY_TYPE}
    assert tabled | silent == {str(name) for name in EVENT_TYPES}
    assert not tabled & silent
