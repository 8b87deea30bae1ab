"""Owning a session in PostgreSQL: an advisory lock, a fencing epoch, a lease that is renewed.

Theory of operation
-------------------
A process that opens a session holds, on the session's own connection, the session-level
advisory lock ``lock_key(id)`` and the epoch it set on the session's row when it took it
(``store.py``: ``epoch = epoch + 1``). Two facts say the owner is there: the lock (PostgreSQL
drops it when the owner's connection ends: the process died, or closed the session) and the
lease (``lease_until``, renewed every third of ``ttl`` by ``Renewer`` and by every write). A
process that is alive but stopped (SIGSTOP, a VM paused, a partition PostgreSQL has not noticed)
keeps its lock but cannot renew its lease; once the lease has run out another opener ends the
stale connection (``pg_terminate_backend``) and takes the session over.

Fencing: every write (``sink.py``) and every renewal carries the epoch, inside its transaction
(``SELECT … WHERE id = $1 AND epoch = $2 FOR UPDATE``, ``UPDATE … WHERE id = $1 AND epoch =
$2``). A take-over bumps the epoch under the same row lock, so a write of the old owner either
committed before the take-over (and the new owner loads it) or finds no row and is refused:
two processes can never both append. The old owner then marks the lease ``lost``, logs
``journal_session_taken_over`` and refuses every later write and check with
``JournalTakenOver``; it never writes to the session again.

A broken connection (the database restarted, the network failed) is opened again on the next
use (at once, within the same call, when it was found broken): the advisory lock is taken
again (only our own previous connection may be ended to get it) and the epoch checked; while
the database cannot be reached every use fails with ``JournalStoreDown`` (an ``OSError``:
the writer keeps its lines and retries them). ``needs_check`` is true once the local copy of
the lease's end (``deadline``, counted from before the renewal was sent, so it is never later
than the database's) has passed: the session layer then confirms ownership (``verify``) before
it accepts more work, which is how a process resumed after SIGCONT learns it lost the session.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Final, TypeVar

import psycopg

from acp_agent.journal.errors import JournalClosed, JournalError, JournalTakenOver
from acp_agent.journal.postgres.schema import connect, down, lock_key
from acp_agent.logs import get_logger

log = get_logger(__name__)

T = TypeVar("T")
Conn = psycopg.Connection[tuple[Any, ...]]

RELOCK_WAIT_S: Final = 5.0

RENEW = (
    "UPDATE acp_agent_sessions SET lease_until = clock_timestamp() + make_interval(secs => %s),"
    " owner_backend = pg_backend_pid() WHERE id = %s AND epoch = %s RETURNING 1"
)
RELEASE = (
    "UPDATE acp_agent_sessions SET owner = NULL, owner_backend = NULL, lease_until = NULL"
    " WHERE id = %s AND epoch = %s"
)


def wait_for_lock(conn: Conn, key: int, seconds: float) -> bool:
    """Take the advisory lock ``key``, waiting at most ``seconds``; whether it was taken."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    if row is not None and row[0]:
        return True
    if seconds <= 0:  # a lock_timeout of 0 would mean "wait for ever"
        return False
    try:
        conn.execute(f"SET lock_timeout = '{int(seconds * 1000)}ms'")
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    except psycopg.errors.LockNotAvailable:
        return False
    finally:
        if not conn.broken:
            conn.execute("RESET lock_timeout")
    return True


class Lease:
    """This process's ownership of one session (the writer's ``Hold``)."""

    def __init__(
        self,
        url: str,
        label: str,
        ttl: float,
        session_id: str,
        conn: Conn,
        epoch: int,
        started: float,
    ) -> None:
        self.url = url
        self.label = label
        self.ttl = ttl
        self.session_id = session_id
        self.key = lock_key(session_id)
        self.epoch = epoch
        self.lost = False
        self._conn: Conn | None = conn
        self._backend = conn.info.backend_pid
        self._deadline = started + ttl
        self._mutex = threading.Lock()
        self._released = False
        self._log = log.bind(session_id=session_id, epoch=epoch)

    @property
    def backend(self) -> int:
        """The PostgreSQL backend pid of the session's connection (the lock's holder)."""
        return self._backend

    # -- the writer's Hold ------------------------------------------------------------------

    def needs_check(self) -> bool:
        return self.lost or time.monotonic() >= self._deadline

    def verify(self) -> None:
        self.run(lambda conn: None, renew=True)

    def release(self) -> None:
        """Give the session up: clear the lease (another opener need not wait for it to run
        out) and drop the lock. Best effort: a lock dies with its connection anyway."""
        RENEWER.discard(self)
        with self._mutex:
            if self._released:
                return
            self._released = True
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                if not self.lost and not conn.broken:
                    conn.execute(RELEASE, (self.session_id, self.epoch))
                    conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            except psycopg.Error as exc:
                self._log.warning("journal_lease_release_failed", error=str(exc))
            finally:
                conn.close()

    # -- using the session's connection -----------------------------------------------------

    def run(self, fn: Callable[[Conn], T], *, renew: bool = False) -> T:
        """``fn(conn)`` on the session's connection (opened again if it broke), the lease
        renewed first when asked. ``JournalTakenOver`` once lost; ``JournalStoreDown`` when the
        database cannot be reached (the next call tries again)."""
        with self._mutex:
            if self._released:  # closed here (a renewal that raced the close): no loss
                raise JournalClosed(self.session_id)
            if self.lost:
                raise self.taken_over()
            for attempt in range(2):
                started = time.monotonic()
                try:
                    conn = self._connection()
                    if renew:
                        self._renew(conn, started)
                    return fn(conn)
                except JournalTakenOver:
                    self._drop()
                    raise
                except psycopg.Error as exc:
                    broken = self._conn is not None and self._conn.broken
                    if broken:
                        self._drop()
                    if not broken or attempt:
                        raise down(self.label, exc) from exc
                    # The connection was gone before we used it (the server restarted, or
                    # ended it): once more on a new one, which checks the epoch first.
                    self._log.info("journal_store_connection_lost", error=str(exc))
            raise AssertionError("unreachable")

    def renewed(self, started: float) -> None:
        """A write renewed the lease (it sets ``lease_until`` in its transaction)."""
        self._deadline = max(self._deadline, started + self.ttl)

    def taken_over(self) -> JournalTakenOver:
        """Mark the lease lost (once, logged) and return the error to raise; ``run`` closes the
        connection once the error is out of any transaction."""
        if not self.lost:
            self.lost = True
            RENEWER.discard(self)
            self._log.warning(
                "journal_session_taken_over",
                message="another process took the session over; this one writes nothing more",
            )
        return JournalTakenOver(self.session_id, self.epoch)

    def _renew(self, conn: Conn, started: float) -> None:
        row = conn.execute(RENEW, (self.ttl, self.session_id, self.epoch)).fetchone()
        if row is None:
            raise self.taken_over()
        self._deadline = started + self.ttl

    def _connection(self) -> Conn:
        conn = self._conn
        if conn is not None and not conn.broken and not conn.closed:
            return conn
        conn = connect(self.url, self.label)
        try:
            self._relock(conn)
        except BaseException:
            conn.close()
            raise
        self._conn, self._backend = conn, conn.info.backend_pid
        self._log.info("journal_store_reconnected", backend=self._backend)
        return conn

    def _relock(self, conn: Conn) -> None:
        """Take the session's lock again on a new connection: refused (lost) if the session's
        epoch moved on; our own old connection, if PostgreSQL still has it, is ended first."""
        row = conn.execute(
            "SELECT epoch, owner_backend FROM acp_agent_sessions WHERE id = %s",
            (self.session_id,),
        ).fetchone()
        if row is None or row[0] != self.epoch:
            raise self.taken_over()
        held = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
        if held is not None and held[0]:
            return
        if row[1] == self._backend:
            conn.execute("SELECT pg_terminate_backend(%s, 5000)", (self._backend,))
        if not wait_for_lock(conn, self.key, RELOCK_WAIT_S):
            raise self.taken_over()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class Renewer:
    """One daemon thread renewing every open lease of the process, each third of its ttl."""

    def __init__(self) -> None:
        self._leases: weakref.WeakSet[Lease] = weakref.WeakSet()
        self._guard = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._period = 3600.0

    def add(self, lease: Lease) -> None:
        with self._guard:
            self._leases.add(lease)
            self._period = min(self._period, lease.ttl / 3)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="acp-journal-lease", daemon=True
                )
                self._thread.start()

    def discard(self, lease: Lease) -> None:
        with self._guard:
            self._leases.discard(lease)

    def _serve(self) -> None:
        while True:
            self._wake.wait(self._period)
            with self._guard:
                leases = list(self._leases)
            for lease in leases:
                self._renew(lease)

    @staticmethod
    def _renew(lease: Lease) -> None:
        try:
            lease.verify()
        except JournalError:
            pass  # taken over (logged by the lease), or closed meanwhile
        except OSError as exc:
            log.warning("journal_lease_renewal_failed", session_id=lease.session_id, error=str(exc))


RENEWER: Final = Renewer()
