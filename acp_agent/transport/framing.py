"""Bytes to lines: the lowest layer of the transport.

Theory of operation
-------------------
A *byte source* is an async callable returning the next chunk of input, ``b""`` at end of input;
a *byte sink* is an async callable that writes all of a ``bytes`` or raises ``WireClosed``. These two
are the seam between the transport and the process: ``stdio.py`` implements them over file
descriptors, ``memory.py`` in memory for tests.

``LineReader`` turns a source into complete lines (without the ``\\n``; one trailing ``\\r`` is
stripped). Invariants:

- Memory is bounded: the buffer never holds more than ``max_line_bytes`` plus one chunk. A line
  that grows past the cap is not buffered; the reader *skips* the rest of it, straight from the
  incoming chunks, up to its newline and yields a ``LineTooLong`` marker in its place. The caller
  answers it and keeps serving.
- Nothing is scanned twice: the search for ``\\n`` resumes from where the previous search stopped
  (``_scanned``), so a huge line arriving in many chunks costs linear time, and consumed lines are
  cut from the front of a ``bytearray`` (amortised O(1) in CPython).
- A final line without a newline at end of input is still yielded; an empty input yields nothing.
- A UTF-8 byte order mark at the very start of the input is dropped from the first line (RFC
  8259 §8.1 lets a parser ignore it), however the chunks split it; nowhere else: a BOM starts a
  stream, so one at the start of a later line is left to the decoder (-32700, named).

The cap applies to the raw line, ``\\r`` and a leading BOM included, ``\\n`` excluded: a line of
exactly ``max_line_bytes`` bytes is accepted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

ByteSource = Callable[[], Awaitable[bytes]]
"""Returns the next chunk of input; ``b""`` means end of input (and must stay so)."""

ByteSink = Callable[[bytes], Awaitable[None]]
"""Writes all of the given bytes, in order; raises ``WireClosed`` when the peer is gone."""

BOM = b"\xef\xbb\xbf"
"""U+FEFF in UTF-8."""

MIB = 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 64 * MIB


class LineTooLong(msgspec.Struct, frozen=True):
    """Stands in for a line longer than the cap; its bytes were skipped, never buffered."""

    length: int
    """Bytes the skipped line had (without its ``\\n``)."""


class LineReader:
    """Async iterator of ``bytes`` lines and ``LineTooLong`` markers read from a ``ByteSource``."""

    def __init__(self, source: ByteSource, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._source = source
        self._max = max_line_bytes
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already searched for b"\n"
        self._skipped: int | None = None  # bytes of an over-long line skipped so far
        self._eof = False
        self._at_start = True  # nothing yielded yet: the next line is the input's first
        self.peak_buffered = 0
        """The largest size the buffer reached; tests use it to check memory stays bounded."""

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> bytes | LineTooLong:
        item = await self.next_line()
        if item is None:
            raise StopAsyncIteration
        return item

    async def next_line(self) -> bytes | LineTooLong | None:
        """The next line or marker; ``None`` once the input is exhausted."""
        while True:
            if self._skipped is None:
                line = self._take_line()
                if line is not None:
                    return self._first(line) if self._at_start else line
            if self._eof:
                rest = self._take_rest()
                return self._first(rest) if self._at_start and rest is not None else rest
            chunk = await self._source()
            if not chunk:
                self._eof = True
            elif self._skipped is not None:
                marker = self._skip(chunk)
                if marker is not None:
                    self._at_start = False
                    return marker
            else:
                self._append(chunk)

    def _first(self, line: bytes | LineTooLong) -> bytes | LineTooLong:
        """The input's first line, without a leading BOM; every later one is left as it is."""
        self._at_start = False
        return line.removeprefix(BOM) if isinstance(line, bytes) else line

    def _take_line(self) -> bytes | LineTooLong | None:
        buf = self._buf
        end = buf.find(b"\n", self._scanned)
        if end < 0:
            if len(buf) > self._max:
                self._skipped = len(buf)
                buf.clear()
            self._scanned = len(buf)
            return None
        self._scanned = 0
        if end > self._max:
            del buf[: end + 1]
            return LineTooLong(end)
        with memoryview(buf) as view:
            line = bytes(view[:end])
        del buf[: end + 1]
        return _strip_cr(line)

    def _skip(self, chunk: bytes) -> LineTooLong | None:
        assert self._skipped is not None
        end = chunk.find(b"\n")
        if end < 0:
            self._skipped += len(chunk)
            return None
        marker = LineTooLong(self._skipped + end)
        self._skipped = None
        self._append(chunk[end + 1 :])
        return marker

    def _take_rest(self) -> bytes | LineTooLong | None:
        if self._skipped is not None:
            marker = LineTooLong(self._skipped)
            self._skipped = None
            return marker
        if not self._buf:
            return None
        line = bytes(self._buf)
        self._buf.clear()
        self._scanned = 0
        return _strip_cr(line)

    def _append(self, chunk: bytes) -> None:
        self._buf += chunk
        self.peak_buffered = max(self.peak_buffered, len(self._buf))


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line
