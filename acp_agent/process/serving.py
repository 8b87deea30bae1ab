"""One connection's sessions, served to their end: the same for stdio and every ``--listen``
connection.

Built in one direction: the client over the connection, the sessions (each door says how:
stdio's ``Sessions``, a listener's claimed ``ConnectionSessions``), then the router the
connection serves. How the input's end is taken is the one thing the doors differ in
(``Ending``):

- ``DRAIN`` (stdio): at EOF every request already received runs to its normal end (so a script
  piped into stdin works) unless a signal comes meanwhile; a broken wire or a signal cancels
  every turn and gives them ``SIGNAL_GRACE_S``, and a broken wire starts the deadline.
- ``DROP`` (a listener's connection): the client went away, so its running turns are cancelled
  (``turn/end`` reason ``cancelled``) and get ``SIGNAL_GRACE_S``.

Every ending releases the client terminals still live (``toolclient.release_all``) and closes
the sessions (``Sessions.close_all``, which also stops their MCP servers).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import anyio
from anyio.abc import TaskGroup

from acp_agent.acp.observer import AcpClient, AcpObserver
from acp_agent.acp.schema import InitializeParams
from acp_agent.acp.server import AgentServer
from acp_agent.acp.toolclient import release_all
from acp_agent.acp.wiring import acp_wiring
from acp_agent.hooks.bridge import HookSet
from acp_agent.logs import get_logger
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import Options
from acp_agent.permissions.book import RuleBook
from acp_agent.permissions.rules import Rule
from acp_agent.process.life import SIGNAL_GRACE_S, Life, Served
from acp_agent.process.setup import command_sandbox
from acp_agent.sandbox.guard import Sandbox
from acp_agent.session.service import Sessions
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.session.wiring import Wiring
from acp_agent.startup_report import reporting
from acp_agent.tools.web_settings import WebFetchSettings
from acp_agent.transport.connection import ServeEnd

log = get_logger("acp_agent.process")

MakeSessions = Callable[[TaskGroup, Wiring[AcpObserver]], Sessions[AcpObserver]]


class Ending(StrEnum):
    DRAIN = "drain"
    DROP = "drop"


@dataclass(frozen=True)
class Door:
    """What every connection of a process is served with."""

    options: Options
    models: ModelCatalog
    hooks: HookSet
    prompt: PromptConfig | None = None
    web_fetch: WebFetchSettings | None = None
    rules: tuple[Rule, ...] = ()
    """The config file's ``[permissions]`` rules."""
    sandbox: Sandbox | None = None
    """Around every command; ``None``: the default one for ``options`` (no ``[sandbox]``)."""

    def rule_book(self) -> RuleBook:
        """The rules of every session: the config's, and the projects' under the state dir."""
        return RuleBook(self.rules, self.options.state_dir, self.options.config)

    @functools.cached_property
    def commands(self) -> Sandbox:
        return self.sandbox or command_sandbox(self.options, self.models)


async def serve_sessions(
    served: Served,
    life: Life,
    door: Door,
    make_sessions: MakeSessions,
    ending: Ending,
    *,
    initialized: InitializeParams | None = None,
    on_input_end: Callable[[], None] | None = None,
    outliving: TaskGroup | None = None,
) -> None:
    """The sessions' whole life on ``served.conn``: built, served, finished, their terminals
    released, closed. ``initialized``: the params of an ``initialize`` answered before the
    connection (``launch``); ``on_input_end()`` once the input ended. ``outliving``: the task
    group the sessions run in when they may outlive the connection (a listener's detach grace:
    ``on_input_end`` parks its running sessions), each speaking through its own line
    (``acp/line.py``); else the connection's own."""
    conn = served.conn
    client = AcpClient(conn, door.rule_book(), keep_log=outliving is not None)
    if initialized is not None:
        client.capabilities = initialized.client_capabilities
    async with anyio.create_task_group() as tg:
        context_window = door.options.context_window
        runs_in = tg if outliving is None else outliving
        wiring = acp_wiring(
            client,
            door.models,
            door.hooks,
            runs_in,
            context_window,
            door.prompt,
            door.web_fetch,
            sandbox=door.commands,
        )
        sessions = served.sessions = make_sessions(runs_in, wiring)
        server = AgentServer(client, sessions, door.models)
        end = await _read(served, server)
        if on_input_end is not None:
            on_input_end()
        await _finish_requests(served, life, sessions, end, ending)
        release_all(conn)
        await sessions.close_all()
        tg.cancel_scope.cancel()


async def _read(served: Served, server: AgentServer) -> ServeEnd:
    """Serve until EOF, a broken wire or a signal."""
    end = ServeEnd.EOF
    with served.stop.interruptible():
        end = await served.conn.serve(reporting(server))  # the server itself, but in start-up tests
    reason = "signal" if served.stop.signalled else str(end)
    log.info("input_ended", connection=served.name, reason=reason)
    return end


async def _finish_requests(
    served: Served, life: Life, sessions: Sessions[AcpObserver], end: ServeEnd, ending: Ending
) -> None:
    """``ending``'s way with the requests received before the input ended (module docstring)."""
    if ending is Ending.DRAIN and end is ServeEnd.WIRE_CLOSED:
        life.doom()
    elif ending is Ending.DRAIN and not served.stop.signalled:
        with served.stop.interruptible():
            await served.conn.wait_deferred()
        if not served.stop.signalled:
            return
        log.info("draining_interrupted", reason="signal")
    await sessions.cancel_all()
    with anyio.move_on_after(SIGNAL_GRACE_S):
        await served.conn.wait_deferred()
