"""A session's line to its client, which a session keeps when its connection goes and a client
that attaches takes over (docs/contract.md §13, ``remote/parking.py``).

Without a detach grace a session speaks to its ``Connection`` directly; with one, through a
``ClientLine``, which has what the observer and the tools' client services use of a connection
(``notify``, ``notify_all``, ``request``, ``post_request``) and forwards it to the connection
attached now:

- detached (no connection): notifications are dropped (the session's ``Cursor`` log keeps what
  a reattaching client will be sent), requests wait for a connection;
- attached while the attaching client's replay is sent (``held``): notifications wait in
  ``_held``; at ``release`` those the replay did not already carry (by their ``seq``) are sent,
  in order, and then everything goes straight through. So a client that attaches mid-turn gets
  its replay, then the live updates, with no duplicate and no gap;
- a request in flight when the line moves to another connection (the old one dropped, or the
  new client took the session over) is sent again to the new one: a permission request pending
  at the drop is asked of the client that attaches. One that gets no connection waits until
  the turn is cancelled (the grace's end cancels it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import anyio

from acp_agent.acp.cursor import seq_of
from acp_agent.acp.schema import SessionNotification
from acp_agent.errors import WireClosed
from acp_agent.logs import get_logger
from acp_agent.transport.connection import Connection

log = get_logger("acp_agent.acp")

T = TypeVar("T")


class ClientLine:
    def __init__(self, conn: Connection) -> None:
        self.home = conn
        """The connection the session was opened on (its client terminals' ledger)."""
        self.conn: Connection | None = conn
        self._moved = anyio.Event()
        """Set (and replaced) whenever the line moves: in-flight requests are sent again."""
        self._changed = anyio.Event()
        """Set (and replaced) whenever the line moves or is released."""
        self._held: list[tuple[str, object]] | None = None
        self._in_flight: set[anyio.CancelScope] = set()
        """The scopes of the requests waiting for an answer on the current connection."""
        self._high = -1
        """The greatest update ``seq`` sent on the current connection."""

    @property
    def held(self) -> bool:
        return self._held is not None

    def attach(self, conn: Connection | None, *, hold: bool = False) -> None:
        """Speak to ``conn`` from now on (``None``: detached); ``hold``: until ``release``."""
        self.conn = conn
        self._high = -1
        self._held = [] if hold and conn is not None else None
        for scope in self._in_flight:
            scope.cancel()
        self._moved.set()
        self._moved = anyio.Event()
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def send_replay(self, method: str, block: Sequence[SessionNotification]) -> None:
        """A block of the attaching client's replay: straight to the connection, held or not."""
        if self.conn is None or not block:
            return
        self._high = max(self._high, seq_of(block[-1].update))
        await self.conn.notify_all(method, block)

    async def release(self) -> None:
        """Send what waited while held (what the replay carried left out), then go live."""
        held, self._held = self._held or [], None
        for method, params in held:
            await self.notify(method, params)
        self._wake()

    async def notify(self, method: str, params: object = None, *, urgent: bool = False) -> None:
        if self._held is not None:
            self._held.append((method, params))
            return
        if self.conn is None:
            return
        if isinstance(params, SessionNotification):
            seq = seq_of(params.update)
            if seq <= self._high:
                return  # the replay carried it
            self._high = seq
        await self.conn.notify(method, params, urgent=urgent)

    async def notify_all(self, method: str, params: Sequence[object]) -> None:
        for one in params:
            await self.notify(method, one)

    async def request(self, method: str, params: object, result_type: type[T]) -> T:
        """Sent on the connection attached now (waiting for one), and again on the next one
        if the line moves before the answer (``attach`` cancels the wait: ``_in_flight``)."""
        while True:
            conn, moved = await self._live()
            with anyio.CancelScope() as scope:
                self._in_flight.add(scope)
                try:
                    return await conn.request(method, params, result_type)
                except WireClosed:
                    if not moved.is_set():
                        await moved.wait()  # the connection went: wait for the next one
                finally:
                    self._in_flight.discard(scope)
            log.info("client_request_sent_again", method=method)

    async def _live(self) -> tuple[Connection, anyio.Event]:
        while self.conn is None or self._held is not None:
            await self._changed.wait()
        return self.conn, self._moved

    def post_request(self, method: str, params: object) -> bool:
        return self.conn.post_request(method, params) if self.conn is not None else False


Peer = Connection | ClientLine
"""What a session's observer and its tools' client services speak to."""
