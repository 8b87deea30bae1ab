"""ACP over WebSocket: one JSON-RPC message per text frame, as ``@agentclientprotocol/sdk``'s
``experimental/ws-client`` sends and expects them.

The socket becomes the byte source and sink of an ordinary ``Connection`` (``hub.py``): each text
frame is read as one line (a newline inside it is JSON whitespace, so it is read as a space:
raw control characters cannot occur inside JSON strings), and each line the connection writes
goes out as one text frame (all the frames of one batch in one socket write when the server
supports it: ``batching.py``). A frame larger than ``--max-line-bytes`` is refused by the
WebSocket layer itself, closing with 1009 (message too big) without buffering it; a binary
frame is ignored (logged), as the SDK's reference server (``ws-server.js``) ignores it. Backpressure is the socket's: uvicorn's ``send``
waits while the peer does not read, so a client that stops reading stalls its own writer only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from acp_agent.errors import WireClosed
from acp_agent.logs import get_logger
from acp_agent.remote.batching import SEND_TEXTS
from acp_agent.remote.hub import Hub

log = get_logger("acp_agent.remote")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

GOING_AWAY = 1001
NORMAL = 1000


class SocketWire:
    """The byte source (``read``) and sink (``write``) of one accepted WebSocket."""

    def __init__(self, receive: Receive, send: Send, batching: bool = False) -> None:
        self._receive = receive
        self._send = send
        self._batching = batching
        """The server takes many frames in one message (``batching.SEND_TEXTS``)."""
        self.closed = False
        """The peer is gone (or we closed): nothing more is read or written."""

    async def read(self) -> bytes:
        while not self.closed:
            message = await self._receive()
            if message["type"] != "websocket.receive":
                self.closed = True  # websocket.disconnect
                log.info("websocket_disconnected", code=message.get("code"))
                break
            text: str | None = message.get("text")
            if text is not None:
                return text.encode().replace(b"\n", b" ") + b"\n"
            log.warning("websocket_binary_frame_ignored", size=len(message.get("bytes") or b""))
        return b""

    async def write(self, data: bytes) -> None:
        """One text frame per line of ``data`` (a batch of the connection's writer)."""
        lines = [line for line in data.split(b"\n") if line]
        if self._batching:
            await self._send_each({"type": SEND_TEXTS, "texts": lines})
            return
        for line in lines:
            await self._send_each({"type": "websocket.send", "text": line.decode()})

    async def _send_each(self, message: Message) -> None:
        if self.closed:
            raise WireClosed("the WebSocket is closed")
        try:
            await self._send(message)
        except OSError as exc:  # uvicorn's ClientDisconnected is an OSError
            self.closed = True
            raise WireClosed(f"the WebSocket is closed: {exc}") from exc

    async def close(self, code: int, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):  # the peer is gone already
            await self._send({"type": "websocket.close", "code": code, "reason": reason})


async def serve_websocket(hub: Hub, scope: Scope, receive: Receive, send: Send) -> None:
    connect = await receive()
    if connect["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    wire = SocketWire(receive, send, SEND_TEXTS in scope.get("extensions", {}))
    client = scope.get("client") or ("?", 0)
    await hub.serve(wire.read, wire.write, f"ws {client[0]}:{client[1]}")
    await wire.close(GOING_AWAY if hub.stopping else NORMAL)
