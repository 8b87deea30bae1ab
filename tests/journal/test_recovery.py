from __future__ import annotations

from pathlib import Path

from acp_agent.journal.events import (
    Event,
    SourceKind,
    StepEnd,
    StepStart,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
)
from acp_agent.journal.invariant import check
from acp_agent.journal.recovery import INTERRUPTED_TOOL_TEXT, interrupted_turn_repair
from acp_agent.journal.writer import JournalWriter

from .builders import (
    HEADER,
    assistant,
    blocks,
    call,
    journal_bytes,
    numbered,
    result,
    simple_turn,
    user,
    write_journal,
)

INTERRUPTED = TurnEnd(2, TurnEndReason(kind=TurnEndKind.INTERRUPTED))


def interrupted_result(turn: int, step: int, call_id: str) -> ToolResult:
    return ToolResult(turn, step, call_id, blocks(INTERRUPTED_TOOL_TEXT), True)


def open_tool_turn() -> list[Event]:
    """Turn 2 was cut off in its second step, while a batch of three tools ran."""
    return [
        *simple_turn(1),
        TurnStart(2),
        user("go"),
        StepStart(2, 1),
        assistant(2, 1, "", ["a"]),
        call(2, 1, "a"),
        result(2, 1, "a"),
        StepEnd(2, 1),
        StepStart(2, 2),
        assistant(2, 2, "three reads", ["c1", "c2", "c3"]),
        call(2, 2, "c1"),
        call(2, 2, "c2"),
        call(2, 2, "c3"),
        result(2, 2, "c1"),
    ]


def test_an_open_turn_gets_error_results_then_step_end_then_turn_end() -> None:
    entries = numbered(open_tool_turn())
    assert interrupted_turn_repair(entries) == [
        interrupted_result(2, 2, "c2"),
        interrupted_result(2, 2, "c3"),
        StepEnd(2, 2),
        INTERRUPTED,
    ]
    assert check(HEADER, entries, allow_open_tail=True) == []
    assert check(HEADER, numbered([*open_tool_turn(), *interrupted_turn_repair(entries)])) == []


def test_an_open_step_without_tools_is_ended() -> None:
    events = [
        *simple_turn(1),
        TurnStart(2),
        user("go"),
        StepStart(2, 1),
        assistant(2, 1, "partial"),
    ]
    assert interrupted_turn_repair(numbered(events)) == [StepEnd(2, 1), INTERRUPTED]


def test_a_turn_cut_between_steps_only_gets_its_turn_end() -> None:
    events = [
        *simple_turn(1),
        TurnStart(2),
        user("go"),
        StepStart(2, 1),
        StepEnd(2, 1),
        user("ctx", kind=SourceKind.HOOK),
    ]
    assert interrupted_turn_repair(numbered(events)) == [INTERRUPTED]


def test_a_turn_cut_before_its_first_step_is_closed_and_still_valid() -> None:
    events = [*simple_turn(1), TurnStart(2), user("go")]
    repair = interrupted_turn_repair(numbered(events))
    assert repair == [INTERRUPTED]
    assert check(HEADER, numbered([*events, *repair])) == []


def test_a_trailing_out_of_turn_user_message_is_committed_history() -> None:
    idle = user("injected while idle", kind=SourceKind.CLIENT)
    assert interrupted_turn_repair(numbered([*simple_turn(1), idle])) == []
    assert interrupted_turn_repair(numbered([idle, idle])) == []
    assert interrupted_turn_repair([]) == []
    assert check(HEADER, numbered([*simple_turn(1), idle])) == []


async def test_loading_an_interrupted_journal_then_appending_the_repair(sdir: Path) -> None:
    events = open_tool_turn()
    write_journal(sdir, journal_bytes(numbered(events)))
    writer, loaded = await JournalWriter.open(sdir)
    repair = interrupted_turn_repair(loaded.entries)
    for entry in numbered(repair, first_seq=writer.next_seq):
        writer.append(entry)
    await writer.close()
    writer, reloaded = await JournalWriter.open(sdir)
    await writer.close()
    assert [e.event for e in reloaded.entries] == [*events, *repair]
    assert interrupted_turn_repair(reloaded.entries) == []
    assert check(reloaded.header, reloaded.entries) == []
