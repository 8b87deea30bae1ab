"""``acp-agent serve --listen URL``: the process, as ``app.run_server`` is for stdio."""

from __future__ import annotations

import argparse
import sys

import anyio
import structlog

from acp_agent import logs
from acp_agent.app import command_sandbox, exit_past_stuck_threads
from acp_agent.config_file import ConfigError, read_config_file
from acp_agent.hooks.bridge import HookSet
from acp_agent.hooks.config import config_from
from acp_agent.model.config import providers_from
from acp_agent.model.registry import BadModelSpec, ModelCatalog
from acp_agent.options import Options
from acp_agent.remote.options import ListenError, listen_from
from acp_agent.session.system_prompt import prompt_config_from
from acp_agent.transport.prelude import SignalLatch

log = structlog.get_logger("acp_agent.remote")


def run_listen(options: Options, args: argparse.Namespace) -> int:
    latch = SignalLatch()  # from here on a SIGTERM or SIGINT ends the process with 0 (§10):
    # kept for the hub, which takes them first
    try:
        listen = listen_from(args)
    except ListenError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    logs.configure(options.log_level, options.log_file)
    try:
        from acp_agent.remote.hub import Hub
        from acp_agent.remote.server import bind, listen_and_serve
    except ImportError as exc:
        print(
            f"acp-agent: --listen needs the remote extra ({exc.name} is missing): "
            "pip install 'acp-agent[remote]'",
            file=sys.stderr,
        )
        return 2
    try:
        config = read_config_file(options.config)
        providers = providers_from(config, options.config)
        models = ModelCatalog(options.model, providers, context_window=options.context_window)
        hooks = HookSet.from_config(config_from(config, options.config).hooks)
        prompt = prompt_config_from(config, options.config)
        sandbox = command_sandbox(options, models, config)
        sock = bind(listen)
    except (BadModelSpec, ConfigError, ListenError) as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    log.info("server_starting", model=models.default, state_dir=str(options.state_dir))
    hub = Hub(options, models, hooks, prompt, sandbox)
    code = anyio.run(listen_and_serve, hub, listen, sock, latch.take)
    log.info("server_stopped", exit_code=code)
    exit_past_stuck_threads(code)
    logs.shutdown()
    return code
