"""The journal's errors. None of them is a wire error: the session and ACP layers map them.

``JournalLocked`` and ``JournalCorrupt`` are raised when a journal is opened, ``JournalFlushError``
when a flush fails (the lines stay admitted; see ``writer.py``), the rest on misuse. A shared
store (PostgreSQL) adds ``JournalLeased`` (open elsewhere), ``JournalTakenOver`` (lost to another
process) and ``JournalStoreDown`` (unreachable: an ``OSError``, so a flush keeps its lines).
"""

from __future__ import annotations

from pathlib import Path


class JournalError(Exception):
    """Base class of every journal failure."""


class JournalLocked(JournalError):
    """Another writer (this process or another one) holds the session's lock."""

    def __init__(self, session_id: str, lock_path: Path, holder_pid: int | None) -> None:
        holder = f"pid {holder_pid}" if holder_pid is not None else "an unknown process"
        super().__init__(
            f"session {session_id!r} is already open by another writer ({holder}; lock {lock_path})"
        )
        self.session_id = session_id
        self.lock_path = lock_path
        self.holder_pid = holder_pid


class JournalExists(JournalError):
    def __init__(self, session_id: str, path: Path) -> None:
        super().__init__(f"session {session_id!r} already has a journal at {path}")
        self.session_id = session_id
        self.path = path


class JournalNotFound(JournalError):
    def __init__(self, session_id: str, path: Path) -> None:
        super().__init__(f"session {session_id!r} has no journal at {path}")
        self.session_id = session_id
        self.path = path


class JournalCorrupt(JournalError):
    """The journal cannot be loaded as it is; the file was left untouched.

    ``seq`` is the seq the first bad line should have carried (``None`` for the header) and
    ``offset`` the byte offset where that line starts.
    """

    def __init__(
        self, reason: str, *, offset: int, seq: int | None, path: Path | None = None
    ) -> None:
        where = f"seq {seq} at byte {offset}" if seq is not None else f"header at byte {offset}"
        prefix = f"{path}: " if path is not None else ""
        super().__init__(f"{prefix}journal corrupt: {where}: {reason}")
        self.reason = reason
        self.offset = offset
        self.seq = seq
        self.path = path

    def at(self, path: Path) -> JournalCorrupt:
        """The same error, naming the file."""
        return JournalCorrupt(self.reason, offset=self.offset, seq=self.seq, path=path)


class JournalFlushError(JournalError):
    """A flush failed; the lines are still admitted in memory and the next flush retries them."""

    def __init__(self, session_id: str, error: str, unflushed: int) -> None:
        super().__init__(
            f"journal flush failed for session {session_id!r}: {error} ({unflushed} lines not durable)"
        )
        self.session_id = session_id
        self.error = error
        self.unflushed = unflushed


class JournalClosed(JournalError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"the journal of session {session_id!r} is closed")
        self.session_id = session_id


class JournalLeased(JournalLocked):
    """A session of a shared store (PostgreSQL) is open in another live process, maybe on
    another host: its lease has not run out and its connection is there."""

    def __init__(self, session_id: str, owner: str, store: str) -> None:
        JournalError.__init__(
            self,
            f"session {session_id!r} is open in another acp-agent process ({owner}, journal "
            f"store {store}); only one process at a time may write a session: close it there "
            "(or stop that process), then load it again; or fork it to go on with a copy",
        )
        self.session_id = session_id
        self.lock_path = Path(store)
        self.holder_pid = None
        self.owner = owner


class JournalTakenOver(JournalFlushError):
    """Another process took the session over (its fencing epoch is newer than ours): this
    process writes nothing more to it. Raised by every flush and check after the loss."""

    def __init__(self, session_id: str, epoch: int, unflushed: int = 0) -> None:
        JournalError.__init__(
            self,
            f"session {session_id!r} was taken over by another process (our lease epoch {epoch} "
            "is no longer the session's); this process writes nothing more to it: load it again "
            "to go on here once the other process has closed it",
        )
        self.session_id = session_id
        self.error = str(self)
        self.unflushed = unflushed
        self.epoch = epoch


class JournalStoreDown(OSError):
    """The journal store (the PostgreSQL server) cannot be reached; nothing was written."""

    def __init__(self, store: str, detail: str) -> None:
        super().__init__(f"the journal store {store} is unreachable: {detail}")
        self.store = store
        self.detail = detail
