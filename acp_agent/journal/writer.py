"""``JournalWriter``: one per session; appends in memory, makes them durable by group commit.

Theory of operation
-------------------
``append(entry)`` encodes the line into the pending buffer and returns: no I/O, ever. It
checks that seqs are contiguous, so the file can never get a gap.

``await flush()`` is the durability barrier. It takes every pending line, writes them with one
``write`` (looping only on short writes) and one ``fdatasync``, on one of the journal's own
threads (``flusher.py``: one hand-off there, one back) so the event loop stays free. Flushes take
turns and coalesce: a caller that arrives while a flush runs waits, then flushes whatever is
still pending — often nothing, because the running flush took it. ``flush_now()`` is the same
barrier with the hand-off made before it returns (the idle injection's background flush), and
the outcome is recorded on the loop when the thread's answer arrives, before any waiter wakes. With nothing pending, ``flush()`` returns at once without a syscall. So the number of
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

The store seam (``store.py``): the writer needs two things of where its lines go, a ``Sink``
(``persist`` one barrier's bytes durably, or raise ``OSError`` leaving nothing trusted) and a
``Hold`` on the session (``release``; ``needs_check`` / ``verify`` for a hold that can be lost,
the PostgreSQL lease). A file journal's are ``DurableFile`` and ``SessionLock``; the PostgreSQL
store's (``postgres/``) commit one transaction per barrier under a fencing epoch.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType
from typing import Protocol

import anyio
import msgspec

from acp_agent.journal.descriptors import with_room
from acp_agent.journal.errors import JournalClosed, JournalFlushError
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.journal.faults import file_factory as default_file_factory
from acp_agent.journal.files import FileFactory
from acp_agent.journal.flusher import FLUSHER
from acp_agent.journal.format import encode_entry
from acp_agent.journal.opening import LoadedJournal, TailRepair, create_files, open_files
from acp_agent.logs import get_logger

__all__ = [
    "JournalFlushError",
    "JournalHealth",
    "JournalStats",
    "JournalWriter",
    "LoadedJournal",
    "TailRepair",
]

log = get_logger(__name__)


class Sink(Protocol):
    """Where a writer's lines become durable (blocking; called on a flusher thread)."""

    writes: int
    syncs: int
    truncates: int

    def persist(self, data: bytes) -> None:
        """Make ``data`` (whole lines) durable after what is durable already, or raise."""
        ...

    def close(self) -> None: ...


class Hold(Protocol):
    """What keeps other writers out of the session while the writer lives."""

    def release(self) -> None: ...

    def needs_check(self) -> bool:
        """Whether ownership must be confirmed (``verify``) before more work is accepted."""
        ...

    def verify(self) -> None:
        """Confirm the session is still this writer's (blocking), or raise a ``JournalError``
        (taken over) or an ``OSError`` (the store is unreachable)."""
        ...


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


class _Flush:
    """One flush on its way: ``done`` is set once its outcome is recorded."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: BaseException | None = None


class JournalWriter:
    def __init__(self, session_id: str, disk: Sink, lock: Hold, durable_seq: int) -> None:
        self.session_id = session_id
        self._disk = disk
        self._lock = lock
        self._durable_seq = durable_seq
        self._unflushed: list[bytes] = []
        self._last_error: str | None = None
        self._flushes = 0
        self._flushing: _Flush | None = None
        """The running flush (flushes take turns), or ``None``."""
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
    def hold(self) -> Hold:
        """What keeps other writers out (a file lock, a PostgreSQL lease)."""
        return self._lock

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

    async def ensure_owned(self) -> None:
        """Raise unless the session is still this writer's (``Hold.verify``); a file lock
        cannot be lost, so for a file journal this costs nothing."""
        if self._lock.needs_check():
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._lock.verify)

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
        while self._flushing is not None:  # a flush runs: wait, then flush what it left
            await self._flushing.done.wait()
        if self._unflushed:
            await self._start_flush()

    def flush_now(self) -> Awaitable[None]:
        """``flush()``, with its lines handed to the flusher thread before this returns when no
        flush is running (else it waits for that one, as ``flush()`` does). Await the result:
        the next flush waits for it. For a caller that goes on working while the lines are
        made durable (an idle injection, whose answer does not wait for the fsync)."""
        if self._flushing is not None or not self._unflushed or self._closed:
            return self.flush()
        return self._start_flush()

    def _start_flush(self) -> Awaitable[None]:
        """Take the flush's turn and hand every pending line to the flusher (no flush runs).

        What the flush did is recorded when the thread's answer reaches the loop, before anyone
        waiting wakes up, whether or not the returned awaitable is ever awaited."""
        if self._closed:
            raise JournalClosed(self.session_id)
        count = len(self._unflushed)
        data = b"".join(self._unflushed)
        flush = self._flushing = _Flush()
        try:
            FLUSHER.submit(
                self._disk.persist,
                data,
                lambda _, error: self._flushed(flush, count, len(data), error),
            )
        except BaseException:
            self._flushing = None
            flush.done.set()
            raise
        return self._wait_for(flush)

    def _flushed(self, flush: _Flush, count: int, size: int, error: BaseException | None) -> None:
        """The flusher's answer, on the loop."""
        try:
            if isinstance(error, OSError):
                flush.error = self._failed(error)
                flush.error.__cause__ = error
            elif error is not None:
                flush.error = error
            else:
                del self._unflushed[:count]
                self._durable_seq += count
                self._flushes += 1
                self._last_error = None
                self._log.debug(
                    "journal_flushed", lines=count, bytes=size, durable_seq=self._durable_seq
                )
        finally:
            self._flushing = None
            flush.done.set()

    @staticmethod
    async def _wait_for(flush: _Flush) -> None:
        with anyio.CancelScope(shield=True):
            await flush.done.wait()
        if flush.error is not None:
            raise flush.error

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
