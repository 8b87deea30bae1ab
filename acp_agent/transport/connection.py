"""One JSON-RPC connection: a sequential reader/dispatcher and a single writer.

Theory of operation
-------------------
``async with Connection(source, sink) as conn`` starts the *writer* (``writer.py``), the
only code that ever calls the sink: every frame, from whatever task, goes through its bounded FIFO,
so producers wait while the client is not reading and nothing is dropped or reordered while the
wire is up. Nothing but encoded frames is ever handed to it.

``await conn.serve(router)`` is the *reader*: lines from ``LineReader``, messages from
``decode_message``, dispatched **one at a time, in arrival order**. A request handler is awaited
inline, so a ``session/prompt`` sent right behind a ``session/new`` sees the session it created;
handlers must therefore be quick (a handler that waits on a full queue stalls reading, which is
backpressure the client asked for). Long work returns a ``Deferred``: the dispatcher runs it as a
task and answers when it resolves, while reading goes on. A handler that must say more *after*
its answer (say, notifications about what it just created) returns ``Then``: the answer is
queued, then ``after`` runs, still before the next message is read. Notifications never get an
answer.

**Nothing that waits for the client may run on the reader**: the client's answer arrives on the
same input, which is not read until the handler returns, so such a handler waits for nothing (or
for a timeout) and every session's requests wait behind it. A handler whose work may wait for
the client — directly, or for a turn to end, whose tools may be waiting for it — returns a
``Deferred``. It may resolve to a ``Then``: its answer is queued when the work is done and its
``after`` runs then, in the deferred task (other messages may have been read meanwhile). Only
the handler's synchronous prefix, before the ``Deferred`` is returned, is ordered with the
messages that follow.

Cancelling requests (``$/cancel_request``, a protocol-level notification, handled here and never
routed): when the task waiting in ``request`` is cancelled (its turn was cancelled, or the
session closed) while the client has not answered, the connection sends ``$/cancel_request``
with that request's id and forgets it (a late answer is dropped). A ``$/cancel_request`` from
the client for one of its requests still deferred calls that ``Deferred``'s ``on_cancel`` (a
prompt's ends its turn like ``session/cancel``); for any other request, or an id not pending,
it is logged and ignored, as JSON-RPC cancellation allows.

Endings, each one path:

- stdin EOF: ``serve()`` returns ``ServeEnd.EOF``; deferred requests keep running (the owner awaits
  ``wait_deferred()``); outgoing requests fail with ``WireClosed`` since no answer can arrive.
- EPIPE (the sink raises ``WireClosed``): the writer stops, ``wire_closed`` is set and logged once,
  outgoing requests fail with ``WireClosed``, ``serve()`` stops reading and returns
  ``ServeEnd.WIRE_CLOSED``; frames produced afterwards are dropped (logged at debug), so a turn
  still streaming does not crash on a dead client.
- Once no answer can arrive, what the client must still be told goes out with
  ``post_request`` (a request nobody waits an answer for: a terminal to kill and release).
- A shutdown that cannot wait for deferred requests any more (its deadline passed) calls
  ``answer_abandoned``: each one that says what it is owed then (``Deferred.abandoned``, a
  prompt's ``cancelled``) is answered so at once; a real answer coming later is dropped.
- leaving the ``async with`` block: the writer queue is drained (``close()``, unless the owner
  already called it), then deferred requests still running are cancelled. Call
  ``wait_deferred()`` first to let them finish.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from types import TracebackType
from typing import Protocol, Self, TypeVar, assert_never

import anyio
import anyio.lowlevel
import msgspec
from anyio.abc import TaskGroup

from acp_agent.errors import InternalError, MethodNotFound, RpcError, WireClosed
from acp_agent.logs import get_logger
from acp_agent.transport.framing import DEFAULT_MAX_LINE_BYTES, ByteSink, ByteSource, LineReader
from acp_agent.transport.jsonrpc import (
    Incoming,
    IncomingErrorResponse,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    Invalid,
    RequestId,
    decode_message,
    encode_error,
    encode_notification,
    encode_notifications,
    encode_request,
    encode_response,
)
from acp_agent.transport.outgoing import PendingRequests, decode_result
from acp_agent.transport.writer import FrameWriter

T = TypeVar("T")

log = get_logger(__name__)

DEFAULT_QUEUE_FRAMES = 1024
CANCEL_REQUEST = "$/cancel_request"
POSTED_IDS_FROM = 1 << 40
"""Ids of ``post_request`` frames count up from here: never one of ``request``'s (a counter from
1), still exact in a JavaScript number."""

RequestHandler = Callable[[msgspec.Raw | None], Awaitable[object]]
NotificationHandler = Callable[[msgspec.Raw | None], Awaitable[None]]


class CancelRequestParams(msgspec.Struct, frozen=True, rename="camel"):
    """``$/cancel_request`` params (ACP ``CancelRequestNotification``)."""

    request_id: int | str


_CANCEL_DECODER = msgspec.json.Decoder(CancelRequestParams)


class Router(Protocol):
    """Maps method names to handlers; ``None`` means the method is unknown."""

    def request_handler(self, method: str) -> RequestHandler | None: ...

    def notification_handler(self, method: str) -> NotificationHandler | None: ...


class Deferred:
    """Returned by a request handler: answer with what ``awaitable`` produces, later.

    ``awaitable`` may produce a ``Then``: its ``result`` is the answer, its ``after`` runs once
    the answer is queued. ``abandoned``, if not ``None``, is the answer owed should the shutdown
    stop waiting for ``awaitable`` (``Connection.answer_abandoned``). ``on_cancel``, if not
    ``None``, is what the client's ``$/cancel_request`` for this request does (it must not wait
    for the client); the answer is still ``awaitable``'s.
    """

    __slots__ = ("abandoned", "awaitable", "on_cancel")

    def __init__(
        self,
        awaitable: Awaitable[object],
        abandoned: object | None = None,
        on_cancel: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.awaitable = awaitable
        self.abandoned = abandoned
        self.on_cancel = on_cancel


class Then:
    """Returned by a request handler: answer with ``result`` now, then run ``after``.

    ``after`` runs inline once the answer is queued (so whatever it writes follows the answer),
    before the next message is dispatched; an exception in it is logged, never answered.
    """

    __slots__ = ("after", "result")

    def __init__(self, result: object, after: Callable[[], Awaitable[None]]) -> None:
        self.result = result
        self.after = after


class ServeEnd(StrEnum):
    EOF = "eof"
    WIRE_CLOSED = "wire_closed"


class Connection:
    """A JSON-RPC peer over a byte source and sink; see the module docstring."""

    def __init__(
        self,
        source: ByteSource,
        sink: ByteSink,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        queue_frames: int = DEFAULT_QUEUE_FRAMES,
    ) -> None:
        self._source = source
        self._router: Router | None = None
        """Given to ``serve``: the connection exists before what it routes to (which may need it
        to send notifications and requests), and is built first."""
        self._max_line_bytes = max_line_bytes
        self.wire_closed = anyio.Event()
        """Set once the client stopped taking frames (EPIPE); the owner starts its shutdown."""
        self._writer = FrameWriter(sink, queue_frames, self._on_wire_closed)
        self._outgoing = PendingRequests()
        self._posted_ids = itertools.count(POSTED_IDS_FROM)
        self._deferred = _InFlight()
        self._read_scope: anyio.CancelScope | None = None
        self._task_group: TaskGroup | None = None
        self._closing = False

    async def __aenter__(self) -> Self:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._writer.run, name="acp-writer")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        try:
            if exc_type is None and not self._closing:
                await self.close()
        finally:
            self._task_group.cancel_scope.cancel()
            self._writer.discard()
            suppress = await self._task_group.__aexit__(exc_type, exc, tb)
        return suppress

    async def serve(self, router: Router) -> ServeEnd:
        """Read and dispatch to ``router`` until end of input or a broken wire; deferred
        requests go on.

        Call it once. When it ends (or is cancelled) outgoing requests fail with ``WireClosed``.
        """
        assert self._router is None, "serve() is called once"
        self._router = router
        try:
            async for item in LineReader(self._read_chunk, self._max_line_bytes):
                if self.wire_closed.is_set():
                    break
                message = decode_message(item)
                if message is not None:
                    await self._dispatch(message)
        finally:  # also when the owner cancels serve(): nothing reads responses any more
            self._outgoing.fail_all("the client's input is no longer read: no response can arrive")
        return ServeEnd.WIRE_CLOSED if self.wire_closed.is_set() else ServeEnd.EOF

    async def notify(self, method: str, params: object = None, *, urgent: bool = False) -> None:
        """Queue a notification; dropped once the wire closed.

        A plain one waits while the queue is full (backpressure on streaming producers); an
        ``urgent`` one never waits — for notifications whose number the journal bounds, so a
        session can commit (and honour a cancel) while the client is not reading.
        """
        frame = encode_notification(method, params)
        if urgent:
            self._writer.put_now(frame)
        else:
            await self._writer.put(frame)

    async def notify_all(self, method: str, params: Sequence[object]) -> None:
        """Queue one plain notification per item of ``params``, as one block of frames (one
        encoder call, one place in the writer's queue; the client reads the same lines as from
        one ``notify`` each); waits while the queue is full, each frame of the block counting
        against its capacity. Then lets the writer run: a producer of blocks would otherwise
        fill the queue before the first one is written, and the client would decode nothing
        until then (no pipelining)."""
        if params:
            await self._writer.put(encode_notifications(method, params), len(params))
            await anyio.lowlevel.checkpoint()

    async def request(self, method: str, params: object, result_type: type[T]) -> T:
        """Send a request to the client and decode its result as ``result_type``.

        Raises ``PeerError`` for an error response, ``InvalidPeerResult`` for a result of the
        wrong shape, ``WireClosed`` when no response can arrive.
        """
        request_id, waiter = self._outgoing.open()
        sent = False
        try:
            if not await self._writer.put(encode_request(request_id, method, params)):
                raise WireClosed("the connection is closed")
            sent = True
            await waiter.done.wait()
        except anyio.get_cancelled_exc_class():
            if sent and not waiter.done.is_set():
                self._cancel_outgoing(request_id, method)
            raise
        finally:
            self._outgoing.forget(request_id)
        return decode_result(method, waiter.outcome(), result_type)

    def _cancel_outgoing(self, request_id: int, method: str) -> None:
        """Tell the client we stopped waiting for ``request_id`` (never waits)."""
        log.info("request_cancelled", id=request_id, method=method)
        self._writer.put_now(encode_notification(CANCEL_REQUEST, CancelRequestParams(request_id)))

    def post_request(self, method: str, params: object) -> bool:
        """Send a request whose answer nobody waits for; ``False`` if it was dropped.

        For what the client must be told when ``request`` can get no answer any more (it raised
        ``WireClosed``: the input ended, or the connection is closing) while stdout may still
        be writable: a terminal to kill and release. Never waits (the owners bound how many
        there are). An answer that does arrive is dropped like any unknown id.
        """
        frame = encode_request(next(self._posted_ids), method, params)
        return self._writer.put_now(frame)

    async def wait_deferred(self) -> None:
        """Return once every deferred request received so far has been answered."""
        await self._deferred.wait_idle()

    def answer_abandoned(self) -> int:
        """Answer now each deferred request still running that names its ``abandoned`` answer;
        its own answer, should it still come, is dropped. How many were answered.

        For a shutdown past its deadline, about to exit without waiting for them (say, a turn
        whose tool is stuck in a thread: its prompt is answered ``cancelled``).
        """
        owed = self._deferred.abandon()
        for request_id, answer in owed:
            self._writer.put_now(encode_response(request_id, answer))
        return len(owed)

    async def close(self) -> None:
        """Write every frame queued so far, then stop the writer; later frames are dropped.

        Waits as long as the client takes to read them: bound it with a timeout when the client
        may have stopped reading. Leaving the ``async with`` block after a ``close`` (even a timed
        out one) does not wait again: it cancels the writer.
        """
        self._closing = True
        self._outgoing.fail_all("the connection is closed")
        await self._writer.close()

    async def _read_chunk(self) -> bytes:
        with anyio.CancelScope() as scope:
            self._read_scope = scope
            if self.wire_closed.is_set():
                return b""
            return await self._source()
        return b""  # cancelled by _on_wire_closed: read as end of input

    async def _dispatch(self, message: Incoming) -> None:
        match message:
            case IncomingRequest():
                await self._on_request(message)
            case IncomingNotification():
                await self._on_notification(message)
            case IncomingResponse() | IncomingErrorResponse():
                if not self._outgoing.settle(message):
                    log.warning("response_dropped", id=message.id)
            case Invalid():
                log.warning(
                    "frame_rejected",
                    code=int(message.error.code),
                    id=message.id,
                    data=message.error.data,
                )
                self._writer.put_now(encode_error(message.id, message.error))
            case _:
                assert_never(message)

    async def _on_request(self, request: IncomingRequest) -> None:
        assert self._router is not None
        handler = self._router.request_handler(request.method)
        if handler is None:
            error = MethodNotFound("Method not found", {"method": request.method})
            self._writer.put_now(encode_error(request.id, error))
            return
        params = request.params
        follow_ups: list[Callable[[], Awaitable[None]]] = []

        async def call() -> object:
            result = await handler(params)
            if isinstance(result, Then):
                follow_ups.append(result.after)
                return result.result
            return result

        outcome = await self._answer(request.id, request.method, call)
        if isinstance(outcome, Deferred):
            self._start_deferred(request.id, request.method, outcome)
            return
        self._writer.put_now(outcome)  # never wait here: the reader must go on reading
        await _follow_up(request.id, request.method, follow_ups)

    async def _on_notification(self, notification: IncomingNotification) -> None:
        method = notification.method
        if method == CANCEL_REQUEST:
            await self._on_cancel_request(notification.params)
            return
        assert self._router is not None
        handler = self._router.notification_handler(method)
        if handler is None:
            log.debug("notification_ignored", method=method)
            return
        try:
            await handler(notification.params)
        except RpcError as exc:
            log.warning(
                "notification_rejected", method=method, code=int(exc.code), error=exc.message
            )
        except Exception:
            log.exception("handler_failed", method=method)

    async def _on_cancel_request(self, params: msgspec.Raw | None) -> None:
        """The client's ``$/cancel_request``: the deferred request's ``on_cancel``, if any."""
        try:
            request_id = _CANCEL_DECODER.decode(params or b"{}").request_id
        except msgspec.DecodeError as exc:
            log.warning("cancel_request_rejected", error=str(exc))
            return
        on_cancel = self._deferred.on_cancel(request_id)
        if on_cancel is None:
            log.info("cancel_request_ignored", id=request_id, reason="nothing cancellable")
            return
        log.info("cancel_request_honoured", id=request_id)
        try:
            await on_cancel()
        except Exception:
            log.exception("handler_failed", method=CANCEL_REQUEST, id=request_id)

    async def _answer(
        self, request_id: RequestId, method: str, call: Callable[[], Awaitable[object]]
    ) -> bytes | Deferred:
        """Run a handler; its response frame, or the ``Deferred`` it returned."""
        try:
            result = await call()
            if isinstance(result, Deferred):
                return result
            return encode_response(request_id, result)
        except RpcError as exc:
            return encode_error(request_id, exc)
        except Exception:
            log.exception("handler_failed", method=method, id=request_id)
            return encode_error(request_id, InternalError("Internal error"))

    def _start_deferred(self, request_id: RequestId, method: str, deferred: Deferred) -> None:
        assert self._task_group is not None, "use Connection as an async context manager"
        token = self._deferred.enter(request_id, deferred.abandoned, deferred.on_cancel)
        self._task_group.start_soon(self._finish_deferred, request_id, method, deferred, token)

    async def _finish_deferred(
        self, request_id: RequestId, method: str, deferred: Deferred, token: int
    ) -> None:
        """Answer ``deferred`` (unless ``answer_abandoned`` already did), then its follow-up."""
        follow_ups: list[Callable[[], Awaitable[None]]] = []

        async def call() -> object:
            result = await deferred.awaitable
            if isinstance(result, Then):
                follow_ups.append(result.after)
                return result.result
            return result

        try:
            outcome = await self._answer(request_id, method, call)
            if isinstance(outcome, Deferred):
                log.error("handler_failed", method=method, id=request_id, error="nested Deferred")
                outcome = encode_error(request_id, InternalError("Internal error"))
            if self._deferred.abandoned(token):
                log.info("deferred_answer_dropped", method=method, id=request_id)
                return
            await self._writer.put(outcome)
            await _follow_up(request_id, method, follow_ups)
        finally:
            self._deferred.leave(token)

    def _on_wire_closed(self, exc: WireClosed) -> None:
        log.warning("wire_closed", error=str(exc))
        self.wire_closed.set()
        self._outgoing.fail_all(f"the wire closed: {exc}")
        if self._read_scope is not None:
            self._read_scope.cancel()


async def _follow_up(
    request_id: RequestId, method: str, follow_ups: list[Callable[[], Awaitable[None]]]
) -> None:
    """Run a ``Then``'s ``after`` (the answer is queued); a failure is logged, never answered."""
    for after in follow_ups:
        try:
            await after()
        except Exception:
            log.exception("follow_up_failed", method=method, id=request_id)


class _InFlight:
    """Deferred requests not yet answered, by a token of their own (a client may reuse ids):
    counted for ``wait_idle``, with the answer each is owed should the shutdown give up on it.

    Invariant: a token is in ``_abandoned`` only while it is open, and once it is there its
    request has been answered (``abandon``) and its own answer must be dropped.
    """

    def __init__(self) -> None:
        self._tokens = itertools.count()
        self._open: dict[int, tuple[RequestId, object | None]] = {}
        self._on_cancel: dict[int, Callable[[], Awaitable[None]]] = {}
        self._abandoned: set[int] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def enter(
        self,
        request_id: RequestId,
        abandoned: object | None,
        on_cancel: Callable[[], Awaitable[None]] | None = None,
    ) -> int:
        if not self._open:
            self._idle = anyio.Event()
        token = next(self._tokens)
        self._open[token] = (request_id, abandoned)
        if on_cancel is not None:
            self._on_cancel[token] = on_cancel
        return token

    def on_cancel(self, request_id: RequestId) -> Callable[[], Awaitable[None]] | None:
        """What cancels the open request with that id (the newest, should ids repeat)."""
        tokens = [t for t, (rid, _) in self._open.items() if rid == request_id]
        return self._on_cancel.get(tokens[-1]) if tokens else None

    def leave(self, token: int) -> None:
        self._open.pop(token, None)
        self._on_cancel.pop(token, None)
        self._abandoned.discard(token)
        if not self._open:
            self._idle.set()

    def abandoned(self, token: int) -> bool:
        return token in self._abandoned

    def abandon(self) -> list[tuple[RequestId, object]]:
        """The requests to answer now (their ``abandoned`` answer), each returned once."""
        owed = [
            (token, request_id, answer)
            for token, (request_id, answer) in self._open.items()
            if answer is not None and token not in self._abandoned
        ]
        self._abandoned.update(token for token, _, _ in owed)
        return [(request_id, answer) for _, request_id, answer in owed]

    async def wait_idle(self) -> None:
        while self._open:
            await self._idle.wait()
