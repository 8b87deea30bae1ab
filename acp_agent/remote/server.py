"""The listener: one ASGI app in a uvicorn server, inside the process's anyio event loop.

Both transports are served on the one path, whatever the scheme of ``--listen`` (which names
the one clients are told about): a WebSocket upgrade is ACP over WebSocket (``websocket.py``),
any other request the streamable-HTTP transport (``streamable.py``). Every request passes the
``gate`` first; a refused WebSocket handshake is answered with the refusal's HTTP status (the
ASGI ``websocket.http.response`` extension), never upgraded.

WebSocket frames go out through ``batching.BatchingWebSocketProtocol`` (a batch of messages in
one socket write), without permessage-deflate: it costs a zlib pass per message on both ends
for links (loopback, an SSH tunnel, a proxy's hop) that gain nothing from it, and compressing
a secret next to text a third party chose is how CRIME-style attacks read it.

uvicorn is run without its signal handlers (``_QuietServer``): the ``Hub`` handles signals, and
only once every connection has ended does it tell uvicorn to stop (uvicorn's own shutdown would
close the sockets at once, before the cancelled prompts were answered). uvicorn's logging is its
own (``logging``, warnings and errors only), not structlog's.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Generator
from typing import Any

import anyio
import uvicorn

from acp_agent.logs import get_logger
from acp_agent.remote import gate
from acp_agent.remote.batching import BatchingWebSocketProtocol
from acp_agent.remote.hub import Hub
from acp_agent.remote.options import Listen, ListenError
from acp_agent.remote.streamable import Receive, Scope, Send, Streamable, respond
from acp_agent.remote.websocket import serve_websocket
from acp_agent.transport.prelude import EarlySignals, no_early_signals

log = get_logger("acp_agent.remote")

GRACEFUL_S = 1
"""uvicorn's own graceful shutdown (whole seconds), once every ACP connection has ended: only
idle keep-alive HTTP connections are left then."""


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class App:
    def __init__(self, hub: Hub, listen: Listen, streamable: Streamable) -> None:
        self.hub = hub
        self.listen = listen
        self.streamable = streamable

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return
        refusal = gate.check(self.listen, scope["path"], scope["headers"])
        if refusal is not None:
            log.info("request_refused", status=refusal.status, transport=kind)
            if kind == "websocket":
                await _deny_websocket(send, refusal)
            else:
                await respond(send, refusal.status, refusal.text.encode())
            return
        if kind == "websocket":
            if self.hub.stopping:
                await _deny_websocket(send, gate.Refusal(503, "The agent is shutting down"))
                return
            await serve_websocket(self.hub, scope, receive, send)
        else:
            await self.streamable.handle(scope, receive, send)


async def _deny_websocket(send: Send, refusal: gate.Refusal) -> None:
    start: dict[str, Any] = {
        "type": "websocket.http.response.start",
        "status": refusal.status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8")],
    }
    await send(start)
    await send({"type": "websocket.http.response.body", "body": refusal.text.encode()})


def config(app: App, listen: Listen, max_bytes: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=listen.host,
        port=listen.port,
        ws=BatchingWebSocketProtocol,
        ws_max_size=max_bytes,
        ws_per_message_deflate=False,
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        http="h11",
        h11_max_incomplete_event_size=64 * 1024,
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_S,
        server_header=False,
    )


def bind(listen: Listen) -> socket.socket:
    """The listening socket, bound now so that a taken port is a clear error, not uvicorn's
    ``sys.exit``; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    host = "localhost" if listen.host == "localhost" else listen.host
    try:
        return socket.create_server((host, listen.port), family=family, backlog=128)
    except OSError as exc:
        raise ListenError(f"cannot listen on {listen.url()}: {exc.strerror or exc}") from None


async def listen_and_serve(
    hub: Hub, listen: Listen, sock: socket.socket, early: EarlySignals = no_early_signals
) -> int:
    """Accept connections until a signal and the end of every connection; the exit status.
    ``early``: the signals that came before the loop ran (``run.py``'s latch)."""
    async with anyio.create_task_group() as tg:
        streamable = Streamable(hub, tg)
        app = App(hub, listen, streamable)
        server = _QuietServer(config(app, listen, hub.options.max_line_bytes))
        stopped = anyio.Event()

        async def run() -> None:
            try:
                await server.serve(sockets=[sock])
            finally:
                stopped.set()

        hub.start(tg)
        tg.start_soon(hub.watch_signals, tg, early)
        tg.start_soon(run)
        hub.on_signal(lambda: _stop_accepting(server))
        url = listen.url(sock.getsockname()[1])
        log.info("listening", url=url)
        announce(f"acp-agent: listening on {url}\n")
        await hub.ended.wait()
        await hub.close_parked()
        server.should_exit = True
        with anyio.move_on_after(GRACEFUL_S + 0.5):
            await stopped.wait()
        tg.cancel_scope.cancel()
    await hub.models.aclose()
    return 0


def announce(line: str) -> None:
    """One line on stderr in one ``write(2)`` (``print`` may take two, and the log thread's
    lines could then land inside it; a pipe keeps a write of up to PIPE_BUF bytes whole)."""
    sys.stderr.flush()
    data = line.encode()
    while data:
        data = data[os.write(2, data) :]


def _stop_accepting(server: uvicorn.Server) -> None:
    # uvicorn sets ``servers`` at its startup: a signal taken before it (one that came while the
    # process was starting) has nothing to close yet, and ``hub.ended`` then stops uvicorn
    for listener in getattr(server, "servers", ()):
        listener.close()
