"""Wiring: stdio → ``Connection`` → ``AgentServer`` → ``Sessions``, and the shutdown paths.

Endings (docs/contract.md §1), each one path through ``serve_connection``:

- stdin EOF: stop reading, let every request already received run to its normal end (so a
  script piped into stdin works), flush every journal, exit 0.
- SIGTERM / SIGINT: stop reading, cancel every running turn (their prompts are answered
  ``cancelled`` while stdout is writable), flush every journal, exit 0 within ~3 s. A second
  signal exits at once.
- the client stops taking frames (EPIPE): same as a signal, minus the answers nobody can read.

Every path ends in ``Sessions.close_all``, which also stops the sessions' MCP servers.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from functools import partial

import anyio
import structlog
from anyio.abc import TaskGroup

from acp_agent import logs
from acp_agent.acp.observer import AcpClient, AcpObserver
from acp_agent.acp.server import AgentServer
from acp_agent.config_file import ConfigError, read_config_file
from acp_agent.hooks.bridge import HookSet, SessionToolHooks
from acp_agent.hooks.config import config_from
from acp_agent.journal.events import SessionHeader
from acp_agent.mcp.hub import McpHub
from acp_agent.model.config import providers_from
from acp_agent.model.registry import BadModelSpec, ModelCatalog
from acp_agent.options import Options
from acp_agent.session.admission import Admission
from acp_agent.session.compaction import DEFAULT_CONTEXT_WINDOW
from acp_agent.session.service import Sessions
from acp_agent.session.system_prompt import PromptConfig, prompt_config_from
from acp_agent.session.toolrun import ToolRunner
from acp_agent.session.wiring import Wiring
from acp_agent.tools.process import kill_all as kill_commands
from acp_agent.tools.registry import coding_tools
from acp_agent.transport.connection import Connection, ServeEnd
from acp_agent.transport.framing import ByteSink, ByteSource
from acp_agent.transport.stdio import FdSink, FdSource, take_stdin, take_stdout

log = structlog.get_logger("acp_agent.app")

SIGNAL_GRACE_S = 2.0


@dataclass
class _Shutdown:
    signalled: bool = False
    serving: anyio.CancelScope | None = None


def acp_wiring(
    client: AcpClient,
    models: ModelCatalog,
    hooks: HookSet,
    tg: TaskGroup,
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    prompt: PromptConfig | None = None,
) -> Wiring[AcpObserver]:
    """What each ACP session gets: the coding tools over the client's services (``tg`` runs
    its MCP connections), the configured hooks, an observer projecting onto the wire."""

    def tools(header: SessionHeader) -> ToolRunner:
        context = client.tool_context(header)
        mcp = McpHub(tg.start_soon, header.cwd, header.id)
        return ToolRunner(coding_tools(), context, SessionToolHooks(hooks), mcp)

    def admission(header: SessionHeader) -> Admission:
        return hooks.admission_for(header.cwd)

    instructions = prompt or PromptConfig()
    return Wiring(models, tools, admission, client.observer, context_window, prompt=instructions)


async def _watch_signals(stop: _Shutdown) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            if stop.signalled:
                log.warning("second_signal_exit", signal=signum)
                kill_commands()  # no tool subprocess outlives the server
                logs.shutdown()
                os._exit(128 + signum)
            stop.signalled = True
            log.info("signal_received", signal=signum)
            if stop.serving is not None:
                stop.serving.cancel()


async def serve_connection(
    options: Options,
    models: ModelCatalog,
    hooks: HookSet,
    source: ByteSource,
    sink: ByteSink,
    *,
    prompt: PromptConfig | None = None,
    signals: bool = True,
) -> int:
    """Serve one connection; ``signals=False`` for an in-process server (tests). Built in one
    direction: connection, then sessions, then the router the connection serves."""
    stop = _Shutdown()
    async with Connection(source, sink, max_line_bytes=options.max_line_bytes) as conn:
        client = AcpClient(conn)
        async with anyio.create_task_group() as tg:
            wiring = acp_wiring(client, models, hooks, tg, options.context_window, prompt)
            sessions = Sessions(options.state_dir, tg, wiring)
            server = AgentServer(client, sessions, models)
            if signals:
                tg.start_soon(_watch_signals, stop)
            end = ServeEnd.EOF
            with anyio.CancelScope() as stop.serving:
                end = await conn.serve(server)
            log.info("input_ended", reason="signal" if stop.signalled else str(end))
            if stop.signalled or end is ServeEnd.WIRE_CLOSED:
                await sessions.cancel_all()
                with anyio.move_on_after(SIGNAL_GRACE_S):
                    await conn.wait_deferred()
            else:
                await conn.wait_deferred()
            await sessions.close_all()
            await models.aclose()
            tg.cancel_scope.cancel()
        with anyio.move_on_after(0.3 if stop.signalled else None):
            await conn.close()
    return 0


def run_server(options: Options) -> int:
    fd_out = take_stdout()
    fd_in = take_stdin()
    logs.configure(options.log_level, options.log_file)
    try:
        config = read_config_file(options.config)  # once, for providers, hooks and [agent]
        providers = providers_from(config, options.config)
        models = ModelCatalog(options.model, providers, context_window=options.context_window)
        hooks = HookSet.from_config(config_from(config, options.config).hooks)
        prompt = prompt_config_from(config, options.config)
    except (BadModelSpec, ConfigError) as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    log.info("server_starting", model=models.default, state_dir=str(options.state_dir))
    serve = partial(serve_connection, prompt=prompt)
    code = anyio.run(serve, options, models, hooks, FdSource(fd_in), FdSink(fd_out))
    log.info("server_stopped", exit_code=code)
    logs.shutdown()
    return code
