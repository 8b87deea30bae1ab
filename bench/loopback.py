"""A tiny OpenAI-compatible HTTP/1.1 server on 127.0.0.1 for the cases that run the real provider.

Every ``POST .../chat/completions`` is answered with the same minimal Chat Completions event
stream (one text delta, a ``stop``, ``[DONE]``), sent in one write with
``Transfer-Encoding: chunked``; connections are kept alive. Each request is kept with its body
and the ``perf_counter()`` at which its last byte was read, so a case can measure what the agent
sent and when. It runs on the benchmark's own event loop (asyncio streams), so it costs ours the
same in every round; nothing here imports the tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

TEXT = "Hello!"


def _event(delta: dict[str, object], finish: str | None) -> bytes:
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


STREAM = (
    _event({"role": "assistant", "content": TEXT}, None) + _event({}, "stop") + b"data: [DONE]\n\n"
)
HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
REPLY = HEAD + f"{len(STREAM):x}\r\n".encode() + STREAM + b"\r\n0\r\n\r\n"


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received: float
    """``perf_counter()`` when the body's last byte was read."""


@dataclass
class Loopback:
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def take(self) -> list[Request]:
        """The requests received so far; forgets them."""
        got, self.requests = self.requests, []
        self.arrived.clear()
        return got

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                method, path, headers = parse_head(head)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append(Request(method, path, headers, body, time.perf_counter()))
                self.arrived.set()
                if method == "POST" and path.endswith("/chat/completions"):
                    writer.write(REPLY)
                else:
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def loopback() -> AsyncIterator[Loopback]:
    server = Loopback()
    listener = await asyncio.start_server(server._handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        await listener.wait_closed()


def parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """An HTTP/1.1 request head: method, path and the headers, names lower-cased."""
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, path, headers
