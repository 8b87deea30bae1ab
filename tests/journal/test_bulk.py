"""``bulk.decode_body`` reads a journal with nothing wrong in it in a few C-level passes, and
says ``None`` to anything it cannot vouch for; ``parse_journal`` then walks line by line. The
two must agree: the bulk read may only accept a journal the walk accepts in full, with equal
entries, and every refusal or torn tail must be the walk's (``journal/bulk.py``;
``docs/journal.md`` for the line format and what a torn tail is)."""

from __future__ import annotations

import gc

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from acp_agent.journal import events
from acp_agent.journal.bulk import decode_body
from acp_agent.journal.errors import JournalCorrupt
from acp_agent.journal.events import (
    Compaction,
    CompactionReason,
    Entry,
    Event,
    TurnStart,
    UnknownEvent,
)
from acp_agent.journal.format import encode_entry
from acp_agent.journal.reader import ParsedJournal, parse_header, parse_journal, walk

from .builders import HEADER, call, journal_bytes, numbered, tool_turn, user
from .test_format import ALL_EVENTS, EVERY_BLOCK, seal

EVENTS: list[Event] = [
    *ALL_EVENTS,
    user("x" * 300),
    Compaction("k1", EVERY_BLOCK, through_seq=3, kept_from_seq=4, reason=CompactionReason.AUTO),
    *tool_turn(3, ["c7", "c8"]),
]


def body_of(data: bytes) -> bytes:
    return data[parse_header(data)[2] :]


def walked(data: bytes) -> ParsedJournal | str:
    """What the line-by-line read says, alone."""
    header, sealed, start = parse_header(data)
    try:
        return walk(data, header, sealed, start)
    except JournalCorrupt as exc:
        return f"JournalCorrupt: {exc}"


def parsed(data: bytes) -> ParsedJournal | str:
    try:
        return parse_journal(data)
    except JournalCorrupt as exc:
        return f"JournalCorrupt: {exc}"


def test_a_sound_journal_of_every_event_type_is_read_in_bulk_as_the_walk_reads_it() -> None:
    data = journal_bytes(numbered(EVENTS))
    entries = decode_body(body_of(data))
    assert entries is not None
    assert entries == numbered(EVENTS)
    assert parse_journal(data) == walked(data)


def test_an_empty_history_is_read_in_bulk() -> None:
    data = journal_bytes([])
    assert decode_body(body_of(data)) == []
    assert parse_journal(data) == walked(data)


def test_an_unknown_event_type_is_left_to_the_walk_which_keeps_it() -> None:
    unknown = UnknownEvent(type="future/thing", data=b'{"x":1}')  # type: ignore[arg-type]
    data = journal_bytes(numbered([user(), unknown, user()]))
    assert decode_body(body_of(data)) is None
    result = parse_journal(data)
    assert result == walked(data)
    assert isinstance(result.entries[1].event, UnknownEvent)


def test_a_crc_key_inside_the_data_does_not_confuse_the_checksum() -> None:
    data = journal_bytes(numbered([call(1, 1, "c1", {"crc": "00000000", "x": ',"crc":"'})]))
    assert decode_body(body_of(data)) == numbered(
        [call(1, 1, "c1", {"crc": "00000000", "x": ',"crc":"'})]
    )


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda lines: [*lines[:-1], lines[-1][:-1]], id="no final newline"),
        pytest.param(lambda lines: [*lines[:-1], lines[-1][:40]], id="torn last line"),
        pytest.param(lambda lines: [*lines[:-1], b"\x00" * 64], id="NUL padding"),
        pytest.param(lambda lines: [*lines[:2], b"\n", *lines[2:]], id="blank line inside"),
        pytest.param(lambda lines: [lines[1], lines[0], *lines[2:]], id="seqs swapped"),
        pytest.param(lambda lines: lines[:1] + lines[2:], id="a line missing"),
        pytest.param(
            lambda lines: [lines[0], lines[1].replace(b"hello", b"hellp"), *lines[2:]],
            id="a changed byte",
        ),
        pytest.param(
            lambda lines: [lines[0], lines[1].replace(b'"kind":"user"', b'"kind":5'), *lines[2:]],
            id="bad data",
        ),
        pytest.param(
            lambda lines: [lines[0], seal(lines[1][:-19] + b"}").replace(b"{", b"{ ", 1)],
            id="resealed with a space",
        ),
        pytest.param(
            lambda lines: [lines[0], lines[1][:-19] + b"}\n", *lines[2:]], id="no checksum"
        ),
        pytest.param(
            lambda lines: [lines[0], lines[1].replace(b'"crc":"', b'"crc":"A', 1)], id="upper hex"
        ),
    ],
)
def test_whatever_is_in_doubt_is_left_to_the_walk(damage: object) -> None:
    lines = [encode_entry(entry) for entry in numbered([user(), user(), user()])]
    header = journal_bytes([])
    data = header + b"".join(damage(lines))  # type: ignore[operator]
    assert decode_body(body_of(data)) is None
    assert parsed(data) == walked(data)


@settings(max_examples=300, deadline=None)
@given(
    position=st.floats(0, 1, exclude_max=True),
    byte=st.integers(0, 255),
    cut=st.booleans(),
)
def test_a_damaged_journal_reads_alike_in_bulk_and_line_by_line(
    position: float, byte: int, cut: bool
) -> None:
    data = journal_bytes(numbered(EVENTS))
    start = parse_header(data)[2]
    at = start + int(position * (len(data) - start))
    damaged = data[:at] if cut else data[:at] + bytes([byte]) + data[at + 1 :]
    entries = decode_body(body_of(damaged))
    if entries is not None:  # the bulk read vouched for it: the walk must agree in full
        walked_result = walked(damaged)
        assert isinstance(walked_result, ParsedJournal)
        assert walked_result.tail is None and walked_result.entries == entries
    assert parsed(damaged) == walked(damaged)


def test_seqs_must_start_at_one() -> None:
    entries = [Entry(seq, 1, event) for seq, event in enumerate([user(), user()], start=2)]
    data = journal_bytes(entries, HEADER)
    assert decode_body(body_of(data)) is None
    assert isinstance(parsed(data), str)


def test_a_hand_sealed_line_with_spaces_is_read_alike() -> None:
    """The contract (``docs/contract.md`` §2) fixes the members, not the spacing."""
    line = seal(b'{"seq": 1, "time": 5, "type": "turn/start", "data": {"turn": 1}}')
    data = journal_bytes([]) + line
    expected = [Entry(1, 5, TurnStart(1))]
    assert decode_body(body_of(data)) == expected
    result = walked(data)
    assert isinstance(result, ParsedJournal) and result.entries == expected


def test_a_parsed_journal_s_own_structs_are_left_untracked_by_the_collector() -> None:
    # events.py: entries, events and the journal structs they hold are untracked by the cyclic
    # GC (a loaded history would otherwise be scanned at each collection; the first one after
    # a session/load's parse is on its path). msgspec leaves a struct of scalars untracked by
    # itself; TurnEndReason holds an enum member (a tracked object): it must say gc=False.
    entries = parse_journal(journal_bytes(numbered(EVENTS))).entries
    ours = [
        value
        for value in _reachable(entries)
        if isinstance(value, msgspec.Struct) and type(value).__module__ == events.__name__
    ]
    assert {type(value).__name__ for value in ours} >= {"Entry", "TurnEnd", "TurnEndReason"}
    assert [value for value in ours if gc.is_tracked(value)] == []


def _reachable(entries: list[Entry]) -> list[object]:
    """Every entry, event and struct or container value below them."""
    found: list[object] = []
    todo: list[object] = list(entries)
    while todo:
        value = todo.pop()
        found.append(value)
        if isinstance(value, msgspec.Struct):
            todo += [getattr(value, name) for name in value.__struct_fields__]
        elif isinstance(value, list | tuple):
            todo += value
        elif isinstance(value, dict):
            todo += value.values()
    return found
