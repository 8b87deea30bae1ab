"""Running sessions whose connection went: parked for ``--detach-grace`` seconds, for a client
that attaches with ``session/load`` or ``session/resume`` (docs/contract.md §13).

When a connection drops (``Hub.serve``'s end of input, not a signal), each of its sessions with
a running turn, or that ran one on it, is ``park``ed (so that a client that dropped just as its
turn ended resumes inside the turn's log, not from the journal's coarser numbering): its registry hands it over (``Sessions.hand_over``: its
connection's ending then neither cancels nor closes it), its line is detached (its updates are
dropped, its requests wait: ``acp/line.py``), and its turn goes on in the hub's task group. The
sessions without a running turn are closed as before.

A parked session is ``take``n by the first ``session/load`` or ``session/resume`` of it from
any connection (``ConnectionSessions.open``), which adopts it as its own; or, at the end of the
grace, its turn is cancelled and it is closed by the registry it came from (``turn/end``
reason ``cancelled``, journal flushed, lock released), as a drop did at once before. A turn
that ends while parked simply is in the history the next attach gets; the session stays
parked (its log kept) until the grace ends. At the process's end every parked session is
closed the same way (``close_all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from acp_agent.acp.line import ClientLine
from acp_agent.acp.observer import AcpObserver
from acp_agent.logs import get_logger
from acp_agent.session.service import Session, Sessions

log = get_logger("acp_agent.remote")


@dataclass
class Parked:
    session: Session[AcpObserver]
    home: Sessions[AcpObserver]
    """The registry it came from, which closes it if nobody takes it."""
    expiry: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class Parking:
    def __init__(self, grace: float, tg: TaskGroup) -> None:
        self.grace = grace
        self._tg = tg
        self._parked: dict[str, Parked] = {}

    def park(self, sessions: Sessions[AcpObserver]) -> list[str]:
        """Park every session of ``sessions`` that ran a turn (module docstring); their ids."""
        ids = []
        for session in sessions.all:
            line, observer = session.observer.conn, session.observer
            ran = observer.running_turn is not None or observer.cursor.holds_turns
            if not ran or not isinstance(line, ClientLine):
                continue
            sessions.hand_over(session)
            line.attach(None)
            parked = self._parked[session.id] = Parked(session, sessions)
            self._tg.start_soon(self._expire, parked)
            ids.append(session.id)
            log.info("session_parked", session_id=session.id, grace_s=self.grace)
        return ids

    def take(self, session_id: str) -> Session[AcpObserver] | None:
        parked = self._parked.pop(session_id, None)
        if parked is None:
            return None
        parked.expiry.cancel()
        log.info("session_unparked", session_id=session_id)
        return parked.session

    async def _expire(self, parked: Parked) -> None:
        with parked.expiry:
            await anyio.sleep(self.grace)
            log.info("detach_grace_ended", session_id=parked.session.id, grace_s=self.grace)
        if self._parked.get(parked.session.id) is parked:
            del self._parked[parked.session.id]
            await self._close(parked)

    async def _close(self, parked: Parked) -> None:
        """Cancel and close ``parked``, out of ``_parked`` already."""
        session, home = parked.session, parked.home
        await session.cancel()
        home.adopt(session)
        with anyio.CancelScope(shield=True):
            await home.close(session)

    async def close_all(self) -> None:
        """Cancel and close every parked session (the process ends)."""
        every, self._parked = list(self._parked.values()), {}
        async with anyio.create_task_group() as tg:
            for parked in every:
                parked.expiry.cancel()
                tg.start_soon(self._close, parked)
