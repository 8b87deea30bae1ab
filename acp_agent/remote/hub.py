"""The listening process: every connection served like one stdio client, and how it all ends.

Each connection, whatever its transport, is a byte source and sink (``framing.py``) under its own
``Connection`` → ``AcpClient`` → ``ConnectionSessions`` → ``AgentServer``, built as ``app.py``
builds the one stdio connection: its own ``initialize`` and capabilities, its own sessions'
updates, agent→client requests back to it, its own writer (a client that stops reading fills
its own queue and nobody else's). What the connections share is the process's: the models,
hooks and prompt config, the state directory and the ``Claims`` of who drives which session.

Endings of one connection (``serve``):

- the client went away (end of input, a broken wire): like a broken stdio pipe, its running
  turns are cancelled (``turn/end`` reason ``cancelled``), its client terminals released, its
  sessions closed (journals flushed, locks released); they are loadable from any connection
  as soon as that is done (``claims.py``).
- a signal (``Hub.signal``): it stops reading, its running prompts are answered ``cancelled``
  on it, it is closed after its last frames.

Ending of the process (SIGTERM / SIGINT): the listeners stop accepting, every connection ends
as above, journals are flushed, exit 0. As on stdio a first signal starts the ``DEADLINE_S``
clock: past it, ``_forced_exit`` flushes every journal, answers every prompt still running
``cancelled``, writes what it can for ``FORCED_WRITE_S`` and leaves with ``os._exit(0)``,
within 3 s; a second signal exits at once.
"""

from __future__ import annotations

import itertools
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup

from acp_agent.acp.observer import AcpClient
from acp_agent.acp.server import AgentServer
from acp_agent.acp.toolclient import release_all
from acp_agent.app import (
    DEADLINE_S,
    SIGNAL_GRACE_S,
    Shutdown,
    acp_wiring,
    command_sandbox,
    exit_now,
    forced_exit,
)
from acp_agent.hooks.bridge import HookSet
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import Options
from acp_agent.remote.claims import Claims, ConnectionSessions, Holder
from acp_agent.sandbox.guard import Sandbox
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.transport.connection import Connection
from acp_agent.transport.framing import ByteSink, ByteSource
from acp_agent.transport.prelude import EarlySignals, no_early_signals

log = structlog.get_logger("acp_agent.remote")

CLOSE_WRITE_S = 0.3
"""How long a connection's last frames get to be written at its end."""


@dataclass
class Served:
    """One connection being served: what a signal and the forced exit reach."""

    name: str
    conn: Connection
    stop: Shutdown = field(default_factory=Shutdown)
    sessions: ConnectionSessions | None = None


class Hub:
    def __init__(
        self,
        options: Options,
        models: ModelCatalog,
        hooks: HookSet,
        prompt: PromptConfig | None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.options = options
        self.sandbox = sandbox or command_sandbox(options, models)
        self.models = models
        self.hooks = hooks
        self.prompt = prompt
        self.claims = Claims()
        self.live: dict[str, Served] = {}
        self.stopping = False
        self.ended = anyio.Event()
        """Set once a signal came and every connection has ended."""
        self._names = itertools.count(1)
        self._on_signal: list[Callable[[], None]] = []

    @property
    def state_dir(self) -> Path:
        return self.options.state_dir

    def on_signal(self, callback: Callable[[], None]) -> None:
        """``callback()`` at the first signal (the listeners stop accepting)."""
        self._on_signal.append(callback)

    async def serve(self, source: ByteSource, sink: ByteSink, peer: str) -> None:
        """Serve one connection to its end (``ServeEnd`` or a signal); never raises for it."""
        name = f"c{next(self._names)}"
        conn = Connection(source, sink, max_line_bytes=self.options.max_line_bytes)
        served = self.live[name] = Served(name, conn)
        holder = Holder(name)
        log.info("connection_opened", connection=name, peer=peer)
        if self.stopping:
            served.stop.signal()
        try:
            async with conn:
                await self._serve_sessions(served, holder)
                with anyio.move_on_after(CLOSE_WRITE_S):
                    await conn.close()
        finally:
            self.claims.release_all(holder)
            del self.live[name]
            if self.stopping and not self.live:
                self.ended.set()
            log.info("connection_closed", connection=name)

    async def _serve_sessions(self, served: Served, holder: Holder) -> None:
        conn, stop = served.conn, served.stop
        client = AcpClient(conn)
        async with anyio.create_task_group() as tg:
            options = self.options
            wiring = acp_wiring(
                client,
                self.models,
                self.hooks,
                tg,
                options.context_window,
                self.prompt,
                sandbox=self.sandbox,
            )
            sessions = ConnectionSessions(options.state_dir, tg, wiring, self.claims, holder)
            served.sessions = sessions
            server = AgentServer(client, sessions, self.models)
            with stop.interruptible():
                end = await conn.serve(server)
            holder.dropping = True
            log.info(
                "input_ended",
                connection=served.name,
                reason="signal" if stop.signalled else str(end),
            )
            await sessions.cancel_all()
            with anyio.move_on_after(SIGNAL_GRACE_S):
                await conn.wait_deferred()
            release_all(conn)
            await sessions.close_all()
            tg.cancel_scope.cancel()

    # -- the process's ending -----------------------------------------------------------------

    async def watch_signals(self, tg: TaskGroup, early: EarlySignals = no_early_signals) -> None:
        """``early()``: the signals that came before the receiver was installed (``run.py``'s
        ``SignalLatch``, whose handlers the receiver replaces), taken once it is."""
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            for signum in early():
                self._take_signal(tg, signum)
            async for signum in signals:
                self._take_signal(tg, signum)

    def _take_signal(self, tg: TaskGroup, signum: int) -> None:
        if self.stopping:
            log.warning("second_signal_exit", signal=signum)
            exit_now(128 + signum)
        log.info("signal_received", signal=signum, connections=len(self.live))
        self.signal()
        tg.start_soon(self._deadline)

    def signal(self) -> None:
        self.stopping = True
        for callback in self._on_signal:
            callback()
        for served in list(self.live.values()):
            served.stop.signal()
        if not self.live:
            self.ended.set()

    async def _deadline(self) -> None:
        await anyio.sleep(DEADLINE_S)
        log.warning("shutdown_deadline_passed", deadline_s=DEADLINE_S, connections=len(self.live))
        await self._forced_exit()

    async def _forced_exit(self) -> None:
        """``app.forced_exit`` over every connection: never returns."""
        served = list(self.live.values())
        writers = [
            s.actor.writer
            for one in served
            if one.sessions is not None
            for s in (*one.sessions.all, *one.sessions.closing)
        ]
        await forced_exit(writers, [one.conn for one in served])
