"""Opening a journal: torn tails are moved aside, damage inside the history is refused."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from acp_agent.journal.errors import JournalCorrupt
from acp_agent.journal.events import Entry, TurnStart
from acp_agent.journal.format import encode_entry, encode_header
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.writer import JournalWriter, LoadedJournal

from .builders import HEADER, journal_bytes, numbered, tool_turn, user, write_journal

ENTRIES = numbered([user("idle", id="m0"), *tool_turn(1, ["c1", "c2"])])
DATA = journal_bytes(ENTRIES)
NEXT_SEQ = len(ENTRIES) + 1
LINE_ENDS = list(
    itertools.accumulate([len(encode_header(HEADER)), *map(len, map(encode_entry, ENTRIES))])
)
"""Byte offsets where the header and each entry's line end."""


def side_files(sdir: Path) -> list[Path]:
    return sorted(sdir.glob("journal.tail.*"))


async def open_and_close(sdir: Path) -> LoadedJournal:
    writer, loaded = await JournalWriter.open(sdir)
    await writer.close()
    return loaded


# -- torn tails ---------------------------------------------------------------------------------------


async def test_a_torn_tail_at_every_offset_of_the_last_two_records(sdir: Path) -> None:
    start = LINE_ENDS[-3]  # the first byte of the second-to-last record
    for cut in range(start, len(DATA) + 1):
        for old in side_files(sdir):
            old.unlink()
        write_journal(sdir, DATA[:cut])
        kept = sum(1 for end in LINE_ENDS[1:] if end <= cut)
        good_end = LINE_ENDS[kept]
        writer, loaded = await JournalWriter.open(sdir)
        assert loaded.entries == ENTRIES[:kept], cut
        if good_end == cut:
            assert loaded.repaired is None and side_files(sdir) == []
        else:
            assert loaded.repaired is not None
            assert (loaded.repaired.offset, loaded.repaired.length, loaded.repaired.seq) == (
                good_end,
                cut - good_end,
                kept + 1,
            )
            assert side_files(sdir) == [loaded.repaired.side_file]
            assert loaded.repaired.side_file.read_bytes() == DATA[good_end:cut]
        next_entry = Entry(kept + 1, 0, TurnStart(9))
        writer.append(next_entry)
        await writer.close()
        assert (sdir / "journal.jsonl").read_bytes() == DATA[:good_end] + encode_entry(next_entry)
        assert (await open_and_close(sdir)).entries == [*ENTRIES[:kept], next_entry]


async def test_repair_is_logged_with_offset_and_length(sdir: Path) -> None:
    write_journal(sdir, DATA + b'{"seq":15,"ti')
    with capture_logs() as logs:
        loaded = await open_and_close(sdir)
    assert loaded.repaired is not None
    repaired = [e for e in logs if e["event"] == "journal_tail_repaired"]
    assert repaired == [
        {
            "event": "journal_tail_repaired",
            "log_level": "warning",
            "session_id": "s1",
            "offset": len(DATA),
            "length": 13,
            "seq": NEXT_SEQ,
            "reason": "no trailing newline",
            "side_file": loaded.repaired.side_file.name,
        }
    ]


@pytest.mark.parametrize(
    "tail",
    [
        b"\x00" * 4096,  # the file system extended the file but never wrote the data
        b"\x00\x00\n\x00\x00\x00",
        b"\x00" * 200 + b"\n",
        b"garbage\n",
        b"garbage\nmore garbage\n{not json}\n",
        b"\n",
        b'{"seq":15,"time":1,"type":"turn/start","data":{"turn":2}}\n',  # unsealed
        b"\xff\xfe\n",
    ],
)
async def test_nul_padding_and_garbage_after_the_last_good_line_are_moved_aside(
    sdir: Path, tail: bytes
) -> None:
    write_journal(sdir, DATA + tail)
    loaded = await open_and_close(sdir)
    assert loaded.entries == ENTRIES
    assert loaded.repaired is not None
    assert loaded.repaired.side_file.read_bytes() == tail
    assert (sdir / "journal.jsonl").read_bytes() == DATA


async def test_a_last_record_replaced_by_nuls_is_moved_aside(sdir: Path) -> None:
    last = LINE_ENDS[-2]
    write_journal(sdir, DATA[:last] + b"\x00" * (len(DATA) - last))
    loaded = await open_and_close(sdir)
    assert loaded.entries == ENTRIES[:-1]
    assert loaded.repaired is not None and loaded.repaired.reason == "no trailing newline"


async def test_a_bad_checksum_on_the_last_line_is_a_tail_too(sdir: Path) -> None:
    damaged = bytearray(DATA)
    damaged[LINE_ENDS[-2] + 20] ^= 0x01
    write_journal(sdir, bytes(damaged))
    loaded = await open_and_close(sdir)
    assert loaded.entries == ENTRIES[:-1]
    assert loaded.repaired is not None and loaded.repaired.reason.startswith("checksum mismatch")
    assert loaded.repaired.side_file.read_bytes() == bytes(damaged[LINE_ENDS[-2] :])


async def test_side_files_never_overwrite_each_other(sdir: Path) -> None:
    for _ in range(3):
        write_journal(sdir, DATA + b"torn")
        await open_and_close(sdir)
    assert len(side_files(sdir)) == 3
    assert all(p.read_bytes() == b"torn" for p in side_files(sdir))


# -- corruption ---------------------------------------------------------------------------------------


async def assert_refused(
    sdir: Path, data: bytes, seq: int | None, offset: int, reason: str
) -> None:
    with pytest.raises(JournalCorrupt) as caught:
        await JournalWriter.open(sdir)
    assert (caught.value.seq, caught.value.offset) == (seq, offset)
    assert reason in caught.value.reason
    assert (sdir / "journal.jsonl").read_bytes() == data  # untouched
    assert side_files(sdir) == []


async def test_any_flipped_byte_inside_the_history_is_refused_naming_seq_and_offset(
    sdir: Path,
) -> None:
    record = 5  # a record in the middle
    start, end = LINE_ENDS[record - 1], LINE_ENDS[record]
    for index in range(start, end):
        damaged = bytearray(DATA)
        damaged[index] ^= 0x01
        write_journal(sdir, bytes(damaged))
        await assert_refused(sdir, bytes(damaged), record, start, "a valid line follows")
    write_journal(sdir, DATA)
    assert (await open_and_close(sdir)).entries == ENTRIES  # and the lock was released each time


async def test_the_message_names_file_seq_and_offset(sdir: Path) -> None:
    damaged = bytearray(DATA)
    damaged[LINE_ENDS[2] + 30] ^= 0x04
    path = write_journal(sdir, bytes(damaged))
    with pytest.raises(JournalCorrupt) as caught:
        await JournalWriter.open(sdir)
    assert str(caught.value).startswith(
        f"{path}: journal corrupt: seq 3 at byte {LINE_ENDS[2]}: checksum mismatch"
    )


async def test_garbage_followed_by_good_lines_is_refused(sdir: Path) -> None:
    middle = LINE_ENDS[4]
    data = DATA[:middle] + b"\x00" * 63 + b"\n" + DATA[middle:]
    write_journal(sdir, data)
    await assert_refused(
        sdir, data, 5, middle, f"NUL bytes; a valid line follows at byte {middle + 64}"
    )


async def test_a_gap_in_seqs_is_refused(sdir: Path) -> None:
    data = journal_bytes([*ENTRIES[:3], *ENTRIES[4:]])
    write_journal(sdir, data)
    await assert_refused(sdir, data, 4, LINE_ENDS[3], "found seq 5, expected 4")


async def test_a_wrong_seq_on_the_last_line_is_corruption_not_a_tail(sdir: Path) -> None:
    data = journal_bytes([*ENTRIES, Entry(99, 0, TurnStart(2))])
    write_journal(sdir, data)
    await assert_refused(sdir, data, NEXT_SEQ, len(DATA), f"found seq 99, expected {NEXT_SEQ}")


async def test_seqs_must_start_at_one(sdir: Path) -> None:
    data = journal_bytes(numbered([user()], first_seq=2))
    write_journal(sdir, data)
    await assert_refused(sdir, data, 1, LINE_ENDS[0], "found seq 2, expected 1")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty file"),
        (encode_header(HEADER)[:-1], "no complete header line"),
        (encode_header(HEADER)[:30], "no complete header line"),
        (b"\x00" * 100, "no complete header line"),
        (encode_entry(ENTRIES[0]), "bad header: invalid header"),
        (
            encode_header(HEADER).replace(b"/work", b"/worm") + encode_entry(ENTRIES[0]),
            "bad header: checksum mismatch",
        ),
    ],
)
async def test_a_missing_or_bad_header_is_refused(sdir: Path, data: bytes, reason: str) -> None:
    write_journal(sdir, data)
    await assert_refused(sdir, data, None, 0, reason)


# -- hand-written journals (no checksums) --------------------------------------------------------------


def unsealed(line: bytes) -> bytes:
    return line[: -len(b',"crc":"00000000"}\n')] + b"}\n"


async def test_a_journal_written_without_checksums_loads(sdir: Path) -> None:
    data = b"".join(unsealed(line) for line in DATA.splitlines(keepends=True))
    write_journal(sdir, data)
    writer, loaded = await JournalWriter.open(sdir)
    assert (loaded.header, loaded.entries) == (HEADER, ENTRIES)
    writer.append(Entry(NEXT_SEQ, 0, TurnStart(2)))
    await writer.close()
    assert (sdir / "journal.jsonl").read_bytes() == data + encode_entry(
        Entry(NEXT_SEQ, 0, TurnStart(2))
    )


async def test_a_sealed_journal_needs_every_line_sealed(sdir: Path) -> None:
    lines = DATA.splitlines(keepends=True)
    data = b"".join([*lines[:4], unsealed(lines[4]), *lines[5:]])
    write_journal(sdir, data)
    await assert_refused(sdir, data, 4, LINE_ENDS[3], "missing checksum")


# -- scale ------------------------------------------------------------------------------------------------


def test_a_hundred_thousand_events_load_in_one_linear_pass() -> None:
    turn = tool_turn(1, ["c1", "c2", "c3"])
    events = [*itertools.islice(itertools.cycle([user("context", id="m"), *turn]), 100_000)]
    entries = numbered(events)
    data = journal_bytes(entries)
    parsed = parse_journal(data)
    assert parsed.tail is None and parsed.size == len(data)
    assert parsed.entries == entries
