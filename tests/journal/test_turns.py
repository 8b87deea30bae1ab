"""The turn grammar (``journal/turns.py``): open turns, spans, stable boundaries, cuts."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings, strategies as st

from acp_agent.journal.events import (
    Compaction,
    CompactionReason,
    Entry,
    Event,
    SourceKind,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnEndKind,
    TurnStart,
)
from acp_agent.journal.invariant import check
from acp_agent.journal.recovery import interrupted_turn_repair
from acp_agent.journal.turns import (
    TurnSpan,
    enclosing_turns,
    last_stable_boundary,
    last_turn,
    open_step,
    open_turn,
    open_turn_events,
    span_open_at,
    spans,
    stable_boundaries,
    turn_starts,
)
from acp_agent.session.crossref import stable_prefix

from .builders import HEADER, assistant, blocks, end, numbered, simple_turn, tool_turn, user

# -- well-formed journals -----------------------------------------------------------------------

PIECES = ["idle", "compaction", "turn", "tool-turn", "interrupted"]


def _piece(kind: str, turn: int, seq: int) -> list[Event]:
    """The events of one piece of a journal, its first at ``seq``, numbered ``turn`` if a turn."""
    if kind == "idle":
        return [user(f"idle {seq}", kind=SourceKind.CLIENT)]
    if kind == "compaction":  # keeps the history from itself on: always between turns
        return [Compaction(f"c{seq}", blocks("summary"), seq - 1, seq, CompactionReason.MANUAL)]
    if kind == "interrupted":  # a crash before the first step
        return [TurnStart(turn), user(f"prompt {turn}"), end(turn, TurnEndKind.INTERRUPTED)]
    return simple_turn(turn) if kind == "turn" else tool_turn(turn, [f"c{turn}a", f"c{turn}b"])


@st.composite
def journals(draw: st.DrawFn) -> list[Entry]:
    """A journal that passes the invariant (its last turn possibly still open)."""
    events: list[Event] = []
    turns = 0
    for kind in draw(st.lists(st.sampled_from(PIECES), max_size=10)):
        if kind == "compaction" and not events:
            continue  # a cut must come after the first seq
        turns += kind not in ("idle", "compaction")
        events += _piece(kind, turns, len(events) + 1)
    if draw(st.booleans()):
        live = tool_turn(turns + 1, ["t1", "t2"])
        events += live[: draw(st.integers(1, len(live) - 1))]
    return numbered(events)


@settings(max_examples=100, deadline=None)
@given(journals())
def test_the_generated_journals_pass_the_invariant(entries: list[Entry]) -> None:
    assert check(HEADER, entries, allow_open_tail=True) == []
    assert len(check(HEADER, entries)) == (0 if open_turn(entries) is None else 1)


# -- properties ---------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(journals())
def test_spans_pair_up_in_order_and_only_the_last_is_open(entries: list[Entry]) -> None:
    found = spans(entries)
    assert [span.turn for span in found] == list(range(1, len(found) + 1))
    for span in found:
        assert entries[span.start_seq - 1].event == TurnStart(span.turn)
        if span.end_seq is not None:
            closing = entries[span.end_seq - 1].event
            assert isinstance(closing, TurnEnd) and closing.turn == span.turn
    assert all(not span.is_open for span in found[:-1])
    for earlier, later in pairwise(found):
        assert earlier.end_seq is not None and earlier.end_seq < later.start_seq


@settings(max_examples=200, deadline=None)
@given(journals())
def test_every_seq_is_a_boundary_or_inside_exactly_one_turn(entries: list[Entry]) -> None:
    boundaries = stable_boundaries(entries)
    found = spans(entries)
    for seq in range(len(entries) + 1):
        inside = [span for span in found if span.is_open_after(seq)]
        assert len(inside) == (0 if seq in boundaries else 1)
        assert span_open_at(entries, seq) == (inside[0] if inside else None)


@settings(max_examples=200, deadline=None)
@given(journals())
def test_turn_ends_are_boundaries_and_turn_starts_never(entries: list[Entry]) -> None:
    boundaries = stable_boundaries(entries)
    assert 0 in boundaries
    for entry in entries:
        if isinstance(entry.event, TurnEnd):
            assert entry.seq in boundaries
        if isinstance(entry.event, TurnStart):
            assert entry.seq not in boundaries
    assert last_stable_boundary(entries) == max(boundaries)


@settings(max_examples=200, deadline=None)
@given(journals())
def test_a_cut_is_clear_of_turns_exactly_after_a_boundary(entries: list[Entry]) -> None:
    boundaries = stable_boundaries(entries)
    found = spans(entries)
    for cut in range(1, len(entries) + 2):
        assert any(span.splits(cut) for span in found) == (cut - 1 not in boundaries)
    closed = [span for span in found if not span.is_open]
    assert not any(span.splits(cut) for span in closed for cut in turn_starts(entries))


@settings(max_examples=200, deadline=None)
@given(journals())
def test_enclosing_turns_are_the_spans_inclusive(entries: list[Entry]) -> None:
    found = spans(entries)
    for entry, turn in zip(entries, enclosing_turns(entries), strict=True):
        holding = [s.turn for s in found if s.start_seq <= entry.seq <= (s.end_seq or entry.seq)]
        assert holding == ([] if turn is None else [turn])


@settings(max_examples=200, deadline=None)
@given(journals())
def test_the_open_turn_is_the_last_span_if_open(entries: list[Entry]) -> None:
    found = spans(entries)
    expected = found[-1] if found and found[-1].is_open else None
    assert open_turn(entries) == expected
    assert last_turn(entries) == len(found)
    assert turn_starts(entries) == [span.start_seq for span in found]
    if expected is None:
        assert open_turn_events(entries) == []
    else:
        assert open_turn_events(entries) == [e.event for e in entries[expected.start_seq - 1 :]]


@settings(max_examples=200, deadline=None)
@given(journals())
def test_a_snapshot_and_a_repaired_journal_end_between_turns(entries: list[Entry]) -> None:
    prefix = stable_prefix(entries)
    assert open_turn(prefix) is None
    assert len(prefix) == last_stable_boundary(entries)
    repaired = entries + numbered(interrupted_turn_repair(entries), len(entries) + 1)
    assert open_turn(repaired) is None
    assert check(HEADER, repaired) == []


# -- examples -----------------------------------------------------------------------------------


def test_an_empty_history_has_no_turn() -> None:
    assert spans([]) == []
    assert stable_boundaries([]) == {0}
    assert open_turn([]) is None
    assert last_turn([]) == 0
    assert enclosing_turns([]) == []


def test_a_closed_turn_and_an_open_one() -> None:
    entries = numbered([user("idle"), *simple_turn(1), user("between"), *simple_turn(2)[:3]])
    assert spans(entries) == [TurnSpan(1, 2, 7), TurnSpan(2, 9)]
    assert stable_boundaries(entries) == {0, 1, 7, 8}
    assert enclosing_turns(entries) == [None, 1, 1, 1, 1, 1, 1, None, 2, 2, 2]
    assert open_turn(entries) == TurnSpan(2, 9)
    assert span_open_at(entries, 4) == TurnSpan(1, 2, 7)
    assert span_open_at(entries, 7) is None
    assert turn_starts(entries) == [2, 9]


def test_a_span_splits_a_cut_strictly_inside_it() -> None:
    span = TurnSpan(3, start_seq=5, end_seq=9)
    assert [cut for cut in range(1, 12) if span.splits(cut)] == [6, 7, 8, 9]
    assert [seq for seq in range(12) if span.is_open_after(seq)] == [5, 6, 7, 8]
    assert TurnSpan(1, 5).splits(100)


def test_the_reading_is_lenient_on_a_broken_journal() -> None:
    """A turn/start replaces an open turn; a stray turn/end closes nothing; nothing raises."""
    entries = numbered([TurnStart(1), TurnStart(2), end(2), end(7), user("after")])
    assert spans(entries) == [TurnSpan(1, 1), TurnSpan(2, 2, 3)]
    assert stable_boundaries(entries) == {0, 3, 4, 5}
    assert enclosing_turns(entries) == [1, 2, 2, None, None]
    assert span_open_at(entries, 1) == TurnSpan(1, 1, 3)
    assert open_turn(entries) is None
    assert last_turn(numbered([TurnStart(4), end(4), TurnStart(2)])) == 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(1, 9).map(TurnStart), st.integers(1, 9).map(end), st.just(user("x"))),
        max_size=12,
    )
)
def test_the_last_turn_is_the_highest_started_even_badly_numbered(events: list[Event]) -> None:
    # turns.py: a journal is opened without invariant.check, so last_turn may not be the last
    # turn/start's number; it is the highest one spans finds (0: none).
    entries = numbered(events)
    assert last_turn(entries) == max((span.turn for span in spans(entries)), default=0)


def test_the_open_step_is_the_last_step_start_without_its_end() -> None:
    steps: list[Event] = [StepStart(1, 1), assistant(1, 1), StepEnd(1, 1), StepStart(1, 2)]
    assert open_step(steps) == StepStart(1, 2)
    assert open_step(steps[:3]) is None
    assert open_step([]) is None
