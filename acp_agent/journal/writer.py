"""``JournalWriter``: one per session; appends in memory, makes them durable by group commit.

Theory of operation
-------------------
``append(entry)`` encodes the line into the pending buffer and returns: no I/O, ever. It
checks that seqs are contiguous, so the file can never get a gap.

``await flush()`` is the durability barrier. It takes every pending line, writes them with one
``write`` (looping only on short writes) and one ``fdatasync``, in a worker thread so the event
loop stays free. Flushes serialize on a lock and coalesce: a caller that arrives while a flush
runs waits, then flushes whatever is still pending — often nothing, because the running flush
took it. With nothing pending, ``flush()`` returns at once without a syscall. So the number of
fdatasyncs equals the number of barriers that found something to write, however many events
were streamed in between.

Durability promise (keep it true; ``tests/journal/test_writer_faults.py`` holds it)
-----------------------------------------------------------------------------------
- When ``flush()`` returns, every line appended before the call is on disk (written and
  fdatasynced) and ``durable_seq`` covers it. Nothing else is promised durable.
- When a write or fdatasync fails, ``flush()`` raises ``JournalFlushError`` (carrying the
  ``OSError`` text). The lines stay admitted in memory, in order; ``health`` turns
  ``healthy=False`` with ``unflushed`` = the lines not yet durable and ``last_error``;
  ``durable_seq`` does not move. Appends go on being admitted.
- We promise nothing about bytes written by an attempt that failed, and we never trust them:
  after a failed fsync Linux may have dropped the dirty pages and marked them clean, so a later
  fsync can report success without writing them (the 2018 "fsyncgate"). The next flush
  therefore first truncates the file back to the last durable size — so no torn fragment stays
  — then rewrites every non-durable line from memory and fdatasyncs again. A retry that
  succeeds makes ``health`` healthy again; no line is ever lost, duplicated or reordered.
- If the process dies before a retry succeeds, lines of the failed attempts may or may not be
  on disk, possibly torn. They were never acknowledged; the next ``open`` moves a torn tail to a
  side file (``journal.tail.<ms>``) and truncates it away, never dropping bytes silently.

``create`` and ``open`` run ``opening.py`` in a worker thread; the session lock they take is
held until ``close``. The file's descriptor is not: ``descriptors.py`` closes it while the
journal is idle and room is needed, and the next flush opens the file again.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import anyio
import msgspec
import structlog

from acp_agent.journal.descriptors import with_room
from acp_agent.journal.disk import DurableFile
from acp_agent.journal.errors import JournalClosed, JournalFlushError
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.journal.faults import file_factory as default_file_factory
from acp_agent.journal.files import FileFactory
from acp_agent.journal.format import encode_entry
from acp_agent.journal.lock import SessionLock
from acp_agent.journal.opening import LoadedJournal, TailRepair, create_files, open_files

__all__ = [
    "JournalFlushError",
    "JournalHealth",
    "JournalStats",
    "JournalWriter",
    "LoadedJournal",
    "TailRepair",
]

log = structlog.get_logger(__name__)


class JournalHealth(msgspec.Struct, frozen=True, rename="camel"):
    healthy: bool
    unflushed: int
    last_error: str | None = None


class JournalStats(msgspec.Struct, frozen=True):
    flushes: int
    """Flushes that made lines durable."""
    writes: int
    syncs: int
    truncates: int


class JournalWriter:
    def __init__(
        self, session_id: str, disk: DurableFile, lock: SessionLock, durable_seq: int
    ) -> None:
        self.session_id = session_id
        self._disk = disk
        self._lock = lock
        self._durable_seq = durable_seq
        self._unflushed: list[bytes] = []
        self._last_error: str | None = None
        self._flushes = 0
        self._flush_lock = anyio.Lock()
        self._closed = False
        self._log = log.bind(session_id=session_id)

    @classmethod
    async def create(
        cls, session_dir: Path, header: SessionHeader, *, file_factory: FileFactory | None = None
    ) -> JournalWriter:
        factory = file_factory or default_file_factory()
        with anyio.CancelScope(shield=True):
            disk, lock = await anyio.to_thread.run_sync(
                with_room, create_files, session_dir, header, factory
            )
        return cls(header.id, disk, lock, durable_seq=0)

    @classmethod
    async def open(
        cls, session_dir: Path, *, file_factory: FileFactory | None = None
    ) -> tuple[JournalWriter, LoadedJournal]:
        factory = file_factory or default_file_factory()
        with anyio.CancelScope(shield=True):
            disk, lock, loaded = await anyio.to_thread.run_sync(
                with_room, open_files, session_dir, factory
            )
        return cls(loaded.header.id, disk, lock, durable_seq=len(loaded.entries)), loaded

    # -- state ------------------------------------------------------------------------------

    @property
    def durable_seq(self) -> int:
        """The last seq known to be on disk (0: none)."""
        return self._durable_seq

    @property
    def next_seq(self) -> int:
        return self._durable_seq + len(self._unflushed) + 1

    @property
    def health(self) -> JournalHealth:
        unflushed = len(self._unflushed)
        return JournalHealth(self._last_error is None, unflushed, self._last_error)

    @property
    def stats(self) -> JournalStats:
        disk = self._disk
        return JournalStats(self._flushes, disk.writes, disk.syncs, disk.truncates)

    # -- appending and flushing -------------------------------------------------------------

    def append(self, entry: Entry) -> None:
        if self._closed:
            raise JournalClosed(self.session_id)
        if entry.seq != self.next_seq:
            raise ValueError(f"appended seq {entry.seq}, expected {self.next_seq}")
        self._unflushed.append(encode_entry(entry))

    async def flush(self) -> None:
        if not self._unflushed:
            return
        async with self._flush_lock:
            count = len(self._unflushed)
            if count:
                await self._flush_lines(count)

    async def _flush_lines(self, count: int) -> None:
        if self._closed:
            raise JournalClosed(self.session_id)
        data = b"".join(self._unflushed[:count])
        try:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._disk.persist, data)
        except OSError as exc:
            raise self._failed(exc) from exc
        del self._unflushed[:count]
        self._durable_seq += count
        self._flushes += 1
        self._last_error = None
        self._log.debug(
            "journal_flushed", lines=count, bytes=len(data), durable_seq=self._durable_seq
        )

    def _failed(self, exc: OSError) -> JournalFlushError:
        self._last_error = str(exc)
        unflushed = len(self._unflushed)
        self._log.error(
            "journal_flush_failed",
            error=self._last_error,
            unflushed=unflushed,
            durable_seq=self._durable_seq,
        )
        return JournalFlushError(self.session_id, self._last_error, unflushed)

    # -- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Flush, then release the file and the lock (also when the flush fails, which raises)."""
        if self._closed:
            return
        try:
            await self.flush()
        finally:
            self._closed = True
            self._disk.close()
            self._lock.release()

    async def __aenter__(self) -> JournalWriter:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
