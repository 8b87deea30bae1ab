"""An incremental Server-Sent Events parser (the WHATWG ``text/event-stream`` rules).

Bytes go in as the network hands them over; complete events come out. Lines end with CRLF, LF
or CR; a line ``field: value`` sets a field (one optional space after the colon is dropped);
``data`` lines accumulate, joined by ``\\n``; a line starting with ``:`` is a comment; an empty
line dispatches the event if it has data. A CR at the very end of a chunk may be the first half
of a CRLF, so it waits for the next chunk (or ``close``). Lines are decoded as UTF-8 only once
complete, so a multi-byte character split between two chunks is never cut: CR and LF bytes
never occur inside a UTF-8 sequence. An event whose data is empty (``data:``) is dispatched,
as the standard says; the reader skips it.

Leniencies, each for a server that breaks the format (the standard ignores or drops these):

- at ``close`` an event whose lines all arrived is dispatched although its blank line never
  came (some servers end with ``data: [DONE]\n``);
- an ``error: ...`` line (llama.cpp's server writes streamed errors so) is read like a ``data``
  line of an event named ``error``;
- a line that is a bare JSON object (Ollama writes a failure mid-stream as ``{"error": ...}``
  without ``data:``) is dispatched at once as its own event, named ``raw``.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR_FIELD = "error"
RAW_EVENT = "raw"


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str = "message"


class SseParser:
    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buffer += chunk
        events: list[SseEvent] = []
        while (line := self._next_line()) is not None:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SseEvent]:
        """End of stream: an event whose lines all arrived is dispatched even without its
        closing blank line (some servers end with ``data: [DONE]\\n``); a last line without
        its terminator may be cut short, so it is dropped."""
        event = None
        if self._buffer.endswith(b"\r"):  # a lone CR ended the last line after all
            event = self._line(self._take(len(self._buffer) - 1, len(self._buffer)))
        self._buffer.clear()
        event = event or self._dispatch()
        return [] if event is None else [event]

    def _next_line(self) -> str | None:
        lf, cr = self._buffer.find(b"\n"), self._buffer.find(b"\r")
        if cr == -1 or (lf != -1 and lf < cr):
            return None if lf == -1 else self._take(lf, lf + 1)
        if cr + 1 == len(self._buffer):
            return None  # wait: the LF of a CRLF may be in the next chunk
        return self._take(cr, cr + 2 if self._buffer[cr + 1] == 0x0A else cr + 1)

    def _take(self, line_end: int, next_start: int) -> str:
        line = bytes(self._buffer[:line_end]).decode("utf-8", "replace")
        del self._buffer[:next_start]
        return line

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        if line.startswith("{"):
            return SseEvent(line, RAW_EVENT)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == ERROR_FIELD:
            self._data.append(value)
            self._event = ERROR_FIELD
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event = self._data, self._event or "message"
        self._data, self._event = [], ""
        if not data:
            return None
        return SseEvent("\n".join(data), event)
