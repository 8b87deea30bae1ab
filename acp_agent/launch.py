"""``acp-agent serve``'s start: ``initialize`` answered before the rest of the server is imported.

Theory of operation
-------------------
An editor spawns the agent per window or per session and waits for ``initialize``. Importing the
whole server (the session, journal, tool and model stacks, anyio and asyncio, structlog) takes
several times the interpreter's own start-up, and none of it is needed for that answer. So
``run_server`` runs in two steps:

1. With only what the answer depends on imported (this module, ``options``, the config file,
   ``model.registry``'s catalog, ``acp.handshake``, the JSON-RPC envelope codec, msgspec), it
   checks the configuration (a bad one exits 2 here, as ever, before any input is read), takes
   the wire's fds, reads the input's first line (``transport.prelude``) and, if that is an
   ``initialize`` request, answers it with ``acp.handshake.answer_first``: the very answer the
   router would give, from the same function.
2. Then it imports ``app`` (all the rest) and serves the connection, which reads the bytes read
   in step 1 first, and knows what the first ``initialize`` negotiated. A first line that is
   anything else is left to the connection untouched, and answered there as it always was.

What stays true: nothing but frames on stdout (the answer is written to the wire's private fd
after ``take_stdout``, before any other frame exists); a bad config exits 2 before any input is
read; SIGTERM and SIGINT end the process with 0 whenever they come (``transport.prelude``);
logging is configured in step 2, before the first event is logged (structlog is imported at the
first event the level lets through: ``logs.py``).
``tests/integration/test_startup.py`` holds which modules step 1 must not import.

What a client's first ``session/new`` (or ``session/load``) then waits for is mostly step 2's
import. So what only some requests run is imported by them, not by ``app``: the command hooks
without a ``[hooks]`` table (``hooks/bridge.py``), the fork and the journal invariant's checker
(``session/opening.py``), ``/review``'s git reader, the ``ask_user`` tool for a client without
forms, ``shutil``; and the value classes defined at import are ``msgspec.Struct``s, about thirty
times cheaper to define than dataclasses. ``test_startup.py`` names what must not be imported
when that first answer is written (``startup_report.py``).
"""

from __future__ import annotations

import sys

from acp_agent.acp.handshake import answer_first
from acp_agent.config_file import ConfigError
from acp_agent.model.registry import BadModelSpec
from acp_agent.options import Options
from acp_agent.process.setup import checked_setup
from acp_agent.startup_report import report_modules
from acp_agent.transport.prelude import (
    Interrupted,
    SignalLatch,
    read_first_line,
    take_stdin,
    take_stdout,
    write_all,
)


def run_server(options: Options) -> int:
    latch = SignalLatch()  # from here on SIGTERM and SIGINT end the process with 0: kept while
    # the config is checked, not raised inside it
    fd_out = take_stdout()
    fd_in = take_stdin()
    try:
        setup = checked_setup(options)
    except (BadModelSpec, ConfigError) as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    try:
        latch.blocking = True  # then the read: one that comes now interrupts it
        if early := latch.take():
            raise Interrupted(early[0])
        report_modules("awaiting_first_line")
        first = read_first_line(fd_in, options.max_line_bytes)
        latch.blocking = False
    except Interrupted as exc:
        return _ended_before_serving(options, "signal", signal=exc.signum)
    answered = answer_first(first.line, setup.models) if first.line is not None else None
    if answered is not None:
        report_modules("initialize_answered")
        try:
            write_all(fd_out, answered[0])
        except OSError as exc:
            return _ended_before_serving(options, "wire_closed", error=str(exc))
    from acp_agent.app import serve_process

    initialized = answered[1] if answered is not None else None
    prefix = first.handed_on(answered is not None)
    return serve_process(
        options,
        setup.config,
        setup.models,
        setup.prompt,
        fd_in,
        fd_out,
        prefix,
        initialized,
        latch.take,
    )


def _ended_before_serving(options: Options, reason: str, **details: object) -> int:
    """Nothing was opened yet: log why the input ended, exit 0 (docs/contract.md §1)."""
    from acp_agent import logs

    logs.configure(options.log_level, options.log_file)
    logs.get_logger("acp_agent.app").info("input_ended", reason=reason, **details)
    logs.shutdown()
    return 0
