"""One session, one driving connection: which connection of the process holds which session.

Each connection has its own ``Sessions`` (its observer projects onto *its* wire, its tools ask
*its* client), over the one state directory; a session outlives its connection through its
journal. The journal lock (``journal/lock.py``, a ``flock`` per open) already keeps a second
``Sessions`` from opening a session another one holds; ``Claims`` adds what the lock cannot know:

- a ``session/load`` (or resume, or fork's child) of a session held by a *live* connection is
  refused at once, ``SessionUnavailable`` (-32603, ``data.reason: "journal_locked"``) with a
  message saying another connection drives it. Refusing, rather than taking over, keeps the
  rule of stdio: the editor that drives a session is never cut off by another one.
- one held by a connection that is *dropping* (its client went away: its turns are being
  cancelled, its sessions closed) is opened once that close is over, so a client that
  reconnects at once and loads its session gets it, not a refusal (``RELEASE_WAIT_S`` at most:
  the wait holds the loading connection's reader, like any ``session/load``).
- with a detach grace (docs/contract.md §13), a session *parked* by a dropped connection
  (``parking.py``), or held by a live connection that is *detached* (HTTP: no stream open), is
  taken over at once by the ``session/load`` or ``session/resume`` of it (``_take_over``): this
  registry adopts it (``Sessions.adopt``) and its ``ClientLine`` moves here, held until the
  attach's replay and answer are sent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from acp_agent.acp.line import ClientLine
from acp_agent.acp.observer import AcpObserver
from acp_agent.journal.errors import JournalLocked
from acp_agent.journal.events import SessionHeader
from acp_agent.journal.writer import JournalWriter
from acp_agent.logs import get_logger
from acp_agent.session.errors import SessionUnavailable
from acp_agent.session.opening import Opened
from acp_agent.session.service import Session, Sessions
from acp_agent.session.wiring import Wiring
from acp_agent.transport.connection import Connection

if TYPE_CHECKING:
    from acp_agent.remote.parking import Parking

log = get_logger("acp_agent.remote")

RELEASE_WAIT_S = 5.0
"""How long a load waits for a dropping connection to let go of the session (its turns get
``process.life.SIGNAL_GRACE_S`` to end): past it, one stuck in a tool's thread, the load is refused."""


class Holder:
    """One connection, as the claims see it."""

    def __init__(self, name: str, detached: Callable[[], bool] = lambda: False) -> None:
        self.name = name
        self.dropping = False
        self.released = anyio.Event()
        """Set once every session the connection held is closed (its journals released)."""
        self.detached = detached
        """Whether the connection is live but detached (HTTP: no stream open), so that its
        sessions are taken over by the next connection that loads or resumes them."""
        self.sessions: ConnectionSessions | None = None


class Claims:
    def __init__(self, parking: Parking | None = None) -> None:
        self._holders: dict[str, Holder] = {}
        self.parking = parking
        """The sessions whose connection dropped while a turn ran (``--detach-grace``)."""

    def holder(self, session_id: str) -> Holder | None:
        return self._holders.get(session_id)

    def claim(self, session_id: str, holder: Holder) -> None:
        self._holders[session_id] = holder

    def release(self, session_id: str, holder: Holder) -> None:
        if self._holders.get(session_id) is holder:
            del self._holders[session_id]

    def release_all(self, holder: Holder) -> None:
        for session_id in [s for s, h in self._holders.items() if h is holder]:
            del self._holders[session_id]
        holder.released.set()


class HeldElsewhere(SessionUnavailable):
    """A session another live connection of this process drives."""

    def __init__(self, session_id: str, path: Path) -> None:
        super().__init__(session_id, JournalLocked(session_id, path, os.getpid()))
        self.args = (
            f"session {session_id!r} is driven by another connection to this agent; close it "
            "there (or let that client disconnect) and load it again, or fork it "
            "(session/fork only reads it)",
        )


class ConnectionSessions(Sessions[AcpObserver]):
    """The sessions of one connection, claimed in the process's ``Claims``."""

    def __init__(
        self,
        state_dir: Path,
        tg: TaskGroup,
        wiring: Wiring[AcpObserver],
        claims: Claims,
        holder: Holder,
        conn: Connection | None = None,
    ) -> None:
        super().__init__(state_dir, tg, wiring)
        self._claims = claims
        self._holder = holder
        self._conn = conn
        holder.sessions = self

    async def open(self, session_id: str) -> Session[AcpObserver]:
        taken = self._take_over(session_id)
        if taken is not None:
            return taken
        await self._wait_free(session_id)
        return await super().open(session_id)

    def _take_over(self, session_id: str) -> Session[AcpObserver] | None:
        """A session parked by a dropped connection, or held by a detached one, made this
        connection's at once: its line moves here, held until the attach's replay is sent
        (``AcpObserver.replay`` / ``attached`` release it)."""
        if self._conn is None or self.find(session_id) is not None:
            return None
        parking = self._claims.parking
        session = parking.take(session_id) if parking is not None else None
        if session is None:
            session = self._from_detached(session_id)
        if session is None:
            return None
        line = session.observer.conn
        if isinstance(line, ClientLine):
            line.attach(self._conn, hold=True)
        self.adopt(session)
        self._claims.claim(session_id, self._holder)
        return session

    def _from_detached(self, session_id: str) -> Session[AcpObserver] | None:
        """The session, handed over by the live but detached connection holding it."""
        other = self._claims.holder(session_id)
        if other is None or other is self._holder or other.dropping or other.sessions is None:
            return None
        session = other.sessions.find(session_id) if other.detached() else None
        if session is not None and isinstance(session.observer.conn, ClientLine):
            other.sessions.hand_over(session)
            log.info("session_taken_over", session_id=session_id, connection=other.name)
            return session
        return None

    async def _wait_free(self, session_id: str) -> None:
        other = self._claims.holder(session_id)
        if other is None or other is self._holder:
            return
        if other.dropping:
            with anyio.move_on_after(RELEASE_WAIT_S):
                await other.released.wait()
        if not other.released.is_set():
            raise HeldElsewhere(session_id, self.state_dir / "sessions" / session_id)

    async def _start(
        self, header: SessionHeader, writer: JournalWriter, opened: Opened | None = None
    ) -> Session[AcpObserver]:
        session = await super()._start(header, writer, opened)
        self._claims.claim(session.id, self._holder)
        return session

    def close(self, session: Session[AcpObserver]) -> Coroutine[Any, Any, None]:
        closing = super().close(session)

        async def close_and_release() -> None:
            await closing
            if self.find(session.id) is None:
                self._claims.release(session.id, self._holder)

        return close_and_release()
