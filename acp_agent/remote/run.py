"""``acp-agent serve --listen URL``: the process, as ``launch.run_server`` is for stdio."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from acp_agent.config_file import ConfigError
from acp_agent.logs import get_logger
from acp_agent.model.registry import BadModelSpec
from acp_agent.options import Options
from acp_agent.process.life import finish, instrument
from acp_agent.process.setup import checked_setup
from acp_agent.remote.options import ListenError, listen_from
from acp_agent.transport.prelude import SignalLatch

log = get_logger("acp_agent.remote")


def run_listen(options: Options, args: argparse.Namespace) -> int:
    latch = SignalLatch()  # from here on a SIGTERM or SIGINT ends the process with 0 (§10):
    # kept for the hub, which takes them first
    try:
        listen = listen_from(args)
    except ListenError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    instrument(options.log_level, options.log_file)
    try:
        from acp_agent.remote.hub import Hub
        from acp_agent.remote.server import bind, listen_and_serve
    except ImportError as exc:
        print(
            f"acp-agent: --listen needs the remote extra ({exc.name} is missing): "
            "pip install 'acp-agent-server[remote]'",
            file=sys.stderr,
        )
        return 2
    try:
        setup = checked_setup(options)
        sock = bind(listen)
    except (BadModelSpec, ConfigError, ListenError) as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    log.info("server_starting", model=setup.models.default, state_dir=str(options.state_dir))
    hub = Hub(
        options,
        setup.models,
        setup.hooks(options),
        setup.prompt,
        setup.web_fetch,
        setup.rules(options),
        listen.detach_grace,
        setup.sandbox(options, _token_files(args)),
    )
    return finish(anyio.run(listen_and_serve, hub, listen, sock, latch.take))


def _token_files(args: argparse.Namespace) -> tuple[Path, ...]:
    """The token file, which no command may read (``sandbox/argv.py`` hides it)."""
    return (Path(args.token_file),) if args.token_file else ()
