"""Process plumbing: the wire fds, and a byte source and sink over them.

Theory of operation
-------------------
``take_stdout()`` and ``take_stdin()`` (``prelude.py``, which also reads the input's first line
before the event loop runs) keep private duplicates of fds 1 and 0 for the wire.

stdin and stdout may be pipes *or regular files* (``acp-agent <script.jsonl >out.jsonl``), and
epoll refuses regular files, so I/O is plain blocking ``os.read``/``os.write`` on a worker
thread: one thread hop per read chunk and one per written batch (``write_all`` loops over partial
writes) — except on a pipe, what editors give, where reading is on the loop: the loop waits for
the pipe to be readable (``anyio.wait_readable``) and one ``read`` then returns at once, since
we are its only reader. That saves the hop each way per read chunk (0.1-0.15 ms here, on every
request's path; issue 16). A tty or a socket keeps the thread. Each fd gets its own *daemon* thread (``_FdThread``). Rejected: ``anyio.to_thread``. Its
workers are not daemons, and a worker stuck in ``read(2)`` on an idle stdin (or ``write(2)`` to a
client that stopped reading) keeps the interpreter from exiting even after the call was abandoned
on cancel, which breaks the SIGTERM deadline. A cancelled call here is abandoned the same way,
but the thread cannot hold the process.

One exception, for the answers a client waits on: a batch of at most ``PIPE_BUF`` bytes (4 KiB)
for a *pipe* is written on the loop, with no thread hop, when ``poll`` says the pipe has room
and the fd's thread has no call left running. It cannot block: Linux reports a pipe writable
while it has a free buffer slot (a page), and a write of at most ``PIPE_BUF`` bytes fits in one.
(We are the pipe's only writer: the duplicate of fd 1 is ours and non-inheritable. A parent
that writes into the same pipe could fill it between the poll and the write; it would have to
break the stdout discipline itself.) A larger batch, a full pipe, a regular file, a tty, or
an fd left ``O_NONBLOCK`` that refuses the write take the thread, in order behind everything
written before: the batches still go out one at a time, in the order ``FrameWriter`` hands them
(issue 16: each thread hop cost the durable idle inject 0.1-0.2 ms).

Failures: any ``OSError`` writing the wire (EPIPE above all) becomes ``WireClosed``, once per
``FdSink``; later calls raise ``WireClosed`` without touching the fd. A read error is logged and
treated as end of input. EPIPE only arrives as an error if SIGPIPE is ignored: CPython ignores it
at start-up, and the CLI must not restore ``SIG_DFL`` (else the kernel kills the process silently
on the first write to a dead client). An fd left ``O_NONBLOCK`` by the parent is waited on with
``select`` rather than spun on.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import stat
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio
import anyio.from_thread
from anyio.lowlevel import EventLoopToken, current_token

from acp_agent.errors import WireClosed
from acp_agent.logs import get_logger
from acp_agent.transport.prelude import read_chunk, take_stdin, take_stdout, write_all

__all__ = ["FdSink", "FdSource", "take_stdin", "take_stdout"]

T = TypeVar("T")

log = get_logger(__name__)

DEFAULT_READ_CHUNK = 256 * 1024


class _Call(Generic[T]):
    """One blocking call handed to an ``_FdThread``; its caller awaits ``done``."""

    def __init__(self, func: Callable[[], T], token: EventLoopToken) -> None:
        self.done = anyio.Event()
        self._func = func
        self._token = token
        self._value: tuple[T] | None = None
        self._error: Exception | None = None
        self.finished = False
        """Set by the worker thread once ``func`` returned or raised (one plain store)."""

    def run(self) -> None:  # on the worker thread
        try:
            self._value = (self._func(),)
        except Exception as exc:
            self._error = exc
        self.finished = True
        # The caller's event loop may be gone (RunFinishedError, or RuntimeError when it closes
        # between anyio's check and the hand-over): then nobody waits for this any more.
        with contextlib.suppress(anyio.RunFinishedError, RuntimeError):
            anyio.from_thread.run_sync(self.done.set, token=self._token)

    def outcome(self) -> T:
        if self._value is None:
            assert self._error is not None
            raise self._error
        return self._value[0]


class _FdThread:
    """A daemon thread running the blocking calls of one fd in submission order."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call[Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._stopped = False
        self._last: _Call[Any] | None = None

    @property
    def idle(self) -> bool:
        """No call is running or queued (an abandoned one may still be running)."""
        return self._last is None or self._last.finished

    async def run(self, func: Callable[[], T]) -> T:
        if self._stopped:
            raise RuntimeError(f"{self._thread.name} is stopped")
        call = _Call(func, current_token())
        self._last = call
        if self._thread.ident is None:
            self._thread.start()
        self._calls.put(call)
        await call.done.wait()
        return call.outcome()

    def stop(self) -> None:
        """Let the thread end once the calls already queued are done; no call may follow."""
        if not self._stopped:
            self._stopped = True
            self._calls.put(None)

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            call.run()


class FdSource:
    """A ``ByteSource`` over a file descriptor (pipe, tty or regular file)."""

    def __init__(self, fd: int, chunk_size: int = DEFAULT_READ_CHUNK, prefix: bytes = b"") -> None:
        """``prefix``: bytes already read from ``fd`` (``prelude.read_first_line``), given first."""
        self._fd = fd
        self._chunk_size = chunk_size
        self._prefix = prefix
        self._thread = _FdThread(f"acp-read-fd{fd}")
        self._on_loop = stat.S_ISFIFO(os.fstat(fd).st_mode)

    async def __call__(self) -> bytes:
        if self._prefix:
            prefix, self._prefix = self._prefix, b""
            return prefix
        try:
            if self._on_loop:
                return await self._read_on_loop()
            return await self._thread.run(lambda: read_chunk(self._fd, self._chunk_size))
        except OSError as exc:
            log.warning("input_read_failed", fd=self._fd, error=str(exc))
            return b""

    async def _read_on_loop(self) -> bytes:
        """A pipe with bytes (or its end) to read: ``read`` returns at once, whatever the fd's
        blocking mode (we are the pipe's only reader)."""
        while True:
            await anyio.wait_readable(self._fd)
            with contextlib.suppress(BlockingIOError):  # an O_NONBLOCK fd woken for nothing
                return os.read(self._fd, self._chunk_size)

    def close(self) -> None:
        """Stop the worker thread (the fd stays open: its owner closes it)."""
        self._thread.stop()


class FdSink:
    """A ``ByteSink`` over a file descriptor; an ``OSError`` becomes ``WireClosed``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._thread = _FdThread(f"acp-write-fd{fd}")
        self._broken: str | None = None
        self._poll: select.poll | None = None
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            self._poll = select.poll()
            self._poll.register(fd, select.POLLOUT)

    async def __call__(self, data: bytes) -> None:
        if self._broken is not None:
            raise WireClosed(self._broken)
        try:
            if len(data) <= select.PIPE_BUF and self._has_room():
                with contextlib.suppress(BlockingIOError):
                    data = data[os.write(self._fd, data) :]
                if not data:
                    return
            await self._thread.run(lambda: write_all(self._fd, data))
        except OSError as exc:
            self._broken = f"writing fd {self._fd}: {exc.strerror or exc}"
            raise WireClosed(self._broken) from exc

    def close(self) -> None:
        """Stop the worker thread (the fd stays open: its owner closes it)."""
        self._thread.stop()

    def _has_room(self) -> bool:
        """A pipe with a free buffer slot, and nothing of ours still being written to it."""
        if self._poll is None or not self._thread.idle:
            return False
        ready = self._poll.poll(0)
        return bool(ready) and ready[0][1] == select.POLLOUT
