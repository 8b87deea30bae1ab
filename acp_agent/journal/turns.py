"""The turn grammar: which turn is open, what a turn spans, where a history may be cut.

Theory of operation
-------------------
A session's entries read as (``SCOPES`` in ``invariant.py`` says where each type may appear)::

    journal := between* (turn between*)*
    between := user/message | session/compaction
    turn    := turn/start(N) (step | steering/message | user/message | agent/error)* turn/end(N)
    step    := step/start (assistant/message | tool/call | tool/result | user/message
                           | agent/error)* step/end

(unknown event types: anywhere inside a turn; the finer rules — numbering, tool batches — are
``rules.py``'s).

Everything here is derived from ``turn/start``, ``turn/end`` (and, for steps, ``step/start``,
``step/end``) alone, and leniently: a ``turn/start`` opens a turn, replacing any still open; a
``turn/end`` closes the open turn, if any; every other event changes nothing. So each function
is total — rejecting a journal is ``invariant.check``'s job — and all of them agree with each
other on any list of entries, valid or not. The terms:

- the *open turn* after some entries: the last ``turn/start`` with no ``turn/end`` after it;
- a *span*: turn N from its ``turn/start`` seq to its ``turn/end`` seq (``None``: not closed);
- the *enclosing turn* of an entry: the span it lies in, ``turn/start`` to ``turn/end``
  inclusive (``None``: between turns);
- a *stable boundary*: a seq after which no turn is open — 0 (the empty history), every
  ``turn/end`` and every event between turns (an injected ``user/message``, a
  ``session/compaction``). Forks and cross-session snapshots stop at one;
- a *cut* (a compaction's ``keptFromSeq``) is valid when no span straddles it
  (``TurnSpan.splits``); ``plan_compaction`` picks a ``turn/start`` seq or the end of history;
- the *last turn*: the highest turn number started (0: none); the next turn is one more.

Invariants, for entries that pass ``invariant.check``: the spans are numbered 1, 2, 3 …, lie in
seq order without overlapping, and only the last may be open; every seq 0..n is either a
stable boundary or inside exactly one span (``TurnSpan.is_open_after``); a ``turn/end`` is
always a boundary, a ``turn/start`` never; ``keptFromSeq - 1`` is a boundary exactly when no
span splits the cut.

If you change this, also change: docs/journal.md ("Event types", "The invariant", "Durability
and recovery", "Forks", "Querying"), schemas/journal-line.schema.json, ``SCOPES`` in
``invariant.py`` and the rules in ``rules.py``, and tests/journal/test_turns.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter

from acp_agent.journal.events import Entry, Event, StepEnd, StepStart, TurnEnd, TurnStart


@dataclass(frozen=True, slots=True)
class TurnSpan:
    """Turn ``turn`` from its ``turn/start`` at ``start_seq`` to its ``turn/end`` at ``end_seq``."""

    turn: int
    start_seq: int
    end_seq: int | None = None
    """``None``: the turn has no ``turn/end`` (still open, or replaced by a later start)."""

    @property
    def is_open(self) -> bool:
        return self.end_seq is None

    def is_open_after(self, seq: int) -> bool:
        """Whether this turn is open once the entry ``seq`` is in (the ``turn/end`` closes it)."""
        return self.start_seq <= seq and (self.end_seq is None or seq < self.end_seq)

    def splits(self, kept_from: int) -> bool:
        """Whether keeping the history from seq ``kept_from`` on would cut this turn in two."""
        return self.is_open_after(kept_from - 1)


_EVENT = attrgetter("event")


# -- spans ----------------------------------------------------------------------------------


def spans(entries: Iterable[Entry]) -> list[TurnSpan]:
    """Every turn, in journal order, from its ``turn/start`` to the ``turn/end`` closing it."""
    found: list[TurnSpan] = []
    for entry in entries:
        event = entry.event
        if isinstance(event, TurnStart):
            found.append(TurnSpan(event.turn, entry.seq))
        elif isinstance(event, TurnEnd) and found and (last := found[-1]).end_seq is None:
            # not dataclasses.replace, which costs more than the rest of the loop (session/load)
            found[-1] = TurnSpan(last.turn, last.start_seq, entry.seq)
    return found


def turn_starts(entries: Iterable[Entry]) -> list[int]:
    """The seq of every ``turn/start``: with the end of the history, the cuts a compaction has."""
    return [span.start_seq for span in spans(entries)]


def last_turn(entries: Iterable[Entry]) -> int:
    """The highest turn number started (0: none yet); the next turn is numbered one more.
    (The turn of every ``turn/start``, as ``spans`` has them, without building the spans: run
    at every open, over the whole history. The events by a C-level ``map``, and each tested by
    its exact type, as the projection table looks events up: event structs are never
    subclassed, and ``is`` costs half an ``isinstance`` call.)

    Not simply the last ``turn/start``'s turn: the journal rules number turns 1, 2, 3 …, but
    a journal is opened without ``invariant.check``, so a badly numbered one still gets a next
    turn above every turn it holds."""
    events = map(_EVENT, entries)
    return max([event.turn for event in events if type(event) is TurnStart], default=0)


# -- the open turn --------------------------------------------------------------------------


def _open_turn_index(entries: Sequence[Entry]) -> int | None:
    """The index of the last ``turn/start`` if no ``turn/end`` follows it (``None``: none open)."""
    for index in range(len(entries) - 1, -1, -1):
        event = entries[index].event
        if isinstance(event, TurnEnd):
            return None
        if isinstance(event, TurnStart):
            return index
    return None


def open_turn(entries: Sequence[Entry]) -> TurnSpan | None:
    """The turn open after ``entries`` (``None``: they end between turns)."""
    index = _open_turn_index(entries)
    if index is None:
        return None
    start = entries[index]
    assert isinstance(start.event, TurnStart)
    return TurnSpan(start.event.turn, start.seq)


def open_turn_started(entries: Sequence[Entry]) -> int | None:
    """When the open turn started (its ``turn/start``'s ``time``, ms); ``None``: no turn open."""
    index = _open_turn_index(entries)
    return None if index is None else entries[index].time


def open_turn_events(entries: Sequence[Entry]) -> list[Event]:
    """The events of the open turn, its ``turn/start`` first (``[]``: no turn is open)."""
    index = _open_turn_index(entries)
    return [] if index is None else [entry.event for entry in entries[index:]]


def span_open_at(entries: Sequence[Entry], seq: int) -> TurnSpan | None:
    """The turn open after seq ``seq`` of ``entries`` (numbered 1, 2, …), with its end if any."""
    opened = open_turn(entries[:seq])
    if opened is None:
        return None
    end = next((e.seq for e in entries[seq:] if isinstance(e.event, TurnEnd)), None)
    return replace(opened, end_seq=end)


def open_step(events: Iterable[Event]) -> StepStart | None:
    """The last ``step/start`` of ``events`` if no ``step/end`` follows it."""
    step: StepStart | None = None
    for event in events:
        if isinstance(event, StepStart):
            step = event
        elif isinstance(event, StepEnd):
            step = None
    return step


# -- walking entry by entry -----------------------------------------------------------------

_Walk = Iterator[tuple[Entry, TurnSpan | None, TurnSpan | None]]


def _after(before: TurnSpan | None, entry: Entry) -> TurnSpan | None:
    """The turn open after ``entry``, given the one open before it."""
    if isinstance(entry.event, TurnStart):
        return TurnSpan(entry.event.turn, entry.seq)
    return None if isinstance(entry.event, TurnEnd) else before


def _walk(entries: Iterable[Entry]) -> _Walk:
    """Each entry with the turn open before it and the turn open after it."""
    before: TurnSpan | None = None
    for entry in entries:
        after = _after(before, entry)
        yield entry, before, after
        before = after


def enclosing_turns(entries: Iterable[Entry]) -> list[int | None]:
    """The turn each entry lies in, ``turn/start`` to ``turn/end`` inclusive (``None``: between)."""
    inside = (after if after is not None else before for _, before, after in _walk(entries))
    return [None if span is None else span.turn for span in inside]


# -- stable boundaries ----------------------------------------------------------------------


def stable_boundaries(entries: Iterable[Entry]) -> set[int]:
    """The seqs after which the history is between turns (0 is the empty history)."""
    return {0} | {entry.seq for entry, _, after in _walk(entries) if after is None}


def last_stable_boundary(entries: Iterable[Entry]) -> int:
    """The latest stable boundary: where a fork or a snapshot stops by default."""
    return max(stable_boundaries(entries))
