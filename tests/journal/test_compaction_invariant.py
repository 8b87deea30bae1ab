"""``session/compaction`` in the invariant: standalone between turns only, cutting between turns."""

from __future__ import annotations

from pathlib import Path

from acp_agent.journal import invariant
from acp_agent.journal.events import (
    Compaction,
    CompactionReason,
    Event,
    EventType,
    SourceKind,
    StepEnd,
    StepStart,
    TurnStart,
)
from acp_agent.journal.format import decode_entry, encode_entry
from acp_agent.journal.invariant import Scope, check_file

from .builders import (
    HEADER,
    assistant,
    blocks,
    journal_bytes,
    numbered,
    simple_turn,
    tool_turn,
    user,
    write_journal,
)
from .test_invariant import problems


def compaction(kept_from: int, through: int | None = None) -> Compaction:
    through = kept_from - 1 if through is None else through
    return Compaction("c1", blocks("summary"), through, kept_from, CompactionReason.MANUAL)


def test_compaction_is_declared_standalone_between_turns_only() -> None:
    assert EventType.COMPACTION in invariant.STANDALONE_TYPES
    assert invariant.scope_of(EventType.COMPACTION) is Scope.BETWEEN_TURNS


def test_a_compaction_between_turns_passes() -> None:
    # turn 1 is seqs 1-6; the cut keeps turn 2 (seq 7 on); the compaction lands after it.
    events: list[Event] = [*simple_turn(1), *simple_turn(2), compaction(7), *simple_turn(3)]
    assert problems(events) == []


def test_a_compaction_inside_a_turn_is_a_violation() -> None:
    events: list[Event] = [TurnStart(1), user("go"), StepStart(1, 1), compaction(1)]
    assert problems([*events, assistant(1, 1), StepEnd(1, 1)], allow_open_tail=True) == [
        "seq 4: session/compaction while turn 1 is open"
    ]


def test_a_compaction_after_out_of_turn_messages_passes_and_may_keep_them() -> None:
    tail = [user("ctx", kind=SourceKind.CLIENT), user("more", kind=SourceKind.PLUGIN)]
    summarize_all = compaction(9)  # everything before the compaction (seq 9) is summarized
    keep_tail = compaction(7)  # the two out-of-turn messages (seqs 7, 8) are kept verbatim
    assert problems([*simple_turn(1), *tail, summarize_all]) == []
    assert problems([*simple_turn(1), *tail, keep_tail]) == []


def test_the_cut_may_not_fall_inside_a_turn() -> None:
    # tool_turn(1) is seqs 1-13; a cut at seq 8 would part tool results from their turn.
    events: list[Event] = [*tool_turn(1, ["a", "b"]), compaction(8)]
    assert problems(events) == ["seq 14: compaction cuts turn 1 (keptFromSeq 8 is inside it)"]


def test_kept_from_follows_through_and_is_not_in_the_future() -> None:
    assert problems([*simple_turn(1), compaction(7, through=3)]) == [
        "seq 7: compaction keptFromSeq 7 does not follow throughSeq 3"
    ]
    assert problems([*simple_turn(1), compaction(9)]) == [
        "seq 7: compaction keeps from seq 9, after the compaction itself"
    ]


def test_each_compaction_moves_the_cut_forward() -> None:
    first = [*simple_turn(1), *simple_turn(2), compaction(7)]  # compaction at seq 13
    assert problems([*first, *simple_turn(3), compaction(14)]) == []
    assert problems([*first, *simple_turn(3), compaction(7)]) == [
        "seq 20: compaction keeps from seq 7, not after the last cut (7)"
    ]
    assert problems([compaction(1)]) == [
        "seq 1: compaction keeps from seq 1, not after the last cut (1)"
    ]


def test_the_event_round_trips_with_camel_case_keys(tmp_path: Path) -> None:
    (entry,) = numbered([compaction(7)], first_seq=7)
    line = encode_entry(entry)
    assert b'"type":"session/compaction"' in line
    assert b'"throughSeq":6,"keptFromSeq":7,"reason":"manual"' in line
    assert decode_entry(line) == entry
    events: list[Event] = [*simple_turn(1), compaction(7)]
    path = write_journal(tmp_path / "s1", journal_bytes(numbered(events), HEADER))
    assert check_file(path) == []
