"""Creating and opening a session's journal files: directory, lock, header, tail repair.

Blocking; ``JournalWriter.create`` / ``open`` run these in a worker thread.

- ``create_files`` makes ``<state>/sessions/<id>/`` (0700, parents included), takes the session
  lock, writes the header to ``journal.jsonl.new``, fdatasyncs it, renames it to
  ``journal.jsonl`` and fsyncs the directory: a journal exists with its complete header, or
  not at all (a crash leaves at most the staging file, and the id stays usable).
- ``open_files`` takes the lock, then reads and validates the whole file (``reader.py``). A
  damaged tail is saved to a side file ``journal.tail.<ms>`` (0600, fsynced) and only then cut
  off the journal, before any append: a crash in between leaves both copies, never neither.
  Damage inside the history raises ``JournalCorrupt`` and leaves the file untouched.

On any failure, whatever was acquired (lock, file) is released again.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import msgspec

from acp_agent.journal.disk import DurableFile
from acp_agent.journal.errors import JournalCorrupt, JournalExists, JournalNotFound
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.journal.files import (
    FileFactory,
    fsync_dir,
    make_private_dirs,
    rename_journal,
    write_private_file,
)
from acp_agent.journal.format import encode_header
from acp_agent.journal.lock import SessionLock
from acp_agent.journal.paths import JOURNAL_NAME, journal_path, validate_session_id
from acp_agent.journal.reader import TailDamage, parse_journal
from acp_agent.logs import get_logger

log = get_logger(__name__)

TAIL_PREFIX = "journal.tail."


class TailRepair(msgspec.Struct, frozen=True):
    offset: int
    length: int
    seq: int
    reason: str
    side_file: Path


class LoadedJournal(msgspec.Struct, frozen=True):
    header: SessionHeader
    entries: list[Entry]
    repaired: TailRepair | None


def create_files(
    directory: Path, header: SessionHeader, factory: FileFactory
) -> tuple[DurableFile, SessionLock]:
    if directory.name != validate_session_id(header.id):
        raise ValueError(f"session {header.id!r} does not belong in {directory}")
    make_private_dirs(directory)
    with ExitStack() as undo:
        lock = SessionLock.acquire(directory, header.id)
        undo.callback(lock.release)
        disk = _write_header(directory, header, factory)
        undo.pop_all()
    return disk, lock


def _write_header(directory: Path, header: SessionHeader, factory: FileFactory) -> DurableFile:
    final = journal_path(directory)
    if final.exists():
        raise JournalExists(header.id, final)
    staging = directory / f"{JOURNAL_NAME}.new"
    with ExitStack() as undo:
        disk = DurableFile(factory(staging, create=True), durable_size=0)
        undo.callback(staging.unlink, missing_ok=True)
        undo.callback(disk.close)
        disk.persist(encode_header(header))
        rename_journal(staging, final)
        fsync_dir(directory)
        undo.pop_all()
    return disk


def open_files(
    directory: Path, factory: FileFactory
) -> tuple[DurableFile, SessionLock, LoadedJournal]:
    session_id = validate_session_id(directory.name)
    path = journal_path(directory)
    if not directory.is_dir():
        raise JournalNotFound(session_id, path)
    with ExitStack() as undo:
        lock = SessionLock.acquire(directory, session_id)  # a creator still at work holds it
        undo.callback(lock.release)
        if not path.is_file():
            raise JournalNotFound(session_id, path)
        data = path.read_bytes()
        parsed = parse_journal(data, path=path)
        if parsed.header.id != session_id:
            reason = f"header names session {parsed.header.id!r}, not {session_id!r}"
            raise JournalCorrupt(reason, offset=0, seq=None, path=path)
        disk = DurableFile(factory(path, create=False), durable_size=parsed.size)
        undo.callback(disk.close)
        repaired = _move_tail_aside(directory, data, parsed.tail, disk) if parsed.tail else None
        undo.pop_all()
    return disk, lock, LoadedJournal(parsed.header, parsed.entries, repaired)


def _move_tail_aside(
    directory: Path, data: bytes, tail: TailDamage, disk: DurableFile
) -> TailRepair:
    """Save the damaged tail in a side file (durably), then cut it off the journal."""
    side_file = _save_side_file(directory, data[tail.offset :])
    disk.cut(tail.offset)
    fsync_dir(directory)
    log.warning(
        "journal_tail_repaired",
        session_id=directory.name,
        offset=tail.offset,
        length=tail.length,
        seq=tail.seq,
        reason=tail.reason,
        side_file=side_file.name,
    )
    return TailRepair(tail.offset, tail.length, tail.seq, tail.reason, side_file)


def _save_side_file(directory: Path, data: bytes) -> Path:
    stamp = time.time_ns() // 1_000_000
    attempt = 0
    while True:
        suffix = f".{attempt}" if attempt else ""
        path = directory / f"{TAIL_PREFIX}{stamp}{suffix}"
        try:
            write_private_file(path, data)
        except FileExistsError:
            attempt += 1
            continue
        return path
