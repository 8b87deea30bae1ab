"""The in-memory twin of stdio: byte pipes and a scripted client, for tests.

``MemoryPipe`` behaves like an OS pipe: a bounded byte buffer (writers wait while it is full),
reads return what is buffered up to ``read_size`` (so tests can force lines to straddle chunks),
``b""`` once the write end is closed and drained, and ``WireClosed`` for writers once the read end
is closed (the EPIPE of the twin). ``MemoryClient`` holds the two pipes of one connection and
plays the client: ``agent_source``/``agent_sink`` go to ``Connection``, the other methods are the
client's side.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from acp_agent.errors import WireClosed
from acp_agent.transport.framing import LineReader, LineTooLong

DEFAULT_CAPACITY = 64 * 1024


class MemoryPipe:
    """A one-way byte pipe: ``write`` is a ``ByteSink``, ``read`` a ``ByteSource``."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, read_size: int = DEFAULT_CAPACITY) -> None:
        self._buf = bytearray()
        self._capacity = capacity
        self._read_size = read_size
        self._write_closed = False
        self._read_closed = False
        self._changed: anyio.Event | None = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    async def write(self, data: bytes) -> None:
        """Append all of ``data``, waiting for room; ``WireClosed`` once nobody reads."""
        with memoryview(data) as view:
            while view:
                if self._read_closed:
                    raise WireClosed("memory pipe: read end closed")
                room = self._capacity - len(self._buf)
                if room <= 0:
                    await self._wait()
                    continue
                self._buf += view[:room]
                view = view[room:]
                self._notify()

    async def read(self) -> bytes:
        """Up to ``read_size`` buffered bytes, waiting for some; ``b""`` at end of input."""
        while not self._buf:
            if self._write_closed or self._read_closed:
                return b""
            await self._wait()
        data = bytes(self._buf[: self._read_size])
        del self._buf[: self._read_size]
        self._notify()
        return data

    def close_write(self) -> None:
        """End of input for the reader, after what is buffered."""
        self._write_closed = True
        self._notify()

    def close_read(self) -> None:
        """The reader is gone: buffered bytes are dropped, writers get ``WireClosed``."""
        self._read_closed = True
        self._buf.clear()
        self._notify()

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


class MemoryClient:
    """The client's end of an in-memory connection."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, read_size: int = DEFAULT_CAPACITY) -> None:
        self.to_agent = MemoryPipe(capacity, read_size)
        self.from_agent = MemoryPipe(capacity, read_size)
        self.agent_source = self.to_agent.read
        self.agent_sink = self.from_agent.write
        self._lines = LineReader(self.from_agent.read)

    async def send_line(self, line: bytes) -> None:
        await self.to_agent.write(line + b"\n")

    async def send(self, message: object) -> None:
        await self.send_line(msgspec.json.encode(message))

    def close_input(self) -> None:
        """The agent's stdin reaches end of input."""
        self.to_agent.close_write()

    def close_output(self) -> None:
        """The agent will write no more (its owner closed stdout)."""
        self.from_agent.close_write()

    def stop_reading(self) -> None:
        """The client is gone: the agent's next write fails with ``WireClosed``."""
        self.from_agent.close_read()

    async def receive_line(self) -> bytes | None:
        """The next frame the agent wrote, without its newline; ``None`` at end of output."""
        line = await self._lines.next_line()
        assert not isinstance(line, LineTooLong)
        return line

    async def receive(self) -> Any:
        """The next frame decoded as JSON; fails at end of output."""
        line = await self.receive_line()
        assert line is not None, "the agent wrote no more frames"
        return msgspec.json.decode(line)

    async def receive_all(self) -> list[Any]:
        """Every remaining frame, decoded, up to end of output (call ``close_output`` first)."""
        frames = []
        while (line := await self.receive_line()) is not None:
            frames.append(msgspec.json.decode(line))
        return frames
