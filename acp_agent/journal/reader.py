"""Reading a journal: one linear pass that splits the valid prefix from a damaged tail.

Theory of operation
-------------------
The writer only ever appends whole ``\\n``-terminated lines, and a flush is acknowledged only
after its bytes were fdatasynced. So after a crash the file is: the header, good lines, and
possibly a *tail* the crash cut short — a line without its newline, a half-written line,
zeros where the file system extended the file but never wrote the data (NUL padding), or
leftovers of a failed write. Such a tail was never acknowledged.

``parse_journal`` walks the lines once, decoding each with the reused decoders of
``format.py``. At the first bad line it decides:

- nothing valid follows -> a damaged tail: the caller (``JournalWriter.open``) moves those bytes
  to a side file and truncates them away; ``ParsedJournal.tail`` says where and why;
- some valid line follows -> the damage is *inside* the history, which no crash of ours can
  produce: ``JournalCorrupt`` naming the seq that line should have had and its byte offset.

A line that decodes but carries the wrong seq is corruption too, wherever it is: it is not
torn, it is wrong. Nothing here writes; ``load_journal`` is safe on a journal another process
has open.

Speed: a journal with nothing wrong in it is first read in bulk (``bulk.py``: the same
checks and decoder, the per-line work in a few C-level passes); only when that cannot vouch for
every line does the walk above run, so every refusal and every torn tail is still decided here.
The pass is linear, and the cyclic garbage collector is paused while it runs. Decoding
allocates a few objects per line and keeps them all, which makes the collector re-scan the
growing history again and again (about a third of the load time of 100k events); none of
these objects can form a cycle, so there is nothing for it to find.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from acp_agent.journal.bulk import decode_body
from acp_agent.journal.errors import JournalCorrupt
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.journal.format import BadLine, decode_entry, decode_header


class TailDamage(msgspec.Struct, frozen=True):
    offset: int
    """Where the damaged tail starts (the end of the valid prefix)."""
    length: int
    """Bytes from ``offset`` to the end of the file."""
    seq: int
    """The seq the first damaged line would have had."""
    reason: str


class ParsedJournal(msgspec.Struct, frozen=True):
    header: SessionHeader
    entries: list[Entry]
    size: int
    """Bytes of the valid prefix: the header and every good line."""
    tail: TailDamage | None


def load_journal(path: Path) -> ParsedJournal:
    """Read and parse the journal at ``path`` without changing it."""
    return parse_journal(path.read_bytes(), path=path)


def parse_journal(data: bytes, *, path: Path | None = None) -> ParsedJournal:
    with _collector_paused():
        return _parse(data, path)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic GC; resume it only if it was on when we started.

    Overlapping pauses in two threads may end early; that only costs time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse(data: bytes, path: Path | None) -> ParsedJournal:
    header, sealed, start = parse_header(data, path)
    whole = decode_body(data[start:]) if sealed else None
    if whole is not None:
        return ParsedJournal(header=header, entries=whole, size=len(data), tail=None)
    return walk(data, header, sealed, start, path)


def walk(
    data: bytes, header: SessionHeader, sealed: bool, start: int, path: Path | None = None
) -> ParsedJournal:
    """The line-by-line read of the lines from ``start`` (what ``decode_body`` stands in for
    when it can vouch for every line)."""
    entries: list[Entry] = []
    offset = start
    lines = data[start:].split(b"\n")
    nul_free = b"\x00" not in data
    last = len(lines) - 1  # the piece after the final newline: b"" when the file ends cleanly
    for index, line in enumerate(lines):
        if index == last and not line:
            break
        seq = len(entries) + 1
        try:
            if index == last:
                raise BadLine("no trailing newline")
            entry = decode_entry(line, require_crc=sealed, nul_free=nul_free)
        except BadLine as bad:
            follower = _first_valid(lines[index + 1 : last], offset + len(line) + 1, sealed)
            if follower is not None:
                reason = f"{bad.reason}; a valid line follows at byte {follower}"
                raise JournalCorrupt(reason, offset=offset, seq=seq, path=path) from None
            tail = TailDamage(offset=offset, length=len(data) - offset, seq=seq, reason=bad.reason)
            return ParsedJournal(header=header, entries=entries, size=offset, tail=tail)
        if entry.seq != seq:
            reason = f"found seq {entry.seq}, expected {seq}"
            raise JournalCorrupt(reason, offset=offset, seq=seq, path=path)
        entries.append(entry)
        offset += len(line) + 1
    return ParsedJournal(header=header, entries=entries, size=offset, tail=None)


def parse_header(data: bytes, path: Path | None = None) -> tuple[SessionHeader, bool, int]:
    """The header, whether it is sealed, and where the first event line starts."""
    end = data.find(b"\n")
    if end < 0:
        reason = "no complete header line" if data else "empty file"
        raise JournalCorrupt(reason, offset=0, seq=None, path=path)
    try:
        line = decode_header(data[:end])
    except BadLine as bad:
        raise JournalCorrupt(f"bad header: {bad.reason}", offset=0, seq=None, path=path) from None
    return line.header, line.sealed, end + 1


def _first_valid(lines: list[bytes], offset: int, sealed: bool) -> int | None:
    """The byte offset of the first valid line among ``lines`` (starting at ``offset``)."""
    for line in lines:
        try:
            decode_entry(line, require_crc=sealed)
        except BadLine:
            offset += len(line) + 1
            continue
        return offset
    return None
