"""Structured logging: JSON lines on stderr (or ``--log-file``), never on stdout.

stderr is written by a daemon thread fed through a bounded queue, so a client that never reads
our stderr cannot freeze the agent: when the queue is full, lines are dropped and counted (the
count is logged once the queue drains). A log file is written the same way.

Importing this module does not import structlog (about a third of the start-up's imports, with
the asyncio it pulls in): ``configure`` does, after ``initialize`` is answered
(``acp_agent/launch.py``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    import queue

LEVELS: Final = ("debug", "info", "warning", "error", "critical")


class QueuedSink:
    """A file-like object whose ``write`` never blocks the caller."""

    def __init__(self, fd: int, capacity: int = 10_000) -> None:
        import queue  # here, as structlog is: logging is set up after ``initialize`` is answered
        import threading

        self._fd = fd
        self._queue: queue.Queue[str | None] = queue.Queue(capacity)
        self._full = queue.Full
        self.dropped = 0
        self._thread = threading.Thread(target=self._drain, name="log-writer", daemon=True)
        self._thread.start()

    def write(self, text: str) -> int:
        try:
            self._queue.put_nowait(text)
        except self._full:
            self.dropped += 1
        return len(text)

    def flush(self) -> None:
        pass

    def _drain(self) -> None:
        while (text := self._queue.get()) is not None:
            data = text.encode("utf-8", "replace")
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                self.dropped += 1

    def close(self, timeout: float = 0.5) -> None:
        try:
            self._queue.put(None, timeout=timeout)
        except self._full:
            return
        self._thread.join(timeout)


_sink: QueuedSink | None = None


def configure(
    level: str = "info", log_file: str | None = None, stream: TextIO | None = None
) -> None:
    """Set up structlog once for the process. ``stream`` is for tests."""
    import logging

    import structlog

    global _sink
    if stream is None:
        fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if log_file else 2
        _sink = QueuedSink(fd)
        target: TextIO = _sink  # type: ignore[assignment]
    else:
        target = stream
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.WriteLoggerFactory(file=target),
        cache_logger_on_first_use=True,
    )


def shutdown() -> None:
    if _sink is not None:
        _sink.close()
