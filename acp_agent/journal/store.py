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

Which store a state dir uses is decided once per process (``use_store``: the ``--journal-store``
flag, ``ACP_AGENT_JOURNAL_STORE``, ``[journal] store``, in that order); ``journal_store`` is how
everything else finds it, so the session layer's functions keep taking a state dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import urlsplit, urlunsplit

import msgspec

from acp_agent.journal.events import SessionHeader
from acp_agent.journal.files import FileFactory
from acp_agent.journal.lock import Holder
from acp_agent.journal.opening import LoadedJournal
from acp_agent.journal.writer import JournalWriter

FILE_STORE: Final = "file"
STORE_ENV: Final = "ACP_AGENT_JOURNAL_STORE"
POSTGRES_INSTALL_HINT: Final = "pip install 'acp-agent[postgres]'"
"""How to get the PostgreSQL store's driver: the one place that names the distribution."""
POSTGRES_SCHEMES: Final = ("postgresql", "postgres")


class StoreConfigError(ValueError):
    """A journal store URL that cannot be used (the message says why and what to do)."""


class StoredSession(msgspec.Struct, frozen=True):
    """One session as listed: its header line (as in the journal) and its last change."""

    session_id: str
    header_line: bytes
    updated_ns: int


class JournalStore(Protocol):
    @property
    def label(self) -> str:
        """``file``, or the store's URL without its password (for messages and logs)."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other processes, on other hosts too, may serve this store's sessions."""
        ...

    async def create(self, header: SessionHeader, file_factory: FileFactory | None) -> JournalWriter:
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


_stores: dict[Path, JournalStore] = {}


def journal_store(state_dir: Path) -> JournalStore:
    """The store of ``state_dir``: the one ``use_store`` chose, else the files under it."""
    store = _stores.get(state_dir)
    if store is None:
        from acp_agent.journal.filestore import FileStore

        store = _stores[state_dir] = FileStore(state_dir)
    return store


def use_store(state_dir: Path, url: str | None) -> JournalStore:
    """Choose the store of ``state_dir`` for this process (``StoreConfigError``)."""
    store = _stores[state_dir] = open_store(state_dir, url)
    return store


def forget_store(state_dir: Path) -> None:
    """Drop the choice (tests; a process uses one store per state dir for its life)."""
    _stores.pop(state_dir, None)


def open_store(state_dir: Path, url: str | None) -> JournalStore:
    if url is None or url == FILE_STORE:
        from acp_agent.journal.filestore import FileStore

        return FileStore(state_dir)
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in POSTGRES_SCHEMES:
        raise StoreConfigError(
            f"unknown journal store {redacted(url)!r}: expected {FILE_STORE!r} or a libpq URI "
            "(postgresql://USER@/DB?host=/socket/dir or postgresql://USER:PASS@HOST:PORT/DB)"
        )
    try:
        from acp_agent.journal.postgres.store import PgStore
    except ImportError as exc:
        raise StoreConfigError(
            f"the journal store {redacted(url)} needs the postgres extra ({exc.name} is "
            f"missing): {POSTGRES_INSTALL_HINT}"
        ) from exc
    return PgStore(state_dir, url)


def store_url(flag: str | None, config: dict[str, Any], config_path: Path | None) -> str | None:
    """The store URL: the flag (which carries ``ACP_AGENT_JOURNAL_STORE`` as its default),
    else ``[journal] store`` of the config file, else ``None`` (files)."""
    if flag:
        return flag
    table = config.get("journal", {})
    if not isinstance(table, dict):
        raise StoreConfigError(f"{config_path}: [journal] must be a table")
    value = table.get("store")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise StoreConfigError(f"{config_path}: journal.store must be a non-empty string")
    return value


def redacted(url: str) -> str:
    """``url`` without its password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
