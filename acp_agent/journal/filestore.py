"""The ``file`` journal store: ``<state>/sessions/<id>/journal.jsonl``, as it always was.

Every operation is what the session layer did with the files before the store seam
(``store.py``): the writer's ``create`` / ``open`` (``opening.py``), a lock-free read, listing
by header line and mtime, the OFD lock's holder (``lock.py``). Deleting renames the directory to
a tombstone ``sessions/.deleted-<id>-<random>`` under the session's lock (one atomic step: the
id is gone for every reader, and a name starting with ``.`` is no session id), fsyncs
``sessions/``, releases the lock and removes the tombstone; a crash before the rename leaves the
session whole, after it at worst a tombstone, which the next delete sweeps away.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Final

from acp_agent.journal.errors import JournalNotFound
from acp_agent.journal.events import SessionHeader
from acp_agent.journal.files import FileFactory, fsync_dir
from acp_agent.journal.lock import Holder, SessionLock, current_holder
from acp_agent.journal.opening import LoadedJournal
from acp_agent.journal.paths import SESSIONS_DIR, journal_path, session_dir, validate_session_id
from acp_agent.journal.store_choice import FILE_STORE
from acp_agent.journal.stored import StoredSession
from acp_agent.journal.writer import JournalWriter

TOMBSTONE_PREFIX: Final = ".deleted-"


class FileStore:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    @property
    def label(self) -> str:
        return FILE_STORE

    @property
    def shared(self) -> bool:
        return False

    async def create(
        self, header: SessionHeader, file_factory: FileFactory | None
    ) -> JournalWriter:
        directory = session_dir(self.state_dir, header.id)
        return await JournalWriter.create(directory, header, file_factory=file_factory)

    async def open(
        self, session_id: str, file_factory: FileFactory | None
    ) -> tuple[JournalWriter, LoadedJournal]:
        directory = session_dir(self.state_dir, session_id)
        return await JournalWriter.open(directory, file_factory=file_factory)

    def exists(self, session_id: str) -> bool:
        return journal_path(session_dir(self.state_dir, session_id)).is_file()

    def read(self, session_id: str) -> bytes:
        path = journal_path(session_dir(self.state_dir, session_id))
        try:
            return path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            raise JournalNotFound(session_id, path) from None

    def sessions(self) -> list[StoredSession]:
        try:
            names = os.listdir(self.state_dir / SESSIONS_DIR)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            item = self._listed(name)
            if item is not None:
                found.append(item)
        return found

    def _listed(self, name: str) -> StoredSession | None:
        """Just the header line and the mtime: listing never reads a journal further."""
        try:
            path = journal_path(session_dir(self.state_dir, name))
        except ValueError:  # not a session id (a tombstone, a stray file)
            return None
        try:
            with path.open("rb") as file:
                line = file.readline()
            updated = path.stat().st_mtime_ns
        except OSError:
            return None
        return StoredSession(name, line, updated)

    def holder(self, session_id: str) -> Holder | None:
        return current_holder(session_dir(self.state_dir, session_id))

    def delete(self, session_id: str) -> None:
        directory = session_dir(self.state_dir, validate_session_id(session_id))
        sessions = directory.parent
        lock = SessionLock.acquire(directory, session_id)  # JournalLocked: open elsewhere
        tombstone = sessions / f"{TOMBSTONE_PREFIX}{session_id}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(directory, tombstone)
            fsync_dir(sessions)
        finally:
            lock.release()
        sweep_tombstones(sessions)

    def keep_side_file(self, session_id: str, name: str, data: bytes | None) -> None:
        return None  # the side files are the session directory's own

    def close(self) -> None:
        return None


def sweep_tombstones(sessions: Path) -> None:
    """Remove what deletes left behind (this one's, and any a crash cut short)."""
    import shutil  # here: with bz2 and lzma, ~3 ms of a fresh process's first session/new

    for name in os.listdir(sessions):
        if name.startswith(TOMBSTONE_PREFIX):
            shutil.rmtree(sessions / name, ignore_errors=True)
    fsync_dir(sessions)
