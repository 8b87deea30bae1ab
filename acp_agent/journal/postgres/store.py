"""``PgStore``: the ``JournalStore`` (``store.py``) on PostgreSQL.

Opening a session takes it (``_take``): the advisory lock ``lock_key(id)`` on a connection of
its own, then ``epoch = epoch + 1`` and the lease, in one transaction. The lock is free when the
previous owner closed the session or its connection ended (the process died): the session is
taken at once. When the lock is held, the owner is refused (``JournalLeased``) while its lease
runs; once the lease has run out (the owner is stopped or cut off) its connection is ended
(``pg_terminate_backend``) and the session taken over: the old owner's writes are fenced off
by the epoch from then on (``lease.py``). A lock still held just after its owner died (its
backend has not noticed yet) is waited for a moment (``HANDOVER_WAIT_S``) before refusing.

Reads (``read``, ``sessions``, ``holder``) take nothing: they run on the store's own
connection, opened again if it broke. ``read`` returns the bytes a journal file would hold, so
``parse_journal`` checks every line's checksum and seq as it does for a file. Side files
(titles, settings, the archive flag) stay in the local session directory.

``ACP_AGENT_JOURNAL_LEASE_SECONDS`` (default 10) is the lease's length: how long a stopped
owner keeps a session from others, and a third of it how often the lease is renewed.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

import anyio
import psycopg

from acp_agent.journal.errors import (
    JournalCorrupt,
    JournalExists,
    JournalLeased,
    JournalNotFound,
)
from acp_agent.journal.events import SessionHeader
from acp_agent.journal.files import FileFactory, make_private_dirs, replace_file
from acp_agent.journal.format import encode_header
from acp_agent.journal.lock import Holder
from acp_agent.journal.opening import LoadedJournal
from acp_agent.journal.paths import session_dir, validate_session_id
from acp_agent.journal.postgres.lease import RENEWER, Conn, Lease, wait_for_lock
from acp_agent.journal.postgres.schema import connect, down, ensure_schema, lock_key
from acp_agent.journal.postgres.sink import PgSink
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.store_choice import redacted
from acp_agent.journal.stored import SIDE_FILES, StoredSession
from acp_agent.journal.writer import JournalWriter
from acp_agent.logs import get_logger

log = get_logger(__name__)

T = TypeVar("T")

LEASE_ENV: Final = "ACP_AGENT_JOURNAL_LEASE_SECONDS"
DEFAULT_LEASE_S: Final = 10.0
HANDOVER_WAIT_S: Final = 1.0
FENCE_WAIT_S: Final = 10.0

TAKE = (
    "UPDATE acp_agent_sessions SET epoch = epoch + 1, owner = %s,"
    " owner_backend = pg_backend_pid(),"
    " lease_until = clock_timestamp() + make_interval(secs => %s) WHERE id = %s RETURNING epoch"
)
INSERT = (
    "INSERT INTO acp_agent_sessions (id, header, epoch, owner, owner_backend, lease_until)"
    " VALUES (%s, %s, 1, %s, pg_backend_pid(), clock_timestamp() + make_interval(secs => %s))"
    " ON CONFLICT (id) DO NOTHING RETURNING epoch"
)
OWNERSHIP = (
    "SELECT owner, owner_backend, coalesce(lease_until < clock_timestamp(), true)"
    " FROM acp_agent_sessions WHERE id = %s"
)
EVENTS = "SELECT line FROM acp_agent_events WHERE session_id = %s ORDER BY seq"
KEEP_SIDE = (
    "INSERT INTO acp_agent_side_files (session_id, name, data) VALUES (%s, %s, %s)"
    " ON CONFLICT (session_id, name) DO UPDATE SET data = EXCLUDED.data"
)
DROP_SIDE = "DELETE FROM acp_agent_side_files WHERE session_id = %s AND name = %s"
LISTING = (
    "SELECT s.id, s.header, (extract(epoch FROM s.updated_at) * 1e9)::bigint, t.data,"
    " a.session_id IS NOT NULL FROM acp_agent_sessions s"
    " LEFT JOIN acp_agent_side_files t ON t.session_id = s.id AND t.name = 'title'"
    " LEFT JOIN acp_agent_side_files a ON a.session_id = s.id AND a.name = 'archived'"
)


def lease_seconds() -> float:
    raw = os.environ.get(LEASE_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_LEASE_S
    except ValueError:
        value = DEFAULT_LEASE_S
    return value if value > 0 else DEFAULT_LEASE_S


def me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class PgStore:
    def __init__(self, state_dir: Path, url: str) -> None:
        self.state_dir = state_dir
        self.url = url
        self.ttl = lease_seconds()
        self._label = redacted(url)
        self._conn: Conn | None = None
        self._mutex = threading.Lock()
        self._schema_ready = False

    @property
    def label(self) -> str:
        return self._label

    @property
    def shared(self) -> bool:
        return True

    # -- taking sessions --------------------------------------------------------------------

    async def create(
        self, header: SessionHeader, file_factory: FileFactory | None
    ) -> JournalWriter:
        with anyio.CancelScope(shield=True):
            writer = await anyio.to_thread.run_sync(self._create, header)
        return writer

    async def open(
        self, session_id: str, file_factory: FileFactory | None
    ) -> tuple[JournalWriter, LoadedJournal]:
        with anyio.CancelScope(shield=True):
            opened = await anyio.to_thread.run_sync(self._open, session_id)
        return opened

    def _create(self, header: SessionHeader) -> JournalWriter:
        make_private_dirs(session_dir(self.state_dir, header.id))
        lease, _ = self._session(header.id, lambda conn: (self._insert(conn, header), None))
        return JournalWriter(header.id, PgSink(lease, 0), lease, durable_seq=0)

    def _insert(self, conn: Conn, header: SessionHeader) -> int:
        if not wait_for_lock(conn, lock_key(header.id), 0):
            raise JournalExists(header.id, Path(self._label))
        with conn.transaction():
            row = conn.execute(
                INSERT, (header.id, encode_header(header), me(), self.ttl)
            ).fetchone()
        if row is None:
            raise JournalExists(header.id, Path(self._label))
        log.info("journal_session_created", session_id=header.id, store=self._label)
        return int(row[0])

    def _open(self, session_id: str) -> tuple[JournalWriter, LoadedJournal]:
        make_private_dirs(session_dir(self.state_dir, session_id))

        def take(conn: Conn) -> tuple[int, LoadedJournal]:
            epoch = self._take(conn, session_id)
            loaded = self._load(conn, session_id)
            self._lay_down_side_files(conn, session_id)
            return epoch, loaded

        lease, loaded = self._session(session_id, take)
        durable = len(loaded.entries)
        return JournalWriter(session_id, PgSink(lease, durable), lease, durable), loaded

    def _session(self, session_id: str, take: Callable[[Conn], tuple[int, T]]) -> tuple[Lease, T]:
        """A connection of the session's own, ``take`` on it (the epoch it set, and what else
        it read), and the lease on that connection, counted from before it was taken."""
        started = time.monotonic()
        conn = connect(self.url, self._label)
        try:
            self._ready(conn)
            epoch, taken = take(conn)
        except psycopg.Error as exc:
            conn.close()
            raise down(self._label, exc) from exc
        except BaseException:
            conn.close()
            raise
        lease = Lease(self.url, self._label, self.ttl, session_id, conn, epoch, started)
        RENEWER.add(lease)
        return lease, taken

    def _take(self, conn: Conn, session_id: str) -> int:
        row = conn.execute(OWNERSHIP, (session_id,)).fetchone()
        if row is None:
            raise JournalNotFound(session_id, Path(self._label))
        owner, backend, expired = row
        key = lock_key(session_id)
        if not wait_for_lock(conn, key, 0 if expired else HANDOVER_WAIT_S):
            if not expired:
                raise JournalLeased(session_id, str(owner), self._label)
            # The owner is there but has stopped renewing: end its connection, fence it out.
            log.warning("journal_lease_expired", session_id=session_id, owner=owner)
            if backend is not None:
                conn.execute("SELECT pg_terminate_backend(%s, 5000)", (backend,))
            if not wait_for_lock(conn, key, FENCE_WAIT_S):
                raise JournalLeased(session_id, str(owner), self._label)
        with conn.transaction():
            taken = conn.execute(TAKE, (me(), self.ttl, session_id)).fetchone()
        if taken is None:
            raise JournalNotFound(session_id, Path(self._label))
        epoch = int(taken[0])
        if owner is not None:
            log.info("journal_session_taken_over", session_id=session_id, previous=owner)
        log.info("journal_session_taken", session_id=session_id, epoch=epoch)
        return epoch

    def _load(self, conn: Conn, session_id: str) -> LoadedJournal:
        parsed = parse_journal(self._bytes(conn, session_id))
        if parsed.header.id != session_id:
            reason = f"header names session {parsed.header.id!r}, not {session_id!r}"
            raise JournalCorrupt(reason, offset=0, seq=None)
        if parsed.tail is not None:  # rows are written whole: no crash leaves a torn one
            tail = parsed.tail
            raise JournalCorrupt(tail.reason, offset=tail.offset, seq=tail.seq)
        return LoadedJournal(parsed.header, parsed.entries, None)

    def _lay_down_side_files(self, conn: Conn, session_id: str) -> None:
        """This host's side files of the session as the store keeps them (the last host to
        write one wins; one the store has not got is removed here)."""
        directory = session_dir(self.state_dir, session_id)
        rows = conn.execute(
            "SELECT name, data FROM acp_agent_side_files WHERE session_id = %s", (session_id,)
        ).fetchall()
        kept = {str(name): bytes(data) for name, data in rows}
        for name in SIDE_FILES:
            if name in kept:
                replace_file(directory, name, kept[name])
            else:
                (directory / name).unlink(missing_ok=True)

    def keep_side_file(self, session_id: str, name: str, data: bytes | None) -> None:
        if data is None:
            self._run(lambda conn: conn.execute(DROP_SIDE, (session_id, name)))
        else:
            self._run(lambda conn: conn.execute(KEEP_SIDE, (session_id, name, data)))

    # -- reading ----------------------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        validate_session_id(session_id)
        row = self._run(
            lambda c: c.execute(
                "SELECT 1 FROM acp_agent_sessions WHERE id = %s", (session_id,)
            ).fetchone()
        )
        return row is not None

    def read(self, session_id: str) -> bytes:
        validate_session_id(session_id)
        return self._run(lambda conn: self._bytes(conn, session_id))

    def _bytes(self, conn: Conn, session_id: str) -> bytes:
        with conn.transaction():  # one snapshot: the header and every event
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = conn.execute(
                "SELECT header FROM acp_agent_sessions WHERE id = %s", (session_id,)
            ).fetchone()
            if row is None:
                raise JournalNotFound(session_id, Path(self._label))
            with conn.cursor(binary=True) as cursor:
                lines = [r[0] for r in cursor.execute(EVENTS, (session_id,))]
        return b"".join([bytes(row[0]), *map(bytes, lines)])

    def sessions(self) -> list[StoredSession]:
        rows = self._run(lambda c: c.execute(LISTING).fetchall())
        return [
            StoredSession(
                str(r[0]),
                bytes(r[1]),
                int(r[2]),
                bytes(r[3]).decode("utf-8", "replace") if r[3] is not None else None,
                bool(r[4]),
            )
            for r in rows
        ]

    def holder(self, session_id: str) -> Holder | None:
        key = lock_key(session_id)

        def probe(conn: Conn) -> Holder | None:
            row = conn.execute(OWNERSHIP, (session_id,)).fetchone()
            if row is None or not _locked(conn, key):
                return None
            return Holder(pid=None, owner=str(row[0]) if row[0] is not None else None)

        return self._run(probe)

    # -- deleting ---------------------------------------------------------------------------

    def delete(self, session_id: str) -> None:
        validate_session_id(session_id)
        conn = connect(self.url, self._label)
        try:
            self._ready(conn)
            self._take(conn, session_id)
            with conn.transaction():
                conn.execute("DELETE FROM acp_agent_sessions WHERE id = %s", (session_id,))
        except psycopg.Error as exc:
            raise down(self._label, exc) from exc
        finally:
            conn.close()  # drops the lock
        shutil.rmtree(session_dir(self.state_dir, session_id), ignore_errors=True)
        log.info("journal_session_deleted", session_id=session_id, store=self._label)

    # -- the store's own connection ---------------------------------------------------------

    def close(self) -> None:
        with self._mutex:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _ready(self, conn: Conn) -> None:
        if not self._schema_ready:
            ensure_schema(conn)
            self._schema_ready = True

    def _run(self, fn: Callable[[Conn], T]) -> T:
        """``fn`` on the store's connection; a broken one is opened again, once."""
        with self._mutex:
            for attempt in range(2):
                conn = self._conn
                if conn is None or conn.broken or conn.closed:
                    conn = self._conn = connect(self.url, self._label)
                try:
                    self._ready(conn)
                    return fn(conn)
                except psycopg.Error as exc:
                    if not conn.broken or attempt:
                        raise down(self._label, exc) from exc
                    self._conn = None
            raise AssertionError("unreachable")


def _locked(conn: Conn, key: int) -> bool:
    """Whether some connection holds the advisory lock ``key`` (taken and given back at once)."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    if row is not None and row[0]:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return False
    return True
