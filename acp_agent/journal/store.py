"""The journal store seam: where a state dir's session journals live.

Theory of operation
-------------------
A ``JournalStore`` is the smallest set of operations the session layer, ``acp-agent journal``
and ``doctor`` need of journals: create one (a ``JournalWriter`` holding the session), open one
(the writer and its history), read one as journal bytes without taking it, list them, ask who
holds one, delete one. Two stores implement it:

- ``file`` (the default, ``filestore.py``): ``<state>/sessions/<id>/journal.jsonl`` as ever,
  locked per session with an OFD lock (``lock.py``).
- ``postgresql://…`` (``postgres/``; the extra ``postgres``): one row per event in PostgreSQL,
  one transaction per barrier, a session owned by a lease with a fencing epoch, sessions shared
  by every process (on any host) that uses the database.

Both hand out the same bytes: ``read`` returns what a journal file would hold (header line,
then every event line, checksums included), so the reader, ``journal check`` and the invariant
run unchanged on either. Side files that are caches or per-host state (``title``,
``settings.json``, ``archived``) stay in ``<state>/sessions/<id>/`` with either store.

Which store a state dir uses is decided once per process (``store_choice.py``: the
``--journal-store`` flag, ``ACP_AGENT_JOURNAL_STORE``, ``[journal] store``, in that order);
``journal_store`` is how everything else finds it, so the session layer's functions keep taking
a state dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from acp_agent.journal.events import SessionHeader
from acp_agent.journal.files import FileFactory
from acp_agent.journal.lock import Holder
from acp_agent.journal.opening import LoadedJournal
from acp_agent.journal.store_choice import (
    checked_url,
    chosen,
    forget_choice,
    is_postgres,
    missing_driver,
    remember_choice,
)
from acp_agent.journal.stored import StoredSession
from acp_agent.journal.writer import JournalWriter

__all__ = ["JournalStore", "StoredSession", "forget_store", "journal_store", "use_store"]


class JournalStore(Protocol):
    @property
    def label(self) -> str:
        """``file``, or the store's URL without its password (for messages and logs)."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other processes, on other hosts too, may serve this store's sessions."""
        ...

    async def create(
        self, header: SessionHeader, file_factory: FileFactory | None
    ) -> JournalWriter:
        """A new journal holding just ``header``, durable; ``JournalExists`` if the id is taken."""
        ...

    async def open(
        self, session_id: str, file_factory: FileFactory | None
    ) -> tuple[JournalWriter, LoadedJournal]:
        """Take the session and load it: ``JournalNotFound``, ``JournalLocked`` (held
        elsewhere), ``JournalCorrupt``."""
        ...

    def exists(self, session_id: str) -> bool: ...

    def read(self, session_id: str) -> bytes:
        """The journal's bytes as a file would hold them, without taking the session."""
        ...

    def sessions(self) -> list[StoredSession]: ...

    def holder(self, session_id: str) -> Holder | None:
        """Who has the session open right now (``None``: nobody)."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove the session durably; ``JournalLocked`` when another process has it open."""
        ...

    def keep_side_file(self, session_id: str, name: str, data: bytes | None) -> None:
        """A shared store's copy of a side file (``stored.SIDE_FILES``; ``None``: removed),
        for the host that opens the session next; nothing for files (they are the side files)."""
        ...

    def close(self) -> None:
        """Give back what the store holds itself (not the sessions' writers)."""
        ...


def keep_side_file(directory: Path, name: str, data: bytes | None) -> None:
    """``JournalStore.keep_side_file`` for the session directory ``<state>/sessions/<id>``."""
    store = journal_store(directory.parent.parent)
    if store.shared:
        store.keep_side_file(directory.name, name, data)


_stores: dict[Path, JournalStore] = {}


def journal_store(state_dir: Path) -> JournalStore:
    """The store of ``state_dir``: the one chosen at start-up (``store_choice.py``), opened on
    first use; the files under it when none was chosen."""
    store = _stores.get(state_dir)
    if store is None:
        store = _stores[state_dir] = open_store(state_dir, chosen(state_dir))
    return store


def forget_store(state_dir: Path) -> None:
    """Drop the store and the choice (tests; a process keeps one store per state dir)."""
    store = _stores.pop(state_dir, None)
    if store is not None:
        store.close()
    forget_choice(state_dir)


def open_store(state_dir: Path, url: str) -> JournalStore:
    if not is_postgres(checked_url(url)):
        from acp_agent.journal.filestore import FileStore

        return FileStore(state_dir)
    try:
        from acp_agent.journal.postgres.store import PgStore
    except ImportError as exc:
        raise missing_driver(url, exc.name) from exc
    return PgStore(state_dir, url)


def use_store(state_dir: Path, url: str) -> JournalStore:
    """Choose and open the store of ``state_dir`` now (a tool, a test)."""
    forget_store(state_dir)
    remember_choice(state_dir, checked_url(url))
    return journal_store(state_dir)
