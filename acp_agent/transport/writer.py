"""The single writer: the only code that calls the byte sink.

Frames (whole encoded lines) go in through one FIFO. ``put`` waits while the FIFO holds
``capacity`` frames, so a client that stops reading slows streaming producers down instead of
growing memory; ``put_now`` never waits: it is for frames whose number the client itself bounds
(answers to its requests) or the session's journal bounds (projections of journal events), so
that neither reading stdin nor committing a turn ever stalls behind a client that is not reading
(a ``session/cancel`` must still be honoured then). Both append in call order, and producers that
wait do so in FIFO order: nothing is dropped or reordered while the wire is up. ``run`` takes every frame already queued (up to
``_BATCH_BYTES``) and writes them with one sink call: one thread hop per batch, not per frame.

Stopping: ``close`` queues an end marker *behind* every frame queued so far (the FIFO also holds
producers already waiting), so they are all written first. A sink raising ``WireClosed`` stops
the writer at once and calls ``on_closed``; closing the queue's receive end then fails waiting
and later producers, whose frames are dropped (``put`` returns ``False``, logged at debug).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import anyio
import anyio.lowlevel

from acp_agent.errors import WireClosed
from acp_agent.logs import get_logger
from acp_agent.transport.framing import ByteSink

log = get_logger(__name__)

_BATCH_BYTES = 1024 * 1024
_YIELD_EVERY = 64


class FrameWriter:
    """The single owner of the sink: frames in through one FIFO, batches out."""

    def __init__(
        self, sink: ByteSink, capacity: int, on_closed: Callable[[WireClosed], None]
    ) -> None:
        self._sink = sink
        self._on_closed = on_closed
        self._capacity = capacity
        self._frames: deque[tuple[bytes, int]] = deque()
        """Each item: its bytes and how many frames they are (a block of a replay: many)."""
        self._queued = 0
        """Frames in ``_frames``: what ``capacity`` bounds."""
        self._room = anyio.Lock()  # producers waiting for room wait in FIFO order
        self._changed = anyio.Event()
        self._watched = False
        self._closing = False
        self._stopped = False
        self._done = anyio.Event()
        self._unyielded = 0

    def _signal(self) -> None:
        """Wake whoever waits for a change (a new Event only when someone waits)."""
        if self._watched:
            self._watched = False
            event, self._changed = self._changed, anyio.Event()
            event.set()

    async def _wait_change(self) -> None:
        self._watched = True
        await self._changed.wait()

    async def put(self, frame: bytes, frames: int = 1) -> bool:
        """Queue ``frame``, waiting for room; ``False`` if it was dropped (writer stopped).
        ``frames``: how many whole lines ``frame`` holds (each counts against the capacity).

        With room and nobody waiting ahead, the frame is queued at once: no lock, and a
        checkpoint only every ``_YIELD_EVERY`` frames (a producer that never blocks still lets
        the loop read stdin, so a cancel gets in) instead of two per frame.
        """
        if self._queued < self._capacity and not self._room.locked():
            self._unyielded += 1
            if self._unyielded >= _YIELD_EVERY:
                self._unyielded = 0
                await anyio.lowlevel.checkpoint()
                return await self.put(frame, frames)  # the queue may have changed meanwhile
            return self.put_now(frame, frames)
        self._unyielded = 0
        async with self._room:
            while self._queued >= self._capacity and not self._stopped:
                await self._wait_change()
            return self.put_now(frame, frames)

    def put_now(self, frame: bytes, frames: int = 1) -> bool:
        """Queue ``frame`` without waiting for room (see the module docstring for when)."""
        if self._stopped or self._closing:
            log.debug("frame_dropped", size=len(frame))
            return False
        self._frames.append((frame, frames))
        self._queued += frames
        self._signal()
        return True

    async def close(self) -> None:
        """Write every frame queued so far (and of producers already waiting), then stop."""
        async with self._room:
            self._closing = True
            self._signal()
        await self._done.wait()

    def discard(self) -> None:
        """Stop at once; frames still queued are dropped."""
        self._stopped = True
        self._frames.clear()
        self._queued = 0
        self._signal()

    async def run(self) -> None:
        try:
            while not self._stopped:
                if self._frames:
                    await self._sink(self._next_batch())
                elif self._closing:
                    break
                else:
                    await self._wait_change()
        except WireClosed as exc:
            self._stopped = True
            self._frames.clear()
            self._queued = 0
            self._on_closed(exc)
        finally:
            self._stopped = True
            self._signal()
            self._done.set()

    def _next_batch(self) -> bytes:
        """Every frame queued now, up to ``_BATCH_BYTES``; frees their room."""
        frames: list[bytes] = []
        size = 0
        while self._frames and size < _BATCH_BYTES:
            frame, count = self._frames.popleft()
            frames.append(frame)
            size += len(frame)
            self._queued -= count
        self._signal()
        return b"".join(frames)
