"""``checkpoints/plan.py``: which files a restore puts back, and what it expects them to be, from
the journal alone."""

from __future__ import annotations

from acp_agent.checkpoints.plan import (
    Target,
    rewind_targets,
    undo_source,
    undo_targets,
    undo_turn,
    undone_turn,
)
from acp_agent.content import TextContent
from acp_agent.journal.events import Checkpoint, Entry, Event, ToolResult, UserMessage, source

ROOT = "/ws"


def result(turn: int, *checkpoints: Checkpoint) -> ToolResult:
    return ToolResult(turn, 1, f"c{turn}", [TextContent(text="ok")], False, checkpoints=checkpoints)


def undo(turn: int) -> UserMessage:
    return UserMessage("u", [TextContent(text="undone")], undo_source(turn))


def entries(*events: Event) -> list[Entry]:
    return [Entry(seq, 0, event) for seq, event in enumerate(events, 1)]


HISTORY = entries(
    result(1, Checkpoint(ROOT, "t0a", "t1a", ("a",))),
    result(2, Checkpoint(ROOT, "t1a'", "t2a", ("a",)), Checkpoint(ROOT, "t0b", "t2b", ("b",))),
    result(2, Checkpoint(ROOT, "t2a'", "t2a''", ("a",))),
    result(3, Checkpoint(ROOT, "t0c", "t3c", ("c",))),
)


def test_rewind_restores_every_file_from_the_turn_on_to_before_it() -> None:
    assert rewind_targets(HISTORY, 2) == [
        Target(ROOT, "a", "t1a'", "t2a''"),
        Target(ROOT, "b", "t0b", "t2b"),
        Target(ROOT, "c", "t0c", "t3c"),
    ]
    assert rewind_targets(HISTORY, 4) == []


def test_undo_takes_the_last_turn_then_goes_one_further_back() -> None:
    assert undo_turn(HISTORY) == 3
    assert undo_targets(HISTORY, 3) == [Target(ROOT, "c", "t0c", "t3c")]
    after = [*HISTORY, *entries(undo(3))]
    assert undo_turn(after) == 2
    assert undo_turn([*after, *entries(undo(2), undo(1))]) is None
    assert undo_turn([]) is None


def test_an_undone_turn_leaves_its_files_expected_as_before_it() -> None:
    after = [*HISTORY, *entries(undo(3))]
    (c,) = [t for t in rewind_targets(after, 3) if t.path == "c"]
    assert c == Target(ROOT, "c", "t0c", "t0c")  # nothing left to restore for c


def test_only_the_agents_undo_source_counts() -> None:
    assert undone_turn(undo_source(4)) == 4
    assert undone_turn(source("agent", name="other", turn=4)) is None
    assert undone_turn(source("client", name="undo", turn=4)) is None
    assert undone_turn(source("agent", name="undo", turn=True)) is None
