"""The journal's errors. None of them is a wire error: the session and ACP layers map them.

``JournalLocked`` and ``JournalCorrupt`` are raised when a journal is opened, ``JournalFlushError``
when a flush fails (the lines stay admitted; see ``writer.py``), the rest on misuse.
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
