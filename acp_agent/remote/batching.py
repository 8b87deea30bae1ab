"""uvicorn's WebSocket protocol (``websockets-sansio``), able to send many text frames at once.

ASGI sends one frame per ``websocket.send``, and uvicorn writes each to the socket as it comes:
one system call per ACP message, where the stdio writer writes a whole batch of lines with one
(``transport/writer.py``). This subclass adds one ASGI message of ours, ``SEND_TEXTS``
(``{"type": SEND_TEXTS, "texts": [utf-8 bytes, ...]}``): every text becomes its own frame, as
ACP over WebSocket requires, and all the frames go to the transport in one write. It announces
itself in the scope's ``extensions``; ``websocket.py`` falls back to one ``websocket.send`` per
message without it.

It relies on the internals of ``uvicorn.protocols.websockets.websockets_sansio_impl`` (``conn``,
``transport``, ``writable``, ``disconnected``, ``close_sent``), hence uvicorn pinned in the
``remote`` extra: check them when bumping it.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

SEND_TEXTS = "acp_agent.websocket.send_texts"


WRITE_BUFFER_HIGH = 1024 * 1024
"""The socket's write buffer may hold one whole batch of the connection's writer
(``transport/writer.py``, 1 MiB) before ``send`` waits (asyncio's default: 64 KiB)."""


class BatchingWebSocketProtocol(WebSocketsSansIOProtocol):
    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        self.scope["extensions"][SEND_TEXTS] = {}

    async def send(self, message: Any) -> None:
        if message["type"] != SEND_TEXTS:
            await super().send(message)
            return
        await self.writable.wait()
        if self.disconnected or self.close_sent or not self.handshake_complete:
            raise ClientDisconnected()
        for text in message["texts"]:
            self.conn.send_text(text)
        self.transport.write(b"".join(self.conn.data_to_send()))
