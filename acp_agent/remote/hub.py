"""The listening process: every connection served like one stdio client, under the process's ``Life``.

Each connection, whatever its transport, is a byte source and sink (``framing.py``) served by
``process.serving.serve_sessions``, as stdio's one connection is: its own ``initialize`` and
capabilities, its own sessions' updates, agent→client requests back to it, its own writer (a
client that stops reading fills its own queue and nobody else's). What the connections share is
the process's: the ``Door`` (models, hooks, prompt config, the state directory), the ``Life``
(signals, deadline, forced exit) and the ``Claims`` of who drives which session.

Endings of one connection (``serve``):

- the client went away (end of input, a broken wire): ``Ending.DROP``. With ``--detach-grace``
  (``start``) its sessions that ran a turn are first parked (``parking.py``): their turns go
  on, in the listener's task group, for a client to attach to (docs/contract.md §13). Else, and
  for the rest: its running turns are cancelled (``turn/end`` reason ``cancelled``), its client terminals released, its sessions
  closed (journals flushed, locks released); they are loadable from any connection as soon as
  that is done (``claims.py``).
- a signal: it stops reading, its running prompts are answered ``cancelled`` on it, it is
  closed after its last frames.

Ending of the process (SIGTERM / SIGINT): the listeners stop accepting (``on_signal``), every
connection ends as above, journals are flushed, exit 0; past ``process.life.DEADLINE_S`` the
forced exit, within 3 s; a second signal exits at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from acp_agent.acp.observer import AcpObserver
from acp_agent.hooks.bridge import HookSet
from acp_agent.logs import get_logger
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import Options
from acp_agent.permissions.rules import Rule
from acp_agent.process.life import Life
from acp_agent.process.serving import Door, Ending, serve_sessions
from acp_agent.remote.claims import Claims, ConnectionSessions, Holder
from acp_agent.remote.parking import Parking
from acp_agent.sandbox.guard import Sandbox
from acp_agent.session.service import Sessions
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.session.wiring import Wiring
from acp_agent.tools.web_settings import WebFetchSettings
from acp_agent.transport.connection import Connection
from acp_agent.transport.framing import ByteSink, ByteSource
from acp_agent.transport.prelude import EarlySignals, no_early_signals

log = get_logger("acp_agent.remote")

CLOSE_WRITE_S = 0.3
"""How long a connection's last frames get to be written at its end."""


class Hub:
    def __init__(
        self,
        options: Options,
        models: ModelCatalog,
        hooks: HookSet,
        prompt: PromptConfig | None,
        web_fetch: WebFetchSettings | None = None,
        rules: tuple[Rule, ...] = (),
        detach_grace: float = 0.0,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.options = options
        self.models = models
        self.door = Door(options, models, hooks, prompt, web_fetch, rules, sandbox)
        self.life = Life()
        self.claims = Claims()
        self.detach_grace = detach_grace
        self._tg: TaskGroup | None = None
        self._names = itertools.count(1)

    def start(self, tg: TaskGroup) -> None:
        """Sessions that outlive their connection (``--detach-grace``) run in ``tg``, the
        listener's, and are parked there (``parking.py``)."""
        if self.detach_grace > 0:
            self._tg = tg
            self.claims.parking = Parking(self.detach_grace, tg)

    async def close_parked(self) -> None:
        """At the process's end: every parked session cancelled and closed."""
        if self.claims.parking is not None:
            await self.claims.parking.close_all()

    @property
    def state_dir(self) -> Path:
        return self.options.state_dir

    @property
    def stopping(self) -> bool:
        return self.life.stopping

    @property
    def ended(self) -> anyio.Event:
        """Set once a signal came and every connection has ended."""
        return self.life.ended

    def on_signal(self, callback: Callable[[], None]) -> None:
        """``callback()`` at the first signal (the listeners stop accepting)."""
        self.life.on_signal(callback)

    async def watch_signals(self, tg: TaskGroup, early: EarlySignals = no_early_signals) -> None:
        """``early()``: the signals that came before the receiver was installed (``run.py``'s
        ``SignalLatch``, whose handlers the receiver replaces), taken once it is."""
        await self.life.watch_signals(tg, early)

    def signal(self) -> None:
        self.life.signal()

    async def serve(
        self,
        source: ByteSource,
        sink: ByteSink,
        peer: str,
        detached: Callable[[], bool] = lambda: False,
    ) -> None:
        """Serve one connection to its end (``ServeEnd`` or a signal); never raises for it.
        ``detached()``: whether the live connection is detached (HTTP: no stream open)."""
        name = f"c{next(self._names)}"
        conn = Connection(source, sink, max_line_bytes=self.options.max_line_bytes)
        holder = Holder(name, detached)
        log.info("connection_opened", connection=name, peer=peer)
        made: list[ConnectionSessions] = []

        def make_sessions(tg: TaskGroup, wiring: Wiring[AcpObserver]) -> Sessions[AcpObserver]:
            sessions = ConnectionSessions(self.state_dir, tg, wiring, self.claims, holder, conn)
            made.append(sessions)
            return sessions

        def dropping() -> None:
            holder.dropping = True
            parking = self.claims.parking
            if parking is not None and made and not self.stopping:
                parking.park(made[0])

        try:
            async with conn:
                with self.life.serving(name, conn) as served:
                    await serve_sessions(
                        served,
                        self.life,
                        self.door,
                        make_sessions,
                        Ending.DROP,
                        on_input_end=dropping,
                        outliving=self._tg,
                    )
                    with anyio.move_on_after(CLOSE_WRITE_S):
                        await conn.close()
        finally:
            self.claims.release_all(holder)
            log.info("connection_closed", connection=name)
