"""The stdio door: the process's wire → ``Connection`` → the sessions, under the process's ``Life``.

Endings (docs/contract.md §1), each one path through ``process.serving.serve_sessions`` with
``Ending.DRAIN``:

- stdin EOF: stop reading, let every request already received run to its normal end (so a
  script piped into stdin works), flush every journal, exit 0.
- SIGTERM / SIGINT: stop reading, cancel every running turn (their prompts are answered
  ``cancelled`` while stdout is writable), flush every journal, exit 0 within 3 s. A second
  signal exits at once. A first signal holds in every state: while reading, and while the
  requests received before an EOF still run (it cancels them then).
- the client stops taking frames (EPIPE): same as a signal, minus the answers nobody can read.

The signals, the deadline and the forced exit are the process's (``process/life.py``), shared
with ``serve --listen`` (``remote/hub.py``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_agent.acp.observer import AcpObserver
from acp_agent.acp.schema import InitializeParams
from acp_agent.hooks.bridge import HookSet, hooks_from
from acp_agent.logs import get_logger
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import Options
from acp_agent.permissions.config import rules_from
from acp_agent.permissions.rules import Rule
from acp_agent.process.life import Life, finish, instrument
from acp_agent.process.serving import Door, Ending, serve_sessions
from acp_agent.process.setup import command_sandbox
from acp_agent.sandbox.guard import Sandbox
from acp_agent.session.service import Sessions
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.session.wiring import Wiring
from acp_agent.tools.web_settings import WebFetchSettings, web_fetch_settings_from
from acp_agent.transport.connection import Connection
from acp_agent.transport.framing import ByteSink, ByteSource
from acp_agent.transport.prelude import EarlySignals, no_early_signals
from acp_agent.transport.stdio import FdSink, FdSource

log = get_logger("acp_agent.app")

STDIO = "stdio"
"""The one connection's name in the logs."""


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
    web_fetch: WebFetchSettings | None = None,
    rules: tuple[Rule, ...] = (),
    sandbox: Sandbox | None = None,
) -> int:
    """Serve one connection; ``signals=False`` for an in-process server (tests).
    ``initialized``: the params of an ``initialize`` answered before the connection (``launch``);
    ``early``: the signals that came before the loop ran (``transport.prelude``)."""
    life = Life()
    door = Door(options, models, hooks, prompt, web_fetch, rules, sandbox)
    conn = Connection(source, sink, max_line_bytes=options.max_line_bytes)

    def make_sessions(tg: TaskGroup, wiring: Wiring[AcpObserver]) -> Sessions[AcpObserver]:
        return Sessions(options.state_dir, tg, wiring)

    async with anyio.create_task_group() as guard:  # outlives all it guards, stuck or not
        if signals:
            guard.start_soon(life.watch_signals, guard, early)
        async with conn:
            with life.serving(STDIO, conn) as served:
                await serve_sessions(
                    served, life, door, make_sessions, Ending.DRAIN, initialized=initialized
                )
                await models.aclose()
                with anyio.move_on_after(0.3 if served.stop.signalled else None):
                    await conn.close()
        guard.cancel_scope.cancel()
    return 0


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
    instrument(options.log_level, options.log_file)
    hooks = hooks_from(config, options.config)
    rules = rules_from(config, options.config)
    log.info("server_starting", model=models.default, state_dir=str(options.state_dir))
    web_fetch = web_fetch_settings_from(config, options.config)
    sandbox = command_sandbox(options, models, config)
    serve = partial(
        serve_connection,
        prompt=prompt,
        initialized=initialized,
        early=early,
        web_fetch=web_fetch,
        rules=rules,
        sandbox=sandbox,
    )
    source, sink = FdSource(fd_in, prefix=prefix), FdSink(fd_out)
    return finish(anyio.run(serve, options, models, hooks, source, sink))
