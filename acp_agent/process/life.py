"""How a serving process ends: signals, the shutdown deadline and the forced exit.

One ``Life`` per process, whatever its front door: stdio serves one connection under it,
``serve --listen`` many (docs/contract.md §1 and §10).

- A first SIGTERM / SIGINT (``watch_signals``) stops every connection's reading (``Served.stop``:
  the phase under way is cancelled if a signal may end it), the listeners' callbacks run
  (``on_signal``), and the deadline starts. A second signal exits at once (128 + signum).
- The deadline. A worker thread cannot be cancelled (``anyio.to_thread.run_sync``): a tool whose
  thread is stuck (``open(2)`` on a FIFO, a dead network mount) keeps its turn, and so the whole
  shutdown, waiting for ever; and its thread is no daemon, so even an abandoned one keeps the
  interpreter from exiting. So a signal (or, on stdio, a broken wire: ``doom``) starts a clock:
  ``DEADLINE_S`` later ``forced_exit`` flushes every journal, answers the prompts still running
  ``cancelled``, releases the terminals, writes the last frames and leaves with ``os._exit(0)``
  — the one mechanism that holds for any stuck thread, wherever it was started. A journal whose
  turn could not end is left as a crash at that point leaves it: flushed and open, closed
  ``interrupted`` by its next open.
- After a normal ending, ``exit_past_stuck_threads`` does the same for threads that outlive the
  event loop.
- Logs and traces begin with ``instrument`` (before the first event is logged) and end with
  ``finish``: the spans still buffered are exported then, ``telemetry.SHUTDOWN_S`` at most (a
  forced exit does not wait for them).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

import anyio
from anyio.abc import TaskGroup

from acp_agent import logs, telemetry
from acp_agent.acp.toolclient import release_all
from acp_agent.journal.errors import JournalError
from acp_agent.journal.writer import JournalWriter
from acp_agent.logs import get_logger
from acp_agent.tools.process import kill_all as kill_commands
from acp_agent.transport.connection import Connection
from acp_agent.transport.prelude import EarlySignals, no_early_signals

if TYPE_CHECKING:
    from acp_agent.acp.observer import AcpObserver
    from acp_agent.session.service import Sessions

log = get_logger("acp_agent.process")

SIGNAL_GRACE_S = 1.5
"""On a forced ending, how long the cancelled turns get to end (and their prompts answered)."""
DEADLINE_S = 2.3
"""From the first signal (or the broken wire) to ``forced_exit``, whatever still runs."""
FORCED_FLUSH_S = 0.3
FORCED_WRITE_S = 0.2
"""``forced_exit``'s budgets for the journals and for the last frames: the process is gone
2.8 s after the signal at the latest, inside the 3 s of docs/contract.md §1."""
THREADS_JOIN_S = 0.2
"""After the event loop ended, how long its worker threads get to end on their own."""


@dataclass
class Shutdown:
    """How one connection's serving ends. A signal sets ``signalled`` and cancels the phase under
    way if a signal may end it (``interruptible``: reading, and waiting for the requests received
    before an EOF)."""

    signalled: bool = False
    phase: anyio.CancelScope | None = None

    def signal(self) -> None:
        self.signalled = True
        if self.phase is not None:
            self.phase.cancel()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A phase that a signal ends; cancelled at once if the signal came already."""
        with anyio.CancelScope() as scope:
            self.phase = scope
            if self.signalled:
                scope.cancel()
            try:
                yield
            finally:
                self.phase = None


@dataclass
class Served:
    """One connection being served: what a signal and the forced exit reach."""

    name: str
    conn: Connection
    stop: Shutdown = field(default_factory=Shutdown)
    sessions: Sessions[AcpObserver] | None = None

    def writers(self) -> list[JournalWriter]:
        return self.sessions.writers() if self.sessions is not None else []


class Life:
    """The process's connections, and how they all end."""

    def __init__(self) -> None:
        self.live: dict[str, Served] = {}
        self.stopping = False
        self.ended = anyio.Event()
        """Set once a signal came and every connection has ended."""
        self.doomed = anyio.Event()
        """Set when the deadline starts: at the first signal, or by ``doom``."""
        self._on_signal: list[Callable[[], None]] = []

    def on_signal(self, callback: Callable[[], None]) -> None:
        """``callback()`` at the first signal (a listener stops accepting)."""
        self._on_signal.append(callback)

    @contextmanager
    def serving(self, name: str, conn: Connection) -> Iterator[Served]:
        """``conn`` is one of the process's connections while this lasts."""
        served = self.live[name] = Served(name, conn)
        if self.stopping:
            served.stop.signal()
        try:
            yield served
        finally:
            del self.live[name]
            if self.stopping and not self.live:
                self.ended.set()

    def doom(self) -> None:
        """Start the deadline without a signal (stdio's broken wire)."""
        self.doomed.set()

    async def watch_signals(self, tg: TaskGroup, early: EarlySignals = no_early_signals) -> None:
        """Take SIGTERM and SIGINT until cancelled; ``tg`` runs the deadline. ``early()``: the
        signals that came before the receiver was installed (``transport.prelude``)."""
        tg.start_soon(self._deadline)
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            for signum in early():
                self._take_signal(signum)
            async for signum in signals:
                self._take_signal(signum)

    def _take_signal(self, signum: int) -> None:
        if self.stopping:
            log.warning("second_signal_exit", signal=signum)
            exit_now(128 + signum)
        log.info("signal_received", signal=signum, connections=len(self.live))
        self.signal()

    def signal(self) -> None:
        """What a first signal does: every connection stops, the deadline starts."""
        self.stopping = True
        self.doomed.set()
        for callback in self._on_signal:
            callback()
        for served in list(self.live.values()):
            served.stop.signal()
        if not self.live:
            self.ended.set()

    async def _deadline(self) -> None:
        await self.doomed.wait()
        await anyio.sleep(DEADLINE_S)
        log.warning("shutdown_deadline_passed", deadline_s=DEADLINE_S, connections=len(self.live))
        served = list(self.live.values())
        writers = [writer for one in served for writer in one.writers()]
        await forced_exit(writers, [one.conn for one in served])


def instrument(level: str, log_file: str | None) -> None:
    """The process's logs, then its traces if the ``OTEL_*`` variables ask for them."""
    logs.configure(level, log_file)
    telemetry.configure()


def exit_now(code: int) -> NoReturn:
    """Leave without unwinding: no tool subprocess outlives the server, the logs are written."""
    kill_commands()
    logs.shutdown()
    sys.stderr.flush()
    os._exit(code)


async def forced_exit(writers: list[JournalWriter], conns: list[Connection]) -> NoReturn:
    """Flush every journal of ``writers`` (``FORCED_FLUSH_S`` at most: a flush stuck in its
    thread is left), answer the prompts still running on ``conns`` ``cancelled``, kill and
    release the terminals, write their frames (``FORCED_WRITE_S`` at most), exit 0."""
    async with anyio.create_task_group() as tg:  # never left: the process ends inside it
        await _flush_journals(tg, writers, FORCED_FLUSH_S)
        answered = sum(conn.answer_abandoned() for conn in conns)
        released = sum(release_all(conn) for conn in conns)
        log.warning("forced_exit", prompts_answered=answered, terminals_released=released)
        with anyio.move_on_after(FORCED_WRITE_S):
            async with anyio.create_task_group() as closing:
                for conn in conns:
                    closing.start_soon(conn.close)
        exit_now(0)
    raise AssertionError("unreachable")  # pragma: no cover


async def _flush_journals(tg: TaskGroup, writers: list[JournalWriter], within: float) -> None:
    """Flush each writer in a task of ``tg``; return when all are done or ``within`` passed
    (those still flushing go on, in tasks nobody waits for)."""
    pending = set(range(len(writers)))
    done = anyio.Event()

    async def flush(index: int) -> None:
        try:
            await writers[index].flush()
        except JournalError as exc:
            log.error("forced_exit_unflushed", session_id=writers[index].session_id, error=str(exc))
        finally:
            pending.discard(index)
            if not pending:
                done.set()

    if not writers:
        return
    for index in range(len(writers)):
        tg.start_soon(flush, index)
    with anyio.move_on_after(within):
        await done.wait()
    if pending:
        log.error("forced_exit_flush_stuck", journals=len(pending))


def exit_past_stuck_threads(code: int) -> None:
    """Exit now if a worker thread outlives the event loop (abandoned on cancel, or started and
    never awaited): it is no daemon, and the interpreter would wait for it, for ever if it is
    stuck. Idle workers end with the loop; every thread gets ``THREADS_JOIN_S`` in all."""
    until = time.monotonic() + THREADS_JOIN_S
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    lingering = [t for t in others if not t.daemon]
    for thread in lingering:
        thread.join(max(0.0, until - time.monotonic()))
    stuck = [t.name for t in lingering if t.is_alive()]
    if stuck:
        log.warning("threads_abandoned_at_exit", threads=stuck, exit_code=code)
        exit_now(code)


def finish(code: int) -> int:
    """After the event loop: past stuck threads, logs written; the process's exit status."""
    log.info("server_stopped", exit_code=code)
    telemetry.shutdown()
    exit_past_stuck_threads(code)
    logs.shutdown()
    return code
