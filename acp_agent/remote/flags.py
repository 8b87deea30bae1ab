"""The listen flags of ``acp-agent serve``; parsed by ``options.py`` only when ``--listen`` is
given. Kept apart so that every start of the CLI, stdio too, imports only this."""

from __future__ import annotations

import argparse
import os


def add_listen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        metavar="URL",
        help="serve ACP over the network instead of stdio: ws://HOST:PORT (WebSocket) or "
        "http://HOST:PORT (streamable HTTP); both on the path /acp unless the URL has one; "
        "port 0 picks a free port (docs/remote.md)",
    )
    parser.add_argument(
        "--token-file",
        default=os.environ.get("ACP_AGENT_TOKEN_FILE"),
        metavar="FILE",
        help="with --listen: clients must send 'Authorization: Bearer <the file's content>'; "
        "else the token is $ACP_AGENT_TOKEN; required for a non-loopback address",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="with --listen: a browser Origin allowed in (repeat for several; env "
        "ACP_AGENT_ALLOW_ORIGINS, comma-separated); requests without Origin are always accepted",
    )
    parser.add_argument(
        "--detach-grace",
        default=os.environ.get("ACP_AGENT_DETACH_GRACE"),
        metavar="SECONDS",
        help="with --listen: how long a dropped connection's running turns go on, waiting for a "
        "client to attach with session/load or session/resume (default 600; 0 cancels them at "
        "once; env ACP_AGENT_DETACH_GRACE)",
    )
