"""ACP over streamable HTTP, as the ACP transport RFD and ``@agentclientprotocol/sdk`` 2.4.0
define it (``dist/transports/server.js``, ``connection.js``, ``http-stream.js``).

- ``POST`` of ``initialize`` without ``Acp-Connection-Id`` opens a connection: answered 200
  with the ``initialize`` response as its JSON body and the new ``Acp-Connection-Id`` header.
- ``POST`` of any other message carries ``Acp-Connection-Id`` (unknown: 404) and, for a
  session's messages, ``Acp-Session-Id`` (missing while ``params.sessionId`` is set or the method
  is session-scoped, or different from it: 400); answered 202, the agent's answer travels on an
  SSE stream. A body over ``--max-line-bytes`` is answered 413 with a JSON-RPC -32600 error and
  not read further; a JSON array (a batch) 400 with -32600.
- ``GET`` (``Accept: text/event-stream``) with ``Acp-Connection-Id`` is the connection's stream,
  with ``Acp-Session-Id`` too that session's; one receiver each (a second: 409). Messages wait
  in their stream's queue until a receiver attaches.
- ``DELETE`` with ``Acp-Connection-Id`` ends the connection (202).

Routing of the agent's messages (``connection.js`` ``routeOutbound``): a response goes where its
request came from (the session of its ``Acp-Session-Id``, else the connection), except that a
``session/load`` answer goes to the connection stream (so its relative order with the replayed
updates on the session stream is not observable); a request or notification with
``params.sessionId`` to that session's stream, anything else to the connection stream.

A connection ends, as a dropped stdio client, on ``DELETE`` only (and at the process's end), as
the SDK's reference server (``server.js``: only ``handleDelete`` removes a connection): its
connection stream closing, or never being opened, leaves it alive, its messages waiting for the
next receiver. Every queue of a connection counts against ``MAX_BUFFERED_BYTES``: past it, the
connection's writer waits (as on a full pipe), and only that connection's.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from acp_agent.errors import WireClosed
from acp_agent.logs import get_logger
from acp_agent.remote.gate import header
from acp_agent.remote.hub import Hub
from acp_agent.transport.memory import MemoryPipe

log = get_logger("acp_agent.remote")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CONNECTION_ID = "Acp-Connection-Id"
SESSION_ID = "Acp-Session-Id"
MAX_BUFFERED_BYTES = 16 * 1024 * 1024
INITIALIZE_TIMEOUT_S = 30.0
KEEP_ALIVE_S = 15.0
INBOUND_CAPACITY = 1024 * 1024
SESSION_SCOPED = frozenset(
    {
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/prompt",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)


NO_ID = msgspec.Raw(b"")


class _Envelope(msgspec.Struct):
    """What routing reads of a message; everything else stays unread. ``id`` is its JSON text
    (``NO_ID``: none), the key of the routes."""

    id: msgspec.Raw = NO_ID
    method: Any = None
    params: msgspec.Raw = NO_ID


class _SessionRef(msgspec.Struct):
    sessionId: str | None = None  # the wire's spelling


_envelope = msgspec.json.Decoder(_Envelope)
_session_ref = msgspec.json.Decoder(_SessionRef)


def _session_of(params: msgspec.Raw) -> str | None:
    """``params.sessionId`` when it is a string (the rest of ``params`` is skipped unread)."""
    if not params:
        return None
    try:
        return _session_ref.decode(params).sessionId
    except msgspec.DecodeError:
        return None


def _envelope_of(body: bytes) -> _Envelope | None:
    try:
        return _envelope.decode(body)
    except msgspec.DecodeError:
        return None


class Outbox:
    """One SSE stream's queue: encoded messages waiting for (or flowing to) its receiver."""

    def __init__(self, link: Link) -> None:
        self._link = link
        self.frames: deque[bytes] = deque()
        self.attached = False
        self.changed = anyio.Event()

    def push(self, frame: bytes) -> None:
        self.frames.append(frame)
        self._link.buffered += len(frame)
        self.wake()

    def pop(self) -> bytes:
        frame = self.frames.popleft()
        self._link.taken(len(frame))
        return frame

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class Link:
    """One streamable-HTTP connection: its inbound pipe, its outboxes, its routes."""

    def __init__(self, max_bytes: int) -> None:
        self.id = secrets.token_urlsafe(18)
        self.inbound = MemoryPipe(INBOUND_CAPACITY)
        self.max_bytes = max_bytes
        self.connection = Outbox(self)
        self.sessions: dict[str, Outbox] = {}
        self.routes: dict[bytes, str | None] = {}
        """Request id (its JSON text) → the session whose stream gets the answer."""
        self.initial: dict[bytes, tuple[anyio.Event, list[bytes]]] = {}
        self.buffered = 0
        self._room = anyio.Event()
        self.gone = anyio.Event()
        """The client went away (or the connection ended): nothing more is read or written."""

    def outbox(self, session_id: str | None) -> Outbox:
        if session_id is None:
            return self.connection
        box = self.sessions.get(session_id)
        if box is None:
            box = self.sessions[session_id] = Outbox(self)
        return box

    def detached(self) -> bool:
        """No stream of the connection is open: a load or resume of one of its sessions from
        another connection takes it over (docs/contract.md §13)."""
        boxes = (self.connection, *self.sessions.values())
        return not self.gone.is_set() and not any(box.attached for box in boxes)

    def taken(self, size: int) -> None:
        self.buffered -= size
        self._room.set()
        self._room = anyio.Event()

    def drop(self, why: str) -> None:
        if self.gone.is_set():
            return
        log.info("http_connection_dropped", connection_id=self.id, reason=why)
        self.gone.set()
        self.inbound.close_write()
        self._room.set()
        self.connection.wake()
        for box in self.sessions.values():
            box.wake()

    # -- the Connection's source and sink -----------------------------------------------------

    async def read(self) -> bytes:
        return await self.inbound.read()

    async def write(self, data: bytes) -> None:
        for line in data.split(b"\n"):
            if line:
                await self._route(line)

    async def _route(self, line: bytes) -> None:
        while self.buffered > MAX_BUFFERED_BYTES and not self.gone.is_set():
            await self._room.wait()
        if self.gone.is_set():
            raise WireClosed("the HTTP client is gone")
        envelope = _envelope_of(line)
        if envelope is None:
            self.connection.push(line)
            return
        if envelope.method is None and envelope.id:  # a response
            key = bytes(envelope.id)
            waiting = self.initial.pop(key, None)
            if waiting is not None:
                waiting[1].append(line)
                waiting[0].set()
                return
            self.outbox(self.routes.pop(key, None)).push(line)
            return
        self.outbox(_session_of(envelope.params)).push(line)


class Streamable:
    """The HTTP side of the listener: every ``Link`` of the process, by connection id."""

    def __init__(self, hub: Hub, tg: TaskGroup) -> None:
        self.hub = hub
        self.tg = tg
        self.links: dict[str, Link] = {}
        hub.on_signal(self._stop_waiting)

    def _stop_waiting(self) -> None:
        for link in self.links.values():
            for event, _ in link.initial.values():
                event.set()

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            await respond(send, 405, b"Method Not Allowed")

    # -- POST -----------------------------------------------------------------------------------

    async def _post(self, headers: list[tuple[bytes, bytes]], receive: Receive, send: Send) -> None:
        kind = (header(headers, b"content-type") or "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            await respond(send, 415, b"Unsupported Media Type")
            return
        body = await read_body(receive, self.hub.options.max_line_bytes)
        if body is None:
            limit = self.hub.options.max_line_bytes
            await respond_rpc_error(send, 413, -32600, f"message larger than {limit} bytes")
            return
        line = body.replace(b"\n", b" ").replace(b"\r", b" ").strip()
        if line.startswith(b"["):
            await respond_rpc_error(send, 400, -32600, "JSON-RPC batches are not supported")
            return
        envelope = _envelope_of(line)
        if envelope is None:
            await respond(send, 400, b"Invalid JSON-RPC message")
            return
        connection_id = header(headers, CONNECTION_ID.lower().encode())
        if envelope.method == "initialize":
            if connection_id is not None:
                await respond(send, 400, b"Initialize not allowed on existing connection")
                return
            await self._initialize(line, envelope, send)
            return
        link = await self._link_named(headers, send)
        if link is None:
            return
        refusal = _route_request(link, envelope, header(headers, SESSION_ID.lower().encode()))
        if refusal is not None:
            await respond(send, 400, refusal.encode())
            return
        try:
            await link.inbound.write(line + b"\n")
        except WireClosed:
            await respond(send, 404, b"Unknown Acp-Connection-Id")
            return
        await respond(send, 202, b"")

    async def _initialize(self, line: bytes, envelope: _Envelope, send: Send) -> None:
        if not envelope.id or bytes(envelope.id) == b"null":
            await respond(send, 400, b"Initialize request must include an ID")
            return
        if self.hub.stopping:
            await respond(send, 503, b"The agent is shutting down")
            return
        link = Link(self.hub.options.max_line_bytes)
        answered = anyio.Event()
        answer: list[bytes] = []
        link.initial[bytes(envelope.id)] = (answered, answer)
        self.links[link.id] = link
        self.tg.start_soon(self._serve_link, link)
        await link.inbound.write(line + b"\n")
        with anyio.move_on_after(INITIALIZE_TIMEOUT_S):
            await answered.wait()
        if not answer:
            link.drop("initialize not answered")
            await respond(send, 500, b"Initialize failed")
            return
        extra = [(CONNECTION_ID.lower().encode(), link.id.encode())]
        await respond(send, 200, answer[0], b"application/json", extra)

    async def _serve_link(self, link: Link) -> None:
        try:
            await self.hub.serve(link.read, link.write, f"http {link.id}", link.detached)
        finally:
            link.drop("connection ended")
            del self.links[link.id]

    # -- GET (the SSE streams) ------------------------------------------------------------------

    async def _get(self, headers: list[tuple[bytes, bytes]], receive: Receive, send: Send) -> None:
        if (header(headers, b"upgrade") or "").lower() == "websocket":
            await respond(send, 426, b"Upgrade Required")
            return
        if "text/event-stream" not in (header(headers, b"accept") or "").lower():
            await respond(send, 406, b"Not Acceptable")
            return
        link = await self._link_named(headers, send)
        if link is None:
            return
        session_id = header(headers, SESSION_ID.lower().encode())
        box = link.outbox(session_id)
        if box.attached:
            await respond(send, 409, b"Outbound stream already has an active receiver")
            return
        box.attached = True
        try:
            await _stream(link, box, receive, send)
        finally:
            box.attached = False
            if session_id is not None and not box.frames:
                link.sessions.pop(session_id, None)

    # -- DELETE -----------------------------------------------------------------------------------

    async def _delete(self, headers: list[tuple[bytes, bytes]], send: Send) -> None:
        link = await self._link_named(headers, send, ending_too=True)
        if link is None:
            return
        link.drop("DELETE")
        await respond(send, 202, b"")

    async def _link_named(
        self, headers: list[tuple[bytes, bytes]], send: Send, *, ending_too: bool = False
    ) -> Link | None:
        """The connection the ``Acp-Connection-Id`` header names; ``None`` once a 400 (no
        header) or 404 (no such connection, or one that is ending unless ``ending_too``) is
        answered."""
        connection_id = header(headers, CONNECTION_ID.lower().encode())
        if connection_id is None:
            await respond(send, 400, b"Missing Acp-Connection-Id")
            return None
        link = self.links.get(connection_id)
        if link is None or (link.gone.is_set() and not ending_too):
            await respond(send, 404, b"Unknown Acp-Connection-Id")
            return None
        return link


def _route_request(link: Link, envelope: _Envelope, session_header: str | None) -> str | None:
    """Check a client message's session header and note where its answer goes; the refusal."""
    if envelope.method is None:  # a response to one of the agent's requests
        return None
    in_params = _session_of(envelope.params)
    scoped = isinstance(envelope.method, str) and envelope.method in SESSION_SCOPED
    if (scoped or in_params is not None) and session_header is None:
        return "Missing Acp-Session-Id"
    if session_header is not None and in_params is not None and session_header != in_params:
        return "Mismatched Acp-Session-Id"
    if envelope.id:
        route = None if envelope.method == "session/load" else session_header
        link.routes[bytes(envelope.id)] = route
    return None


async def _stream(link: Link, box: Outbox, receive: Receive, send: Send) -> None:
    """Send ``box``'s messages as SSE events until the client leaves or the link ends (after
    what was queued); a comment line every ``KEEP_ALIVE_S`` keeps proxies from timing out."""
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    left = anyio.Event()

    async def watch_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        left.set()
        box.wake()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_disconnect)
        while not left.is_set():
            if box.frames:
                await send(_event(box.pop()))
                continue
            if link.gone.is_set():
                break
            with anyio.move_on_after(KEEP_ALIVE_S) as waited:
                await box.changed.wait()
            if waited.cancelled_caught:
                await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
        if not left.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        tg.cancel_scope.cancel()


def _event(frame: bytes) -> Message:
    return {"type": "http.response.body", "body": b"data: " + frame + b"\n\n", "more_body": True}


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or ``None`` once it grows past ``limit`` (the rest is not read)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = b"text/plain; charset=utf-8",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-type", content_type), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def respond_rpc_error(send: Send, status: int, code: int, message: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    await respond(send, status, msgspec.json.encode(error), b"application/json")
