"""The single writer: the only code that calls the byte sink.

Frames (whole encoded lines) go in through a bounded FIFO; ``put`` waits while it is full, so a
client that stops reading slows producers down instead of growing memory, and nothing is dropped
or reordered while the wire is up. ``run`` takes every frame already queued (up to
``_BATCH_BYTES``) and writes them with one sink call: one thread hop per batch, not per frame.

Stopping: ``close`` queues an end marker *behind* every frame queued so far (the FIFO also holds
producers already waiting), so they are all written first. A sink raising ``WireClosed`` stops
the writer at once and calls ``on_closed``; closing the queue's receive end then fails waiting
and later producers, whose frames are dropped (``put`` returns ``False``, logged at debug).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import anyio
import structlog

from acp_agent.errors import WireClosed
from acp_agent.transport.framing import ByteSink

log = structlog.get_logger(__name__)

_BATCH_BYTES = 1024 * 1024


class FrameWriter:
    """The single owner of the sink: frames in through a bounded FIFO, batches out."""

    def __init__(
        self, sink: ByteSink, capacity: int, on_closed: Callable[[WireClosed], None]
    ) -> None:
        self._sink = sink
        self._on_closed = on_closed
        self._send, self._receive = anyio.create_memory_object_stream[bytes | None](capacity)
        self._done = anyio.Event()

    async def put(self, frame: bytes) -> bool:
        """Queue ``frame``, waiting for room; ``False`` if it was dropped (writer stopped)."""
        try:
            await self._send.send(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("frame_dropped", size=len(frame))
            return False
        return True

    async def close(self) -> None:
        """Queue the end marker behind every frame queued so far and wait for the writer."""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(None)  # fails when the writer already stopped
        self._send.close()
        await self._done.wait()

    def discard(self) -> None:
        """Close both ends of the queue; frames still queued are dropped."""
        self._send.close()
        self._receive.close()

    async def run(self) -> None:
        try:
            with self._receive:  # closing it fails waiting and later producers: frames dropped
                done = False
                while not done:
                    batch, done = await self._next_batch()
                    if batch:
                        await self._sink(batch)
        except WireClosed as exc:
            self._on_closed(exc)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass  # discarded while idle
        finally:
            self._done.set()

    async def _next_batch(self) -> tuple[bytes, bool]:
        """Every frame queued now (up to ``_BATCH_BYTES``), and whether the end marker came."""
        frames: list[bytes] = []
        size = 0
        frame = await self._receive.receive()
        while frame is not None:
            frames.append(frame)
            size += len(frame)
            if size >= _BATCH_BYTES:
                return b"".join(frames), False
            try:
                frame = self._receive.receive_nowait()
            except anyio.WouldBlock:
                return b"".join(frames), False
        return b"".join(frames), True
