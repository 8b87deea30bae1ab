"""A real HTTP/1.1 server on 127.0.0.1 that plays recorded responses, one per request, in order.

Each ``Reply`` names a file under ``recordings/``; its bytes are sent unchanged as the body.
Event streams go out with ``Transfer-Encoding: chunked``, one HTTP chunk per SSE event (the
pieces concatenate to the file, byte for byte), so the client sees them arrive separately.
Other bodies (a 429's JSON) go out with ``Content-Length``. Three endings model failures:

- ``cut``: after the last piece the server closes the socket without the final empty chunk
  (a connection lost mid-answer);
- ``hang``: after the last piece the server sends nothing more and waits until the client
  closes the connection, then sets ``disconnected`` (a slow stream; the test cancels it);
- ``reset``: after the last piece (and a moment for the client to read it) the server resets
  the TCP connection (RST, not a FIN), as llama-cpp-python's server does after ``[DONE]``.

Every request is kept (``requests``) with its raw bytes, so tests can assert the body and
that the API key appears nowhere but in the ``Authorization`` header. Connections are
kept alive between requests, as a real server does.

A session's background title request (``turn/titles.py``: its system message is
``TITLE_SYSTEM``) is kept apart, in ``title_requests``, and answered from ``titles`` (then
``TITLE`` once those are used up) instead of the replies, so tests of turns see the requests
of turns only, in order, whenever the title request happens to come. GET requests (a provider
asking a loopback server for its window, ``openai/probe.py``) are answered 404 and kept apart
too, in ``probes``.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import SocketStream, TaskGroup

from acp_agent.turn.titles import TITLE_SYSTEM
from bench.loopback import parse_head

RECORDINGS = Path(__file__).parent / "recordings"

SSE_HEADERS = (
    ("Content-Type", "text/event-stream; charset=utf-8"),
    ("Cache-Control", "no-cache"),
    ("X-Request-Id", "req_loopback"),
)
JSON_HEADERS = (("Content-Type", "application/json"),)
RESET_AFTER_S = 0.05


@dataclass(frozen=True)
class Reply:
    recording: str
    status: int = 200
    headers: tuple[tuple[str, str], ...] = SSE_HEADERS
    cut: bool = False
    hang: bool = False
    reset: bool = False

    @property
    def body(self) -> bytes:
        return (RECORDINGS / self.recording).read_bytes()

    @property
    def streamed(self) -> bool:
        return any(
            value.startswith("text/event-stream")
            for name, value in self.headers
            if name.lower() == "content-type"
        )

    def pieces(self) -> list[bytes]:
        """The body split after each blank line (one SSE event per piece)."""
        body, pieces, start = self.body, [], 0
        while (end := body.find(b"\n\n", start)) != -1:
            pieces.append(body[start : end + 2])
            start = end + 2
        if start < len(body):
            pieces.append(body[start:])
        assert b"".join(pieces) == body
        return pieces


TITLE = Reply("title.sse")
"""What a title request gets by default: the title ``Greeting the world``."""


def rate_limited(retry_after_ms: int = 20) -> Reply:
    headers = (*JSON_HEADERS, ("retry-after-ms", str(retry_after_ms)), ("retry-after", "1"))
    return Reply("rate-limited.json", status=429, headers=headers)


def failed(status: int, recording: str = "overloaded.json") -> Reply:
    return Reply(recording, status=status, headers=JSON_HEADERS)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    raw: bytes
    connection: int = 0
    """Which TCP connection (numbered from 1 in accept order) carried the request."""

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def asks_title(self) -> bool:
        try:
            messages = json.loads(self.body).get("messages") or [{}]
        except (ValueError, AttributeError):
            return False
        return isinstance(messages[0], dict) and messages[0].get("content") == TITLE_SYSTEM


@dataclass
class LoopbackServer:
    replies: list[Reply]
    port: int = 0
    requests: list[Received] = field(default_factory=list)
    disconnected: anyio.Event = field(default_factory=anyio.Event)
    served: list[Reply] = field(default_factory=list)
    connections: int = 0
    titles: list[Reply] = field(default_factory=list)
    title_requests: list[Received] = field(default_factory=list)
    probes: list[Received] = field(default_factory=list)
    """GET requests (a provider asking for the window, ``openai/probe.py``), answered 404."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _handle(self, stream: SocketStream) -> None:
        self.connections += 1
        connection = self.connections
        async with stream:
            buffer = bytearray()
            while (request := await _read_request(stream, buffer)) is not None:
                request.connection = connection
                if request.method == "GET":  # the window probe (``openai/probe.py``): no reply
                    self.probes.append(request)
                    await _send_plain(stream, 404, b'{"error": {"message": "Not Found"}}')
                    continue
                if request.asks_title:
                    self.title_requests.append(request)
                    if not await self._send_title(stream):
                        return
                    continue
                self.requests.append(request)
                refusal = self.refusal(request)
                if refusal is not None:
                    await _send_plain(stream, refusal[0], refusal[1], JSON_HEADERS)
                    continue
                if not self.replies:
                    await _send_plain(stream, 500, b'{"error":{"message":"no recording left"}}')
                    return
                reply = self.replies.pop(0)
                self.served.append(reply)
                if not await self._send(stream, reply):
                    return

    async def _send_title(self, stream: SocketStream) -> bool:
        """Answer a title request; the agent may hang up mid-answer (a session closed cancels
        its title request), which ends the connection, not the server."""
        try:
            return await self._send(stream, self.titles.pop(0) if self.titles else TITLE)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False

    def refusal(self, request: Received) -> tuple[int, bytes] | None:
        """A status and JSON body to answer ``request`` with instead of the next reply (a
        server that checks what it is sent overrides this); ``None``: play the next reply."""
        return None

    async def _send(self, stream: SocketStream, reply: Reply) -> bool:
        """Send one reply; ``False`` when the connection is over."""
        if not reply.streamed:
            await _send_plain(stream, reply.status, reply.body, reply.headers)
            return True
        head = _head(reply.status, [*reply.headers, ("Transfer-Encoding", "chunked")])
        await stream.send(head)
        for piece in reply.pieces():
            await stream.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        if reply.cut:
            return False
        if reply.reset:
            await anyio.sleep(RESET_AFTER_S)
            _abort(stream)
            return False
        if reply.hang:
            await _wait_for_close(stream)
            self.disconnected.set()
            return False
        await stream.send(b"0\r\n\r\n")
        return True


@asynccontextmanager
async def loopback(*replies: Reply) -> AsyncIterator[LoopbackServer]:
    async with serving(LoopbackServer(list(replies))) as server:
        yield server


S = TypeVar("S", bound=LoopbackServer)


@asynccontextmanager
async def serving(server: S) -> AsyncIterator[S]:
    """Serve ``server`` on an ephemeral port of 127.0.0.1 for the block."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve, listener, server, tg)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


async def _serve(listener: Any, server: LoopbackServer, tg: TaskGroup) -> None:
    await listener.serve(server._handle, task_group=tg)


async def _read_request(stream: SocketStream, buffer: bytearray) -> Received | None:
    while (end := buffer.find(b"\r\n\r\n")) == -1:
        if not await _receive_into(stream, buffer):
            return None
    head = bytes(buffer[: end + 4])
    del buffer[: end + 4]
    method, path, headers = parse_head(head)
    length = int(headers.get("content-length", "0"))
    while len(buffer) < length:
        if not await _receive_into(stream, buffer):
            return None
    body = bytes(buffer[:length])
    del buffer[:length]
    return Received(method, path, headers, body, head + body)


async def _receive_into(stream: SocketStream, buffer: bytearray) -> bool:
    try:
        buffer += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return False
    return True


def _abort(stream: SocketStream) -> None:
    """Make the coming close a reset: linger on, timeout 0."""
    sock = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _wait_for_close(stream: SocketStream) -> None:
    while True:
        try:
            await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


def _head(status: int, headers: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> bytes:
    reason = {200: "OK", 401: "Unauthorized", 429: "Too Many Requests"}.get(status, "Status")
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send_plain(
    stream: SocketStream,
    status: int,
    body: bytes,
    headers: tuple[tuple[str, str], ...] = JSON_HEADERS,
) -> None:
    await stream.send(_head(status, [*headers, ("Content-Length", str(len(body)))]) + body)
