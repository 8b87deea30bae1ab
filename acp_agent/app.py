"""Wiring: stdio → ``Connection`` → ``AgentServer`` → ``Sessions``, and the shutdown paths.

Endings (docs/contract.md §1), each one path through ``serve_connection``:

- stdin EOF: stop reading, let every request already received run to its normal end (so a
  script piped into stdin works), flush every journal, exit 0.
- SIGTERM / SIGINT: stop reading, cancel every running turn (their prompts are answered
  ``cancelled`` while stdout is writable), flush every journal, exit 0 within 3 s. A second
  signal exits at once. A first signal holds in every state: while reading, and while the
  requests received before an EOF still run (it cancels them then).
- the client stops taking frames (EPIPE): same as a signal, minus the answers nobody can read.

Every path releases the client terminals still live (``toolclient.release_all``: killed and
released, though no answer can be read) and ends in ``Sessions.close_all``, which also stops
the sessions' MCP servers.

The deadline. A worker thread cannot be cancelled (``anyio.to_thread.run_sync``): a tool whose
thread is stuck (``open(2)`` on a FIFO, a dead network mount) keeps its turn, and so the whole
shutdown, waiting for ever; and its thread is no daemon, so even an abandoned one keeps the
interpreter from exiting. So a signal (or a broken wire) starts a clock: ``DEADLINE_S`` later
``forced_exit`` flushes every journal, answers the prompts still running ``cancelled``,
releases the terminals, writes the last frames and leaves with ``os._exit(0)`` — the one
mechanism that holds for any stuck thread, wherever it was started (``abandon_on_cancel`` would
have to be right at every call site, ours and the libraries', and would still leave a non-daemon
thread for the interpreter to wait on). A journal whose turn could not end is left as a crash at
that point leaves it: flushed and open, closed ``interrupted`` by its next open. After a normal
ending, ``exit_past_stuck_threads`` does the same for threads that outlive the event loop.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

import anyio
import structlog
from anyio.abc import TaskGroup

from acp_agent import logs
from acp_agent.acp.observer import AcpClient, AcpObserver
from acp_agent.acp.schema import InitializeParams
from acp_agent.acp.server import AgentServer
from acp_agent.acp.toolclient import release_all
from acp_agent.hooks.bridge import HookSet, SessionToolHooks, hooks_from
from acp_agent.journal.errors import JournalError
from acp_agent.journal.events import SessionHeader
from acp_agent.journal.writer import JournalWriter
from acp_agent.mcp.hub import McpHub
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import Options
from acp_agent.sandbox.config import sandbox_config_from
from acp_agent.sandbox.guard import Sandbox
from acp_agent.session.service import Sessions
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.session.wiring import Wiring
from acp_agent.startup_report import reporting
from acp_agent.tools.process import kill_all as kill_commands
from acp_agent.tools.registry import coding_tools
from acp_agent.transport.connection import Connection, ServeEnd
from acp_agent.transport.framing import ByteSink, ByteSource
from acp_agent.transport.prelude import EarlySignals, no_early_signals
from acp_agent.transport.stdio import FdSink, FdSource
from acp_agent.turn.admission import Admission
from acp_agent.turn.compaction import DEFAULT_CONTEXT_WINDOW
from acp_agent.turn.toolrun import ToolRunner

log = structlog.get_logger("acp_agent.app")

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
    """How the process ends. A first signal sets ``signalled``, cancels the phase under way if a
    signal may end it (``interruptible``: reading, and waiting for the requests received before
    an EOF) and starts the deadline (``doomed``, set by a broken wire too)."""

    signalled: bool = False
    phase: anyio.CancelScope | None = None
    doomed: anyio.Event = field(default_factory=anyio.Event)

    def signal(self) -> None:
        self.signalled = True
        self.doomed.set()
        if self.phase is not None:
            self.phase.cancel()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A phase that a first signal ends; cancelled at once if the signal came already."""
        with anyio.CancelScope() as scope:
            self.phase = scope
            if self.signalled:
                scope.cancel()
            try:
                yield
            finally:
                self.phase = None


def acp_wiring(
    client: AcpClient,
    models: ModelCatalog,
    hooks: HookSet,
    tg: TaskGroup,
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    prompt: PromptConfig | None = None,
    *,
    sandbox: Sandbox,
) -> Wiring[AcpObserver]:
    """What each ACP session gets: the coding tools over the client's services (``tg`` runs
    its MCP connections) with the process's ``sandbox`` around their commands, the configured
    hooks, an observer projecting onto the wire."""

    def tools(header: SessionHeader) -> ToolRunner:
        context = client.tool_context(header, sandbox)
        mcp = McpHub(tg.start_soon, header.cwd, header.id)
        tools = coding_tools(ask_user=context.elicitation is not None)
        return ToolRunner(tools, context, SessionToolHooks(hooks), mcp)

    def admission(header: SessionHeader) -> Admission:
        return hooks.admission_for(header.cwd)

    instructions = prompt or PromptConfig()
    return Wiring(models, tools, admission, client.observer, context_window, prompt=instructions)


def command_sandbox(
    options: Options, models: ModelCatalog, config: dict[str, Any] | None = None
) -> Sandbox:
    """The process's sandbox: the config file's ``[sandbox] mode`` (checked already by
    ``launch``), the state directory and the config file hidden, the providers' keys dropped."""
    configured = sandbox_config_from(config or {}, options.config).mode
    return Sandbox(
        options.state_dir,
        configured=configured,
        key_names=models.key_names(),
        hidden_files=(options.config,),
    )


async def _watch_signals(stop: Shutdown, early: EarlySignals = no_early_signals) -> None:
    """``early()``: the signals that came before the receiver was installed, taken once it is
    (``transport.prelude``)."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        for signum in early():
            _on_signal(stop, signum)
        async for signum in signals:
            _on_signal(stop, signum)


def _on_signal(stop: Shutdown, signum: int) -> None:
    if stop.signalled:
        log.warning("second_signal_exit", signal=signum)
        exit_now(128 + signum)
    log.info("signal_received", signal=signum)
    stop.signal()


def exit_now(code: int) -> NoReturn:
    """Leave without unwinding: no tool subprocess outlives the server, the logs are written."""
    kill_commands()
    logs.shutdown()
    sys.stderr.flush()
    os._exit(code)


async def _deadline(stop: Shutdown, sessions: Sessions[AcpObserver], conn: Connection) -> None:
    """``DEADLINE_S`` after a forced ending began, ``forced_exit``; cancelled by the owner when
    the ending is over before that."""
    await stop.doomed.wait()
    await anyio.sleep(DEADLINE_S)
    log.warning("shutdown_deadline_passed", deadline_s=DEADLINE_S)
    await forced_exit([s.actor.writer for s in (*sessions.all, *sessions.closing)], [conn])


async def forced_exit(writers: list[JournalWriter], conns: list[Connection]) -> None:
    """Flush every journal of ``writers`` (``FORCED_FLUSH_S`` at most: a flush stuck in its
    thread is left), answer the prompts still running on ``conns`` ``cancelled``, kill and
    release the terminals, write their frames (``FORCED_WRITE_S`` at most), exit 0: never
    returns. One connection on stdio; every live one under ``--listen`` (``remote/hub.py``)."""
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


async def serve_connection(
    options: Options,
    models: ModelCatalog,
    hooks: HookSet,
    source: ByteSource,
    sink: ByteSink,
    *,
    prompt: PromptConfig | None = None,
    signals: bool = True,
    initialized: InitializeParams | None = None,
    early: EarlySignals = no_early_signals,
    sandbox: Sandbox | None = None,
) -> int:
    """Serve one connection; ``signals=False`` for an in-process server (tests). Built in one
    direction: connection, then sessions, then the router the connection serves.
    ``initialized``: the params of an ``initialize`` answered before the connection (``launch``);
    ``early``: the signals that came before the loop ran (``transport.prelude``)."""
    stop = Shutdown()
    conn = Connection(source, sink, max_line_bytes=options.max_line_bytes)
    async with anyio.create_task_group() as guard:  # outlives all it guards, stuck or not
        if signals:
            guard.start_soon(_watch_signals, stop, early)
        async with conn:
            deadline = guard if signals else None
            commands = sandbox or command_sandbox(options, models)
            await _serve_sessions(
                conn, options, models, hooks, prompt, stop, deadline, initialized, commands
            )
            with anyio.move_on_after(0.3 if stop.signalled else None):
                await conn.close()
        guard.cancel_scope.cancel()
    return 0


async def _serve_sessions(
    conn: Connection,
    options: Options,
    models: ModelCatalog,
    hooks: HookSet,
    prompt: PromptConfig | None,
    stop: Shutdown,
    deadline: TaskGroup | None,
    initialized: InitializeParams | None,
    sandbox: Sandbox,
) -> None:
    """The sessions' whole life on ``conn``: built, served, finished (``_finish_requests``),
    their terminals released, closed. ``deadline`` runs ``_deadline`` (with signals)."""
    client = AcpClient(conn)
    if initialized is not None:
        client.capabilities = initialized.client_capabilities
    async with anyio.create_task_group() as tg:
        wiring = acp_wiring(
            client, models, hooks, tg, options.context_window, prompt, sandbox=sandbox
        )
        sessions = Sessions(options.state_dir, tg, wiring)
        server = AgentServer(client, sessions, models)
        if deadline is not None:
            deadline.start_soon(_deadline, stop, sessions, conn)
        end = await _read(conn, server, stop)
        await _finish_requests(conn, sessions, stop, end)
        release_all(conn)
        await sessions.close_all()
        await models.aclose()
        tg.cancel_scope.cancel()


async def _read(conn: Connection, server: AgentServer, stop: Shutdown) -> ServeEnd:
    """Serve until EOF, a broken wire or a first signal."""
    end = ServeEnd.EOF
    with stop.interruptible():
        end = await conn.serve(reporting(server))  # the server itself, but in start-up tests
    log.info("input_ended", reason="signal" if stop.signalled else str(end))
    return end


async def _finish_requests(
    conn: Connection, sessions: Sessions[AcpObserver], stop: Shutdown, end: ServeEnd
) -> None:
    """After EOF, let every request received run to its end — unless a signal comes meanwhile;
    after a signal or a broken wire, cancel every turn and give them ``SIGNAL_GRACE_S``."""
    if end is ServeEnd.WIRE_CLOSED:
        stop.doomed.set()
    elif not stop.signalled:
        with stop.interruptible():
            await conn.wait_deferred()
        if not stop.signalled:
            return
        log.info("draining_interrupted", reason="signal")
    await sessions.cancel_all()
    with anyio.move_on_after(SIGNAL_GRACE_S):
        await conn.wait_deferred()


def serve_process(
    options: Options,
    config: dict[str, Any],
    models: ModelCatalog,
    prompt: PromptConfig,
    fd_in: int,
    fd_out: int,
    prefix: bytes = b"",
    initialized: InitializeParams | None = None,
    early: EarlySignals = no_early_signals,
) -> int:
    """The server on the process's wire. ``launch.run_server`` checked the decoded ``config``
    (and built ``models`` and ``prompt`` from it) and may have answered a first ``initialize``,
    negotiating ``initialized``; ``prefix``: the input bytes it read, ``early``: the signals
    that came meanwhile."""
    logs.configure(options.log_level, options.log_file)
    hooks = hooks_from(config, options.config)
    log.info("server_starting", model=models.default, state_dir=str(options.state_dir))
    sandbox = command_sandbox(options, models, config)
    serve = partial(
        serve_connection, prompt=prompt, initialized=initialized, early=early, sandbox=sandbox
    )
    source, sink = FdSource(fd_in, prefix=prefix), FdSink(fd_out)
    code = anyio.run(serve, options, models, hooks, source, sink)
    log.info("server_stopped", exit_code=code)
    exit_past_stuck_threads(code)
    logs.shutdown()
    return code
